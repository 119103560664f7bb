'use strict';
const test = require('node:test');
const assert = require('node:assert');
const calc = require('../calc');

test('adds', () => {
  assert.strictEqual(calc.add(2, 3), 5);
});

test('subtracts', () => {
  assert.strictEqual(calc.sub(5, 3), 2);
});

test('subtracts below zero', () => {
  assert.strictEqual(calc.sub(2, 5), -3);
});

test('multiplies', () => {
  assert.strictEqual(calc.mul(4, 3), 12);
});

test('means', () => {
  assert.strictEqual(calc.mean([1, 2, 3, 6]), 3);
});

test('refuses the mean of nothing', () => {
  assert.throws(() => calc.mean([]), RangeError);
});
