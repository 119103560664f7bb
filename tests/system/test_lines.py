"""Whole lines out of reads cut anywhere, and one line as text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from goal_convergence.checks.census import CensusScanner
from goal_convergence.checks.extract import FailureScanner
from goal_convergence.system.lines import MAX_LINE, LineReader, LineScanners, decode_line, decode_output
from goal_convergence.system.sieve import Keys, Sieve

SAMPLES = Path(__file__).parents[1] / "samples"


def read(data: bytes, *cuts: int, max_line: int = MAX_LINE) -> list[bytes]:
    """The blocks a reader hands on for ``data`` read in pieces cut at ``cuts``, its flush last."""
    reader = LineReader(max_line)
    blocks = [reader.feed(data[start:end]) for start, end in zip((0, *cuts), (*cuts, len(data)), strict=True)]
    return [*blocks, reader.flush()]


def lines(blocks: list[bytes]) -> list[bytes]:
    return b"".join(blocks).split(b"\n")


OUTPUTS = {
    "pytest": (SAMPLES / "pytest_fail.txt").read_bytes(),
    "jest": (SAMPLES / "jest_fail.txt").read_bytes(),  # ✕ and ● are three bytes each
    "istanbul": (SAMPLES / "jest_coverage.txt").read_bytes(),
    "no last newline": "ok\ncafé ✓ done".encode(),
    "empty lines": b"\n\na\n\n\nb\n",
}


@pytest.mark.parametrize("name", OUTPUTS)
def test_every_cut_gives_the_same_lines(name):
    data = OUTPUTS[name]
    whole = read(data)
    assert b"".join(whole) == data
    for cut in range(1, len(data)):
        blocks = read(data, cut)
        assert lines(blocks) == lines(whole), cut
        assert all(b.endswith(b"\n") for b in blocks[:-1] if b), "a block is whole lines"
    assert lines(read(data, *range(1, len(data)))) == lines(whole)
    rng = random.Random(5)
    for _ in range(100):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 30))))
        assert lines(read(data, *cuts)) == lines(whole), cuts


def test_a_line_straddling_reads_is_one_line():
    reader = LineReader()
    assert reader.feed(b"FAILED tests/te") == b""
    assert reader.feed(b"st_a.py::test_x\nE   assert") == b"FAILED tests/test_a.py::test_x\n"
    assert reader.feed(b" 0\n") == b"E   assert 0\n"
    assert reader.flush() == b""


def test_a_character_cut_in_two_reads_is_whole_again():
    data = "résumé ✕ → ok\n".encode()
    for cut in range(1, len(data)):
        assert [decode_line(line) for line in lines(read(data, cut))] == ["résumé ✕ → ok", ""], cut


def test_the_last_line_without_a_newline_comes_with_the_flush_and_the_reader_starts_again():
    reader = LineReader()
    assert reader.feed(b"a\nb") == b"a\n"
    assert reader.flush() == b"b"
    assert reader.flush() == b""
    assert reader.feed(b"c\n") == b"c\n"


def test_a_line_longer_than_the_bound_keeps_its_start_wherever_it_is_cut():
    data = b"x" * 100 + b"y" * 200 + b"\nnext\n" + b"z" * 150
    expected = [b"x" * 64, b"next", b"z" * 64]
    for cut in range(1, len(data)):
        got = lines(read(data, cut, max_line=64))
        # A line whole in one read is handed on whole; the consumers cut their lines shorter than the bound.
        assert [line[:64] for line in got] == expected, cut
    assert lines(read(data, *range(1, len(data)), max_line=64)) == expected


def test_memory_stays_bounded_without_newlines():
    reader = LineReader(max_line=1000)
    for _ in range(10_000):
        assert reader.feed(b"z" * 4096) == b""
    assert reader.feed(b"z\nafter\n") == b"z" * 1000 + b"\nafter\n"


def test_colours_progress_redraws_and_nuls_are_cleaned():
    assert decode_line(b"\x1b[31mFAILED\x1b[0m tests/test_a.py::test_x\r\n") == "FAILED tests/test_a.py::test_x"
    assert decode_line(b" 10%\r 50%\r100% done\n") == "100% done"
    assert decode_line(b"a\x00b \xff\xfe c") == "ab \ufffd\ufffd c"
    assert decode_output(b"one \x1b[1mbold\x1b[0m\r\ntwo  \n") == "one bold\ntwo\n"


def test_without_a_bound_every_line_stays_whole():
    data = b"{" + b'"k": 1, ' * 100_000 + b"}\nnext\n"
    reader = LineReader(max_line=None)
    blocks = [reader.feed(data[i : i + 4096]) for i in range(0, len(data), 4096)]
    assert b"".join(blocks) == data and reader.flush() == b""


def _scanned(data: bytes, shared: bool, cut: int) -> tuple[list[str], object]:
    failures, tests = FailureScanner(), CensusScanner()
    consumers = [LineScanners([failures, tests])] if shared else [failures, tests]
    for start in range(0, len(data), cut):
        for consumer in consumers:
            consumer.feed(data[start : start + cut])
    for consumer in consumers:
        consumer.close()
    return failures.lines, tests.result()


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.txt")))
def test_scanners_sharing_one_reader_find_what_each_finds_alone(name):
    # One reader and one search per key for all of them: the blocks and the keys' finds are shared.
    data = (SAMPLES / name).read_bytes() * 3
    for cut in (7, 4096, len(data)):
        assert _scanned(data, True, cut) == _scanned(data, False, cut)


def test_lines_decoding_rewrites_are_read_whatever_they_hold():
    keys = Keys(starts=(b"FAIL",), anywhere=("✕".encode(),))
    block = b"ok\nbar\r50%\rdone\nFAIL x\nplain\ncrlf\r\n\xe2\x9c\x95 t\nnul\x00\nesc\x1b[0m\n"
    # A CR that ends its line (CRLF) is no rewrite: that line holds no key.
    assert Sieve.of((keys,)).find(block) == [[3, 16, 35, 41, 46]]
    assert Sieve.of((keys,)).find(b"ok\nplain\r\n") == [[]]
    with pytest.raises(ValueError):
        Sieve((Keys(starts=(b"[A-Z]AIL",)),))  # the start keys share one gate: their first bytes
