"""The census keeps test ids by name up to a bound; past it, it counts them and remembers only the start's,
so the guard still names what went missing."""

from __future__ import annotations

import pytest

from goal_convergence.checks import census
from goal_convergence.guard.integrity import compare

TESTS = 40
START = {f"tests.test_m::test_{i:03d}": "passed" for i in range(TESTS)}


def output(outcomes: dict[int, str]) -> bytes:
    lines = [f"tests/test_m.py::test_{i:03d} {word}" for i, word in sorted(outcomes.items())]
    passed = sum(word == "PASSED" for word in outcomes.values())
    skipped = sum(word == "SKIPPED" for word in outcomes.values())
    tail = f"{passed} passed" + (f", {skipped} skipped" if skipped else "") + " in 1.00s"
    return ("\n".join(lines) + f"\n==== {tail} ====\n").encode()


def scan(data: bytes, expected=None):
    scanner = census.CensusScanner(expected)
    scanner.feed(data)
    scanner.close()
    return scanner.result()


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(census, "MAX_IDS", 10)


def test_ids_past_the_bound_are_counted_and_only_the_start_ones_kept(small_bound):
    asked = []
    found = scan(output(dict.fromkeys(range(TESTS), "PASSED")), lambda: asked.append(1) or {"tests.test_m::test_035"})
    assert found is not None and found.ids == TESTS and found.ran == TESTS
    assert len(found.outcomes) == 10 and asked == [1]  # asked once, at the first id past the bound
    past = census.beyond(found)
    assert past is not None and past.count == TESTS - 10
    assert past.found == {"tests.test_m::test_035": True} and not past.knows("tests.test_m::test_036")


def test_a_start_test_gone_past_the_bound_is_named_and_no_other(small_bound):
    start = scan(output(dict.fromkeys(range(TESTS), "PASSED")))
    assert start is not None
    now = dict.fromkeys(range(TESTS), "PASSED")
    del now[33]  # past the bound of ids kept by name
    now[25] = "SKIPPED"
    issues = compare(0, "pytest", start, START, scan(output(now), lambda: set(START)))
    named = {(i.kind, i.subject) for i in issues}
    assert ("test-gone", "tests.test_m::test_033") in named
    assert ("test-skipped", "tests.test_m::test_025") in named
    assert not [i for i in issues if i.kind == "test-gone" and i.subject != "tests.test_m::test_033"]


def test_without_the_start_ids_the_counts_say_it(small_bound):
    start = scan(output(dict.fromkeys(range(TESTS), "PASSED")))
    now = dict.fromkeys(range(TESTS), "PASSED")
    del now[33]
    issues = compare(0, "pytest", start, START, scan(output(now)))
    assert [(i.kind, i.subject) for i in issues] == [("fewer-tests", "pytest")]


def test_without_the_bound_nothing_changes():
    found = scan(output(dict.fromkeys(range(TESTS), "PASSED")))
    assert found is not None and len(found.outcomes) == TESTS and census.beyond(found) is None
