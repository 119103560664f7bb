"""The maker's spend, read from Claude Code's JSONL transcripts a little at a time.

Claude Code writes one transcript line per content block of an assistant message, each carrying
the same ``message.id`` and usage (a streamed message may first get a line with fewer output
tokens), so a message is counted once, with the usage of its last line. Transcripts grow to
hundreds of MB: each read starts at the byte offset the previous one stopped at, reads complete
lines only, and includes the subagent transcripts (``<session-id>/subagents/*.jsonl``).

A message whose lines straddle two reads must still count once, and the goal can keep nothing but
an integer offset per file. So a read that may be followed by another (a Stop) holds the newest
message back: it is left unread, and the returned offset points at its first line so the next read
sees all of it. Only the last read of a session (``final``) counts everything. Only the hooks'
slow path reads transcripts (a goal is bound to the session), never the fast path.

The path comes from the hook's input, so it is read defensively: only a regular file is read (a
FIFO or a device would hang the hook, a directory or a NUL in the path would abort it), and a
hook reads at most ``MAX_READ`` bytes; the rest is read at the next stop. A line longer than
``transcript_scan.MAX_LINE`` is skipped and the offset moves past it. How a file's lines become
messages is transcript_scan.py's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from operator import add
from pathlib import Path

from ...storage import cost
from . import transcript_scan as scan

MAX_READ = 512 << 20  # bytes read per call, over all the session's files


@dataclass
class Reading:
    dollars: float = 0.0
    tokens: int = 0
    model: str | None = None  # the newest model of the main transcript (subagents may use others)
    offsets: dict[str, int] = field(default_factory=dict)
    note: str | None = None  # in one line, the paths that could not be read (their spend is not counted)


@dataclass
class _File:
    start: int
    end: int = 0  # where the next read starts, before any message is held back
    complete: bool = True  # read to its end, not stopped by MAX_READ
    messages: scan.Messages = field(default_factory=scan.Messages)


def transcript_files(transcript_path: str | Path) -> list[Path]:
    """The session's transcript followed by its subagents' transcripts."""
    main = Path(transcript_path)
    try:
        return [main, *sorted((main.parent / main.stem / "subagents").glob("*.jsonl"))]
    except (OSError, ValueError):  # a NUL in the path, a parent that is not a folder
        return [main]


def sizes(transcript_path: str | Path) -> dict[str, int]:
    """The session's transcript files as they are now, by their sizes: where a goal bound now starts reading."""
    found = {}
    for path in transcript_files(transcript_path):
        try:
            info = path.stat()
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(info.st_mode):
            found[str(path)] = info.st_size
    return found


def read(transcript_path: str | Path, offsets: Mapping[str, int], *, since: datetime | None = None,
         final: bool = False) -> Reading:
    """What the session spent since ``offsets``, and the offsets to store for the next read.

    ``since`` applies to files not in ``offsets`` (a session that took a goal over, a new subagent):
    their messages from before it were not spent on the goal. A path that is not a readable regular
    file is skipped and named in ``note``.
    """
    reading, budget, bad = Reading(), MAX_READ, []
    calls: dict[object, list[tuple[list[int], ...]]] = {}  # each model's calls, tokens by kind: priced once, at the end
    for i, path in enumerate(transcript_files(transcript_path)):
        key = str(path)
        try:
            found = _read_file(path, offsets.get(key, 0), budget, None if key in offsets else since)
        except (OSError, ValueError) as e:
            bad.append(unread(key, e))
            continue
        if found is None:
            continue
        budget -= found.end - found.start
        messages = found.messages
        # A read cut short by MAX_READ is followed by another, final or not.
        held = [] if final and found.complete else messages.held()
        reading.offsets[key] = min((messages.firsts[row] for row in held), default=found.end)
        if i == 0 and messages.ids:
            reading.model = messages.models[-1]
        for row in held:  # counted by the read that reads the rest of their lines
            for column in messages.counts:
                column[row] = 0
        for model, columns in messages.by_model():
            calls.setdefault(model, []).append(columns)
    spent: dict[cost.Price, list[int]] = {}
    for model, parts in calls.items():
        price = cost.price_for(model)  # one look-up a model, not one a message
        for columns in parts:
            if price.long_context is None:
                _spend(spent, price, map(sum, columns))
            else:  # each call at the price of its own prompt's length
                for one in zip(*columns):
                    _spend(spent, cost.applies(price, one), one)
    reading.dollars = sum(cost.counts_cost(price, counts) for price, counts in spent.items())
    reading.tokens = sum(map(sum, spent.values()))
    reading.note = unread_note(bad)
    return reading


def unread(key: str, error: OSError | ValueError) -> str:
    """A transcript that could not be read, as ``unread_note`` names it."""
    return f"{key!r} ({getattr(error, 'strerror', None) or error})"


def unread_note(bad: list[str]) -> str | None:
    if not bad:
        return None
    return (f"goal-convergence: did not read the transcript {', '.join(bad)}: only a regular file is read, so the "
            "maker's spend there is not counted")


@contextmanager
def opened(path: Path) -> Iterator[tuple[int, int] | None]:
    """A descriptor of ``path`` to read, and its size; None when there is no such file, ValueError when it is
    not a regular file (a FIFO or a device would hang the hook)."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        yield fd, info.st_size
    finally:
        os.close(fd)


def _read_file(path: Path, start: int, budget: int, since: datetime | None) -> _File | None:
    with opened(path) as file:
        if file is None:
            return None
        fd, size = file
        if start > size:  # the file was replaced by a shorter one: read the new one whole
            start = 0
        found = _File(start=start, end=start)
        stop = min(size, start + max(0, budget))
        lines = scan.Scan(since, found.messages, fd)
        found.end = scan.read_lines(fd, start, stop, lines)
        lines.finish()
        found.complete = stop >= size
        if found.end == start and not found.complete and stop - start >= min(scan.MAX_LINE, MAX_READ):
            found.end = stop  # one line longer than a whole read (a sparse file's zeros): past it, not again from 0
        return found


def _spend(spent: dict[cost.Price, list[int]], price: cost.Price, counts: Iterable[int]) -> None:
    spent[price] = list(map(add, spent.get(price, (0,) * 5), counts))
