"""A block that holds nothing the other scanners' keys need is one run, not looked at line by line (sieve.py,
``Keys.needs``): a line holding what one of them needs keeps the block from being cleared."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.checks import extract
from goal_convergence.system.sieve import Keys, Sieve, holds

RUNS = Keys(runs=(b"::",), starts=(b"PASS",))
# Its second key finds lines of a run: those are its own, not the run's.
OTHER = Keys(starts=(b"FAIL",), after_word=(b"::bad",), needs=(b"\nFAIL", b"::bad"))
UNSAID = Keys(starts=(b"FAIL",), after_word=(b"::bad",))  # the same keys, their needs not said: never cleared
VERBOSE = b"tests/a.py::test_%d PASSED  [ 10%%]\n"
SAMPLES = sorted((Path(__file__).parents[1] / "samples").glob("*.txt"))


def flood(count: int, odd: dict[int, bytes]) -> bytes:
    return b"".join(odd.get(i, VERBOSE % i) for i in range(count))


def found(keys: Keys, block: bytes) -> list:
    return [(list(lines), lines.runs) if k == 0 else list(lines) for k, lines in enumerate(Sieve((RUNS, keys)).find(block))]


def test_a_block_holding_no_need_is_one_run_not_looked_at():
    block = flood(50, {})
    runs = Sieve((RUNS, OTHER)).find(block)[0]
    assert not runs.checked and runs.runs == [(0, len(block) - 1)] and not list(runs)
    assert Sieve((RUNS, UNSAID)).find(block)[0].checked


def test_a_line_holding_what_another_scanner_needs_is_found_for_it():
    for odd in ({20: b"tests/a.py::bad PASSED\n"}, {20: b"FAIL tests/a.py\n"}, {0: b"FAIL tests/a.py\n"}):
        block = flood(50, odd)
        lines = Sieve((RUNS, OTHER)).find(block)
        at = block.index(odd[next(iter(odd))])
        assert lines[0].checked and list(lines[1]) == [at]
        assert all(not start <= at <= end for start, end in lines[0].runs)
        assert found(OTHER, block) == found(UNSAID, block)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([VERBOSE % 1, b"PASSED tests/a.py::t\n", b"== 3 passed in 1s ==\n", b"FAIL x\n",
                                 b"a::bad PASSED\n", b"plain words\n", b"a::b\x1b[0m PASSED\n", b"\n"]), max_size=12))
def test_the_runner_is_told_what_it_would_be_told_line_by_line(parts):
    # Unless cleared, the lines and runs are as when no need is said; cleared, no line of the other's is missed.
    block = b"".join(parts)
    said, unsaid = Sieve((RUNS, OTHER)).find(block), Sieve((RUNS, UNSAID)).find(block)
    assert list(said[1]) == list(unsaid[1])
    if said[0].checked:
        assert (list(said[0]), said[0].runs) == (list(unsaid[0]), unsaid[0].runs)


LINES = [line for path in SAMPLES for line in path.read_bytes().split(b"\n")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(sorted({*LINES, b"  ", b"\t", b"\xc2\xa0", b"FAIL", b"E ", b"error", b"failed",
                                        b"3 ", b", ", b": ", b"x.py", b":12", b"Error", b"--> ", b"/a", b"test "})),
                min_size=1, max_size=4))
def test_the_failure_scanners_needs_hold_on_every_line_its_keys_find(parts):
    # What extract.py's keys find, each line alone: one of its needs is in the line, a newline before it.
    line = b"".join(parts).replace(b"\n", b"")
    for keys in (extract._KEYS, extract._PATHS):
        if list(Sieve((keys,)).find(line)[0]) and b"\x1b" not in line and b"\x00" not in line and b"\r" not in line:
            assert any(need in b"\n" + line for need in keys.needs), (keys.needs, line)


def test_a_member_that_needs_only_a_line_start_or_says_nothing_never_clears_a_block():
    block = flood(5, {})
    for keys in (Keys(starts=(b"x",), needs=(b"\n",)), UNSAID):
        assert Sieve((RUNS, keys)).find(block)[0].checked


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.binary(min_size=1, max_size=6))
def test_holds_says_what_in_says(block, needle):
    # memmem on the block's own bytes, NULs and a needle at either end included.
    for whole in (block, needle + block, block + needle, block[: len(block) // 2] + needle):
        assert holds(whole, needle) == (needle in whole)
