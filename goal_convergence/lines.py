"""Streamed output as lines: whole lines out of reads cut anywhere, and one line as text.

A pipe hands output over in reads that cut lines, and UTF-8 characters, at any byte. Every
consumer of streamed output (the failure, coverage and census scanners) reads it through a
``LineReader``, so a line that straddles two reads is still one line and what a consumer finds
does not depend on where the reads were cut. Lines are handed on in blocks, not one by one: a
scanner finds the few lines worth reading in a block with ``Keys`` (fast passes over the whole
block in C) and reads those lines only, so a gigabyte of ordinary output costs a few passes, not a
Python step a line.
"""

from __future__ import annotations

import re
import threading

# The longest line kept whole. Every consumer cuts its lines far shorter, so a line cut here reads
# the same as whole; memory stays bounded under output that never prints a newline.
MAX_LINE = 1 << 16

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")


class LineReader:
    """Turns reads of any size, cut anywhere, into blocks of whole lines.

    A line longer than ``max_line`` bytes keeps its first ``max_line``; the rest of it, up to its
    newline, is dropped. None keeps every line whole (a reader that counts byte offsets)."""

    def __init__(self, max_line: int | None = MAX_LINE) -> None:
        self._max = max_line
        self._carry = b""  # the unfinished last line
        self._dropping = False  # the unfinished line is already cut: drop until its newline

    def feed(self, chunk: bytes) -> bytes:
        """The lines that ``chunk`` completes, each with its newline; b"" when it completes none."""
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            self._hold(chunk)
            return b""
        start = 0
        if self._dropping:
            start, self._dropping = chunk.find(b"\n"), False
        if self._carry:
            block, self._carry = self._carry + memoryview(chunk)[start:cut], b""
        else:
            block = chunk[start:cut]
        if cut < len(chunk):
            self._hold(chunk[cut:])
        return block

    def flush(self) -> bytes:
        """The output's last line when it does not end with a newline (b"" otherwise); the reader
        is then empty, as new."""
        last, self._carry, self._dropping = self._carry, b"", False
        return last

    def _hold(self, part: bytes) -> None:
        if self._dropping:
            return
        if self._max is not None and len(part) > (room := self._max - len(self._carry)):
            part, self._dropping = part[:room], True
        self._carry += part


# Bytes that ordinary output rarely holds: a tab, "!", control bytes a decoder removes and the lead
# bytes of UTF-8 marks. One C pass over a block keeps only these (``bytes.translate``), so keys gated
# behind them cost that pass together, not a pass each.
_RARE = bytes([0, 9, 13, 27, ord("!"), *range(0xC0, 0x100)])
_COMMON = bytes(b for b in range(256) if b not in _RARE)
# Every scanner of one output is handed the same block (``LineScanners``): what one key was found to
# hold there is kept for the block, so a key two scanners share costs one pass. Per thread, because
# conditions run at once.
_found = threading.local()


def _memo(block: bytes) -> dict[object, object]:
    # Two blocks: a scanner also looks for words in the block lowercased, between the others' keys.
    kept = _found.__dict__.setdefault("blocks", [])
    for held, memo in kept:
        if held is block:
            return memo
    memo: dict[object, object] = {}
    kept[:] = [(block, memo), *kept[:1]]
    return memo


