"""Streamed output as lines: whole lines out of reads cut anywhere, and one line as text.

A pipe hands output over in reads that cut lines, and UTF-8 characters, at any byte. Every
consumer of streamed output (the failure, coverage and census scanners) reads it through a
``LineReader``, so a line that straddles two reads is still one line and what a consumer finds
does not depend on where the reads were cut. Scanners take lines in blocks, not one by one (a
condition's output in blocks of half a megabyte or more, ``LineScanners``): the ``Sieve`` of their keys
finds the few lines worth reading in a block with a few passes in C (sieve.py), and they read those
lines only.
"""

from __future__ import annotations

import re

from .sieve import Keys, Sieve

# The longest line kept whole. Every consumer cuts its lines far shorter, so a line cut here reads
# the same as whole; memory stays bounded under output that never prints a newline.
MAX_LINE = 1 << 16
# The least a block of LineScanners holds (but the last): a pipe's read of a megabyte, less the line it cuts,
# goes on alone, not joined to the next one.
BLOCK = 1 << 19

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")


class LineReader:
    """Turns reads of any size, cut anywhere, into blocks of whole lines.

    A line longer than ``max_line`` bytes keeps its first ``max_line``; the rest of it, up to its
    newline, is dropped. None keeps every line whole (a reader that counts byte offsets). Whole lines
    are held back until they make ``min_block`` bytes or more, or the output ends."""

    def __init__(self, max_line: int | None = MAX_LINE, min_block: int = 0) -> None:
        self._max, self._min = max_line, min_block
        self._carry = b""  # the unfinished last line
        self._dropping = False  # the unfinished line is already cut: drop until its newline
        self._held: list[bytes] = []  # whole lines not handed on yet (min_block)
        self._held_bytes = 0

    def feed(self, chunk: bytes) -> bytes:
        """The lines that ``chunk`` completes, each with its newline, after those held back; b"" while
        there are none to hand on."""
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
        if self._min:
            self._held.append(block)
            self._held_bytes += len(block)
            if self._held_bytes < self._min:
                return b""
            block = self._held[0] if len(self._held) == 1 else b"".join(self._held)
            self._held, self._held_bytes = [], 0
        return block

    def flush(self) -> bytes:
        """The lines held back and the output's last line, which may not end with a newline (b"" when
        there is nothing); the reader is then empty, as new."""
        last = b"".join([*self._held, self._carry])
        self._carry, self._dropping, self._held, self._held_bytes = b"", False, [], 0
        return last

    def _hold(self, part: bytes) -> None:
        if self._dropping:
            return
        if self._max is not None and len(part) > (room := self._max - len(self._carry)):
            part, self._dropping = part[:room], True
        self._carry += part


class LineScanner:
    """A consumer of streamed output that reads it as blocks of whole lines: ``feed`` it reads cut
    anywhere, ``close`` it when the output ends; it implements ``_scan``, which is handed, for each
    of its ``keys``, the starts of the lines of the block they find."""

    def __init__(self, keys: tuple[Keys, ...] = (), *, min_block: int = 0) -> None:
        self.keys = keys
        self._sieve = Sieve.of(keys)
        self._reader = LineReader(min_block=min_block)

    def feed(self, chunk: bytes) -> None:
        if block := self._reader.feed(chunk):
            self._scan(block, self._sieve.find(block))

    def close(self) -> None:
        """The output has ended: read its last line if it had no newline."""
        if block := self._reader.flush():
            self._scan(block, self._sieve.find(block))

    def _scan(self, block: bytes, found: list[list[int]]) -> None:
        """Read a block of whole lines (the last may lack its newline at the end of the output)."""
        raise NotImplementedError


class LineScanners(LineScanner):
    """Several scanners of one output fed through one reader: each block is cut once, and searched
    once for the keys of them all. Blocks are of ``BLOCK`` bytes or more, so that what a block costs
    (a few passes in C, a few Python steps) stays small beside what its bytes cost, however small the
    reads come: what the scanners found is whole once the output is closed."""

    def __init__(self, scanners: list[LineScanner]) -> None:
        super().__init__(tuple(keys for scanner in scanners for keys in scanner.keys), min_block=BLOCK)
        self._scanners = scanners

    def _scan(self, block: bytes, found: list[list[int]]) -> None:
        for scanner in self._scanners:
            scanner._scan(block, found[: len(scanner.keys)])
            found = found[len(scanner.keys) :]


def line_end(block: bytes, start: int) -> int:
    """Where the line that starts at ``start`` ends: its newline, or the block's end."""
    end = block.find(b"\n", start)
    return len(block) if end < 0 else end


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
