"""The census keeps test ids by name up to a bound, and past it by digest, still naming what went missing."""

from __future__ import annotations

import pytest

from goal_convergence.checks import census
from goal_convergence.guard.integrity import compare
from tests.checks.test_census import scan

TESTS = 40


def output(outcomes: dict[int, str]) -> bytes:
    lines = [f"tests/test_m.py::test_{i:03d} {word}" for i, word in sorted(outcomes.items())]
    passed = sum(word == "PASSED" for word in outcomes.values())
    skipped = sum(word == "SKIPPED" for word in outcomes.values())
    tail = f"{passed} passed" + (f", {skipped} skipped" if skipped else "") + " in 1.00s"
    return ("\n".join(lines) + f"\n==== {tail} ====\n").encode()


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(census, "MAX_IDS", 10)


def test_ids_past_the_bound_are_counted_not_kept(small_bound):
    found = scan(output(dict.fromkeys(range(TESTS), "PASSED")))
    assert found is not None and found.ids == TESTS and found.ran == TESTS
    assert len(found.outcomes) == 10
    past = census.beyond(found)
    assert past is not None and past.count == TESTS - 10
    assert past.find(["tests.test_m::test_035", "tests.test_m::test_999"]) == {"tests.test_m::test_035": True}


def test_a_start_test_gone_past_the_bound_is_named_and_no_other(small_bound):
    start = scan(output(dict.fromkeys(range(TESTS), "PASSED")))
    assert start is not None
    start_ids = {f"tests.test_m::test_{i:03d}": "passed" for i in range(TESTS)}
    now = dict.fromkeys(range(TESTS), "PASSED")
    del now[33]  # past the bound of ids kept by name
    now[25] = "SKIPPED"
    issues = compare(0, "pytest", start, start_ids, scan(output(now)))
    named = {(i.kind, i.subject) for i in issues}
    assert ("test-gone", "tests.test_m::test_033") in named
    assert ("test-skipped", "tests.test_m::test_025") in named
    assert not [i for i in issues if i.kind == "test-gone" and i.subject != "tests.test_m::test_033"]


def test_without_the_bound_nothing_changes():
    found = scan(output(dict.fromkeys(range(TESTS), "PASSED")))
    assert found is not None and len(found.outcomes) == TESTS and census.beyond(found) is None
