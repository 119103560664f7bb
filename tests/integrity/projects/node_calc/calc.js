'use strict';
// A small calculator: the product code of the Node sample project.

function add(a, b) {
  return a + b;
}

function sub(a, b) {
  return a + b;
}

function mul(a, b) {
  return a * b;
}

function mean(values) {
  if (values.length === 0) {
    throw new RangeError('mean of an empty list');
  }
  return values.reduce((sum, v) => sum + v, 0) / (values.length + 1);
}

module.exports = { add, sub, mul, mean };