class Keys:
    """What makes a line worth reading: any of some byte strings, or a match of some byte patterns,
    anywhere in it. A pattern may begin with a newline to look at line starts only (the block's first
    line is matched as if a newline came before it)."""

    def __init__(self, literals: tuple[bytes, ...], patterns: tuple[bytes, ...] = (),
                 gated: tuple[tuple[bytes, tuple[bytes, ...]], ...] = ()) -> None:
        # Each pass costs about a plain read of the block: keys that share a rare byte (the first of
        # a UTF-8 mark) are looked for only in a block that holds it, a rare byte alone is its own gate.
        rare = tuple((key, (key,)) for key in literals if len(key) == 1 and key in _RARE)
        self._literals = tuple(key for key in literals if not (len(key) == 1 and key in _RARE))
        self._patterns = [re.compile(p) for p in patterns]
        self._gated = rare + gated
        if any(len(gate) != 1 or gate not in _RARE for gate, _ in self._gated):
            raise ValueError("a gate is one rare byte: a tab, \"!\", a control byte or a UTF-8 lead byte")

    def starts(self, block: bytes) -> list[int]:
        """Where the lines of ``block`` that hold a key start, in order."""
        memo = _memo(block)
        found: set[int] = set()
        if self._gated:
            if (rare := memo.get(_RARE)) is None:
                rare = memo[_RARE] = block.translate(None, _COMMON)
            for key in (key for gate, keys in self._gated if gate in rare for key in keys):  # type: ignore
                found.update(_at(memo, key, lambda key=key: _literal(block, key)))
        for key in self._literals:
            found.update(_at(memo, key, lambda key=key: _literal(block, key)))
        for pattern in self._patterns:
            found.update(_at(memo, pattern, lambda pattern=pattern: _pattern(block, pattern)))
        return sorted(found)


def _at(memo: dict[object, object], key: object, find) -> list[int]:  # type: ignore[no-untyped-def]
    if (starts := memo.get(key)) is None:
        starts = memo[key] = find()
    return starts  # type: ignore[return-value]


def _literal(block: bytes, key: bytes) -> list[int]:
    starts = []
    at = block.find(key)
    while at >= 0:
        starts.append(block.rfind(b"\n", 0, at) + 1)
        end = block.find(b"\n", at)  # the rest of this line is read anyway
        at = block.find(key, end) if end >= 0 else -1
    return starts


def _pattern(block: bytes, pattern: re.Pattern[bytes]) -> list[int]:
    starts = [block.rfind(b"\n", 0, m.end() - 1) + 1 for m in pattern.finditer(block)]
    if pattern.match(b"\n" + block[: line_end(block, 0)]):
        starts.append(0)
    return starts


def line_end(block: bytes, start: int) -> int:
    """Where the line that starts at ``start`` ends: its newline, or the block's end."""
    end = block.find(b"\n", start)
    return len(block) if end < 0 else end


class LineScanner:
    """A consumer of streamed output that reads it as blocks of whole lines: ``feed`` it reads cut
    anywhere, ``close`` it when the output ends; it implements ``_scan``."""

    def __init__(self) -> None:
        self._reader = LineReader()

    def feed(self, chunk: bytes) -> None:
        self._scan(self._reader.feed(chunk))

    def close(self) -> None:
        """The output has ended: read its last line if it had no newline."""
        self._scan(self._reader.flush())

    def _scan(self, block: bytes) -> None:
        """Read a block of whole lines (the last may lack its newline at the end of the output)."""
        raise NotImplementedError


class LineScanners(LineScanner):
    """Several scanners of one output fed through one reader: each block is cut once, and the keys
    they share are looked for once (``Keys``)."""

    def __init__(self, scanners: list[LineScanner]) -> None:
        super().__init__()
        self._scanners = scanners

    def _scan(self, block: bytes) -> None:
        for scanner in self._scanners:
            scanner._scan(block)


def decode_line(raw: bytes) -> str:
    """One output line as text: invalid UTF-8 replaced, NULs, colours and progress redraws gone."""
    text = raw.decode("utf-8", "replace").replace("\x00", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = text.rstrip("\r\n")
    # A progress bar redraws its line with \r: what a terminal would show is the last frame.
    if "\r" in text:
        frames = [f for f in text.split("\r") if f.strip()]
        text = frames[-1] if frames else ""
    return text.rstrip()


def decode_output(raw: bytes) -> str:
    """A stretch of output as text, line by line as ``decode_line`` reads it."""
    return "\n".join(decode_line(line) for line in raw.split(b"\n"))
