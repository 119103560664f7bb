"""A flood of verbose pytest lines past the bound of ids kept by name is read in runs (checks/flood.py): the
census says what reading every line alone says, wherever the reads cut the lines."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.checks import census
from goal_convergence.checks.census import CensusScanner
from goal_convergence.checks.extract import FailureScanner
from goal_convergence.guard.integrity import compare
from goal_convergence.models import Census
from goal_convergence.system import lines
from goal_convergence.system.lines import LineScanners
from goal_convergence.system.sieve import Keys, Sieve

BOUND = 20
OUTCOMES = ["PASSED"] * 6 + ["SKIPPED", "FAILED", "XFAIL", "ERROR"]
# Lines among the verbose ones: pytest's others, a compiler's finding that holds "::", colours, addresses.
OTHERS = [b"tests/a.py::test_a", b"FAILED tests/m.py::test_003 - assert 1", b"PASSED tests/m.py::test_004",
          b"src/a.py::12: error: bad", b"2026-11-30 10:00:01 INFO job 3 done", b"tests/m.py::test_005 \x1b[32mPASSED",
          b"tests/m.py::test_x[<object at 0x7f3a>] PASSED", b"tests/m.py::test_006 PASSED\r", b"tests/m.py:: PASSED",
          b"tests/m.py::test_007 PASSEDX", b"tests/caf\xc3\xa9.py::test_008 PASSED", b"tests/m.py::test_009\tPASSED"]


def some_id(rng: random.Random) -> str:
    # Some ids repeat, and some names are the same across files and classes.
    cls = rng.choice(["", "TestA::", "TestB::"])
    name = f"test_{rng.randint(0, 30):03d}" if rng.random() < 0.2 else f"test_{rng.randint(0, 3000):04d}"
    return f"tests/m{rng.randint(0, 2)}.py::{cls}{name}" + rng.choice(["", "", "[x:y]", "[1]"])


def flood(rng: random.Random, lines: int) -> bytes:
    out = []
    for i in range(lines):
        if rng.random() < 0.08:
            out.append(rng.choice(OTHERS))
        else:
            tail = rng.choice(["", "  [ 42%]", " (flaky)"])
            out.append(f"{some_id(rng)} {rng.choice(OUTCOMES)}{tail}".encode())
    out.append(b"==== 1 passed in 1.00s ====")  # fewer than named: the ids are kept (census._census)
    return b"\n".join(out) + b"\n"


def scan(data: bytes, cuts: list[int], every_line: bool, expected, monkeypatch) -> Census | None:
    with monkeypatch.context() as m:
        m.setattr(census, "MAX_IDS", BOUND)
        m.setattr(lines, "BLOCK", 512)  # runs cut by blocks too
        # Past the bound a line is counted each time it comes; reading every line alone skips one read before.
        m.setattr(census, "_MAX_MEMO", 0)
        if every_line:  # the reference: every line read alone, as before the sieve handed over runs
            m.setattr(Sieve, "find", lambda self, block: [[0, *(i + 1 for i, b in enumerate(block[:-1]) if b == 10)]]
                      * len(self._alone))
        tests = CensusScanner(None if expected is None else lambda: expected)
        shared = LineScanners([tests, FailureScanner()])
        for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            shared.feed(data[start:end])
        shared.close()
        return tests.result()


def said(found: Census | None, start: Census, start_ids: dict[str, str]) -> object:
    if found is None:
        return None
    past = census.beyond(found)
    issues = sorted((i.kind, i.subject) for i in compare(0, "pytest", start, start_ids, found))
    return (found.summary, found.ids, found.outcomes, past and (past.count, past.ran, past.found), issues)


def start_of(rng: random.Random, data: bytes) -> tuple[Census, dict[str, str]]:
    # Ids of the output's, some of them past the bound, and some it does not print.
    printed = [census._pytest_id(line.split(b" ")[0].decode(errors="replace")) for line in data.split(b"\n")]
    ids = dict.fromkeys([*rng.sample(printed, min(len(printed), 30)), *(census._pytest_id(some_id(rng))
                                                                         for _ in range(10))], "passed")
    return Census(runner="pytest", ran=len(ids), passed=len(ids), ids=len(ids)), ids


@pytest.mark.parametrize("seed", range(40))
def test_a_flood_read_in_runs_says_what_reading_every_line_says(seed, monkeypatch):
    rng = random.Random(seed)
    data = flood(rng, rng.randint(1, 400))
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 30))))
    start, ids = start_of(rng, data)
    expected = set(ids) if rng.random() < 0.8 else None
    assert said(scan(data, cuts, False, expected, monkeypatch), start, ids) == \
        said(scan(data, cuts, True, expected, monkeypatch), start, ids)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10_000), max_size=40), st.integers(0, 2**32 - 1))
def test_a_line_cut_across_two_reads_is_read_once_and_whole(cuts, seed):
    rng = random.Random(seed)
    data = flood(rng, 300)
    cuts = sorted({c % len(data) for c in cuts} - {0})
    start, ids = start_of(rng, data)
    with pytest.MonkeyPatch.context() as m:
        whole = said(scan(data, [], False, set(ids), m), start, ids)
        assert said(scan(data, cuts, False, set(ids), m), start, ids) == whole


def test_a_start_test_gone_past_the_bound_is_named_from_a_run(monkeypatch):
    lines = [f"tests/m.py::test_{i:04d} PASSED  [{i // 5:3d}%]" for i in range(500) if i != 333]
    data = ("\n".join(lines) + "\n=== 499 passed in 1.00s ===\n").encode()
    start_ids = {f"tests.m::test_{i:04d}": "passed" for i in [*range(0, 500, 7), 333]}
    start = Census(runner="pytest", ran=500, passed=500, ids=500)
    found = scan(data, [len(data) // 3], False, set(start_ids), monkeypatch)
    assert found is not None and found.ids == 499 and len(found.outcomes) == BOUND
    issues = compare(0, "pytest", start, start_ids, found)
    assert [(i.kind, i.subject) for i in issues] == [("test-gone", "tests.m::test_0333"), ("fewer-tests", "pytest")]


def test_a_kept_test_that_fails_past_the_bound_is_failed(monkeypatch):
    lines = [f"tests/m.py::test_{i:04d} PASSED" for i in range(300)] + ["tests/m.py::test_0003 FAILED"]
    data = ("\n".join(lines) + "\n=== 1 failed, 300 passed in 1.00s ===\n").encode()
    found = scan(data, [], False, None, monkeypatch)
    assert found is not None and found.outcomes["tests.m::test_0003"] == "failed"


def test_the_sieve_hands_a_run_over_whole_and_the_lines_of_others_alone():
    runs, other = Keys(after_word=(b"::",), runs=(b"::",)), Keys(starts=(b"FAILED",), after_word=(b":[0-9]",))
    block = b"a.py::t PASSED\nb.py::u PASSED\nFAILED c.py::v\nd.py::w PASSED\ne.py:12: boom\nf.py::x PASSED"
    found = Sieve((runs, other)).find(block)
    starts = [0, *(i + 1 for i, b in enumerate(block) if b == 10)]
    assert found[0].runs == [(0, starts[2] - 1), (starts[3], starts[4] - 1), (starts[5], len(block))]
    assert found[1] == [starts[2], starts[4]]
    assert starts[0] not in found[0] and starts[3] not in found[0]  # in a run, not listed one by one


def test_one_member_of_a_sieve_takes_runs():
    with pytest.raises(ValueError, match="one member"):
        Sieve((Keys(runs=(b"::",)), Keys(runs=(b"::",))))
