"""The lines the scanners read, found in whole blocks: the same findings as reading every line."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from goal_convergence.checks import census as census_mod
from goal_convergence.checks import extract as extract_mod
from goal_convergence.checks.census import CensusScanner
from goal_convergence.checks.coverage import CoverageLines, parse_coverage
from goal_convergence.checks.extract import FailureScanner
from goal_convergence.system import mask
from goal_convergence.system.lines import BLOCK, LineScanners
from goal_convergence.system.process import Capture
from goal_convergence.system.sieve import WHITESPACE, Keys, Sieve

SAMPLES = sorted((Path(__file__).parents[1] / "samples").glob("*.txt"))
LINES = [line for path in SAMPLES for line in path.read_bytes().split(b"\n")]
# Lines that look like the runners' in part, or in passing.
NOISE = [b"2026-11-30 10:00:01,123 INFO app: job 12 finished: 0 failed, 3 done", b"/home/x/a.py:12: Warning: old",
         b"  now = utcnow()", b"INFO:root:ValueError: nothing", b"12:00:01 error: x", b"[2026-11-30] FAILED maybe",
         b"tests/a.py::test_b PASSED  [ 10%]", b"   3 failed, 2 passed in 0.1s", b"== 2 passed in 1.0s ==",
         b"C:\\x\\a.py:1:2: E501 long", b"src/a b.ts(3,5): error TS2322: bad", b"a.ts:1:2 - error TS1: x",
         b"    raise KeyError: 'x'", b"foo.BarError: boom", b"test_x (mod.Case) ... ok", b"--- FAIL: TestX (0.1s)",
         b"ok  \tpkg\t0.1s", b"\t1:2  error  no-undef  x", b"/src/eslint.js", b"panic: boom", b"\xe2\x9c\x93 a > b 3ms"]
SPACES = ["", " ", "  ", "\t", "\u00a0", "\u3000", "\x1c", "\u2003 ", " \u00a0", "\x85"]


def mutated(rng: random.Random, line: bytes) -> bytes:
    """A line as some terminal or runner might have printed it: other whitespace, colours, a progress
    redraw, a NUL, bytes that are not UTF-8, cut short, or after a mark."""
    r = rng.random()
    if r < 0.1:
        return rng.choice(SPACES).encode() + line
    if r < 0.15:
        return line.replace(b" ", rng.choice([b"\t", b"\xc2\xa0", b"  "]), 1)
    if r < 0.2:
        return b"\x1b[31m" + line + b"\x1b[0m"
    if r < 0.23:
        return line + b"\r"
    if r < 0.25:
        return b"50%\r" + line
    if r < 0.27:
        return line[: rng.randint(0, len(line))]
    if r < 0.29:
        return line.replace(b"a", b"\xff", 1)
    if r < 0.31:
        return line.replace(b"E", b"\x00E", 1)
    if r < 0.33:
        return rng.choice([b"==", b"/", b"12 ", b"\xe2\x9c\x93 ", b"!", b"- "]) + line
    return line


def findings(data: bytes, cuts: list[int], every_line: bool, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    with monkeypatch.context() as m:
        if every_line:  # the reference: every line read, as before there were keys
            m.setattr(Sieve, "find", lambda self, block: [[0, *(i + 1 for i, b in enumerate(block[:-1]) if b == 10)]]
                      * len(self._alone))
        tests, coverage, failures = CensusScanner(), CoverageLines(), FailureScanner()
        shared = LineScanners([tests, coverage, failures])
        for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            shared.feed(data[start:end])
        shared.close()
    result = tests.result()
    return [failures.lines, result and (result.summary, result.outcomes), parse_coverage(coverage.text())]


@pytest.mark.parametrize("seed", range(60))
def test_the_keys_find_what_reading_every_line_finds(seed, monkeypatch):
    rng = random.Random(seed)
    data = b"\n".join(mutated(rng, rng.choice(rng.choice([LINES, NOISE]))) for _ in range(rng.randint(1, 300)))
    data += b"\n" if rng.random() < 0.5 else b""
    data = data.replace(b"\n", b"\r\n") if rng.random() < 0.2 else data
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 20)))) if len(data) > 1 else []
    assert findings(data, cuts, False, monkeypatch) == findings(data, cuts, True, monkeypatch)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_each_sample_gives_what_reading_every_line_gives(path, monkeypatch):
    data = path.read_bytes()
    assert findings(data, [], False, monkeypatch) == findings(data, [], True, monkeypatch)


def test_whitespace_is_exactly_what_text_calls_whitespace():
    pattern = re.compile(WHITESPACE + b"\\Z")
    for code in range(0x110000):
        c = chr(code)
        if 0xD800 <= code < 0xE000 or c in "\n\r":
            continue
        assert bool(pattern.match(c.encode())) == c.isspace(), hex(code)


def test_one_regex_for_all_scanners_gives_each_its_own_lines():
    ids, heads = Keys(after_word=(b"::",)), Keys(starts=(b"/",))
    block = b"tests/a.py::t PASSED\n/src/a.js\n2026 plain\n/b::c\n"
    assert Sieve((ids, heads)).find(block) == [[0, 42], [21, 42]]  # "/b::c" is found by both
    assert Sieve((heads, ids)).find(block) == [[21, 42], [0, 42]]


def test_a_key_after_a_name_is_not_tried_after_a_time_or_a_count():
    lines = [b"2026-11-30 (x) ... ok", b"test_x (m.Case) ... ok", b"12 (y)", b"_y (z)", b"\xc3\xa9t\xc3\xa9 (m.C) ... ok"]
    block = b"\n".join(lines) + b"\n"
    starts = [block.index(line) for line in lines]
    by_name, by_word = Sieve((Keys(after_name=(rb" \(",)), Keys(after_word=(rb" \(",)))).find(block)
    assert by_name == [starts[1], starts[3], starts[4]]
    assert by_word == starts
    # What the key leaves out, the census rule it stands for never counted: a method's name is no number.
    assert CensusScanner()._line("2026 (m.Case) ... ok") and not CensusScanner()._ids
    tests = CensusScanner()
    tests._line("\u00e9t\u00e9 (m.Case) ... ok")
    assert tests._ids == {"unittest": {"m.Case.\u00e9t\u00e9": 1}}


def test_log_lines_no_key_can_find_are_walked_over_and_the_lines_among_them_found():
    # Each a digit-led line some key finds: a count, a first word before a colon, one before a space.
    keyed = [b"3 failed, 2 passed in 0.1s", b"2026-11-30.py:3: error: bad", b"12:00:01 error: x", b"1a (m.C) ... ok"]
    log = b"2026-11-30 10:00:01,123 INFO app: job 12 finished: 0 failed, 3 done\n"
    for word in (Keys(counted=(b"failed",), after_word=(b":", rb" \(")), Keys(counted=(b"failed",), after_word=(b":",))):
        lines = [line for key in keyed for line in [log] * 500 + [key + b"\n"]] + [log] * 500 + [keyed[0]]
        block = b"".join(lines)
        starts = [sum(map(len, lines[:i])) for i, line in enumerate(lines) if line.rstrip(b"\n") in keyed]
        alone = re.compile(_body_of(word))
        every = [i for i in [0, *(i + 1 for i, b in enumerate(block[:-1]) if b == 10)] if alone.match(block, i)]
        assert Sieve((word,)).find(block) == [every]
        assert every == (starts if word.after_word[1:] else starts[:3] + starts[4:])


def _body_of(keys: Keys) -> bytes:
    return Sieve((keys,))._alone[0].pattern


# ---- where reads and blocks are cut -------------------------------------------------------------

FILLER = b"2026-11-30 10:00:00,000 INFO app.worker: processed batch 7 in 12 ms after a connection error\n"


def shared_scan(*reads: bytes) -> tuple[FailureScanner, CensusScanner]:
    failures, tests = FailureScanner(), CensusScanner()
    capture = Capture([LineScanners([tests, failures])])
    for read in reads:
        capture.feed(read)
    capture.close()
    return failures, tests


def test_a_key_cut_across_two_reads_at_a_block_boundary():
    filler = FILLER * (BLOCK // len(FILLER) + 1)
    for cut in range(1, len(b"FAILED")):
        failures, tests = shared_scan(filler + b"FAILED"[:cut], b"FAILED"[cut:] + b" tests/a.py::test_x - boom\n",
                                      b"tests/b.py::test_y PASSED\n=== 1 failed, 1 passed in 0.1s ===\n")
        assert failures.lines[0] == "FAILED tests/a.py::test_x - boom", cut
        assert tests.result().summary == "pytest: 2 ran (1 passed, 1 failed)"


def test_a_line_longer_than_a_read_and_a_block():
    long = b"x" * (3 * BLOCK)
    reads = [FILLER, long[: BLOCK // 2], long[BLOCK // 2 :] + b"\nFAIL", b"ED tests/a.py::t - e\n", FILLER]
    failures, _ = shared_scan(*reads)
    assert failures.lines == ["FAILED tests/a.py::t - e"]


def test_crlf_output_gives_the_same_findings_and_is_not_read_line_by_line(monkeypatch):
    data = (Path(__file__).parents[1] / "samples" / "pytest_fail.txt").read_bytes()
    lf, _ = shared_scan(data)
    crlf, tests = shared_scan(data.replace(b"\n", b"\r\n"))
    assert crlf.lines == lf.lines and tests.result().ran
    seen: list[bytes] = []
    for mod in (extract_mod, census_mod):
        monkeypatch.setattr(mod, "decode_line", lambda raw, real=mod.decode_line: (seen.append(raw), real(raw))[1])
    shared_scan((FILLER * 20_000).replace(b"\n", b"\r\n"))
    assert len(seen) <= 2  # generic words, until the bound; not every line for its CR


def test_the_last_line_without_a_newline_counts():
    failures, tests = shared_scan(FILLER * 3, b"FAILED tests/a.py::t - e\n=== 1 failed in 0.1s ===")
    assert failures.lines == ["FAILED tests/a.py::t - e", "=== 1 failed in 0.1s ==="]
    assert tests.result().failed == 1


def test_a_secret_cut_across_reads_is_masked_in_the_evidence():
    secret = "sk-ant-api03-" + "Q" * 40
    line = f"FAILED tests/a.py::test_key - AssertionError: key {secret} rejected\n".encode()
    at = line.index(b"Q" * 10)
    failures, _ = shared_scan(FILLER * 20_000, line[:at], line[at:])
    masked = mask.data(failures.lines)
    assert failures.lines[0].endswith(f"{secret} rejected") and secret not in str(masked)
    assert "[masked anthropic key]" in masked[0]
