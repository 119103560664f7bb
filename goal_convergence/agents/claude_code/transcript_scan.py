"""The messages of one transcript file's lines: the meter's inner loop (transcript.py reads the files).

The file is mapped (``mmap``), ``WINDOW`` bytes at a time, not read: the lines are found and compared
where the page cache holds them, never copied, which is most of what a plain read would cost. The one
thing a read survives and a map does not is the file cut short in place while it is mapped (the
process gets SIGBUS): Claude Code only appends to a transcript, and one replaced by another file
(a new inode) is read from the old mapping unharmed. A line longer than ``MAX_LINE`` (no assistant
message is: its output is capped far below; a sparse file's zeros or a huge tool result may be) is
skipped, so every read is linear, and a read that starts inside a line skips to its end.

Nearly every line is of Claude Code's own layout and is told by comparing bytes: its head after the
parentUuid is the session's fields as last seen (``transcript_line.PREFIX``, learnt again where they
change) and then a user's type, skipped, or an assistant's message (``HEAD``), which begins a run of
its message's lines; the lines whose head is the same bytes are the run's. The parentUuid (a UUID) is
as long as the one before, so those bytes are compared from where its closing quote was, and the
quote is searched for only when they differ. A quote there that ends a string after a shorter
parentUuid, not the parentUuid itself, changes nothing: the fields compared come later in the line,
and json.loads lets a later field stand over an earlier one (an escaped quote there is a line that is
not JSON, which the search for the quote compares alike). A message is counted with
the usage of the newest line of its run that holds a ``"usage"``, and a message whose lines come
apart (its id in two runs) keeps its first offset and takes the newer usage. The run's lines are not
searched for a usage as they go by, since Claude Code writes one in every line: the newest is
checked when the run ends, and only when it holds none are the run's lines read again
(``Scan.billing_line``). Ended runs wait in ``ended`` and are counted ``BATCH`` at a time, their
usage and timestamps read from their newest lines' tails all at once (``transcript_line.billed``)
into ``Messages``, a column a field. A line of any other shape, or a run whose tail is not Claude
Code's, is read by ``transcript_line.may_count`` and ``message``, as ``json.loads`` of every line
would read it, its run told by ``transcript_line.message_id``; such a line that holds no ``"usage"``
bills nothing, so it neither joins nor ends a run.
"""

from __future__ import annotations

import mmap
import os
import re
from datetime import UTC, datetime, timedelta
from itertools import compress, repeat
from operator import eq, ge

from ...storage import cost
from . import transcript_line as lines

WINDOW = 64 << 20  # bytes mapped at a time; a window starts at a line, so any line up to MAX_LINE fits in one
MAX_LINE = 16 << 20
# Runs counted together: enough that a batch's fixed cost is nothing a message, few enough that their
# records are still in the CPU's cache when counted (a window's worth has been evicted by its 64 MB).
BATCH = 256
_PARENT = b'{"parentUuid":"'


def read_lines(fd: int, start: int, stop: int, scan: Scan) -> int:
    """Hands ``scan`` the newline-terminated lines between ``start`` and ``stop``, as spans of the file
    mapped ``WINDOW`` bytes at a time (a line is never copied, and a window starts at the first line
    the previous one left unfinished). Returns where the next read starts: the unfinished last line's
    start (Claude Code may still be writing it), or past it once it is longer than ``MAX_LINE``."""
    # A start inside a line (the previous read stopped in an over-long one): skip to its end.
    at = _past_line(fd, start, stop) if start > 0 and os.pread(fd, 1, start - 1) != b"\n" else start
    while at < stop:
        base = at - at % mmap.ALLOCATIONGRANULARITY
        end = min(base + WINDOW, stop)
        view = _window(fd, base, end)
        cut = view.rfind(b"\n", at - base) + 1
        if cut:
            scan.lines(view, at - base, cut, base)
            at = base + cut
        if end == stop:
            break
        if not cut:  # a line longer than a window
            at = _past_line(fd, at, stop)
    return stop if stop - at > MAX_LINE else at


def _window(fd: int, start: int, end: int) -> mmap.mmap | bytes:
    """The file's bytes from ``start`` (a multiple of the page size) to ``end``: mapped, or read where
    the file system cannot map them (they are searched and sliced alike)."""
    try:
        return mmap.mmap(fd, end - start, access=mmap.ACCESS_READ, offset=start)
    except OSError:
        return os.pread(fd, end - start, start)


def _past_line(fd: int, at: int, stop: int) -> int:
    """The offset after the newline that ends the line ``at`` is in, or ``stop``."""
    while at < stop:
        base = at - at % mmap.ALLOCATIONGRANULARITY
        end = min(base + WINDOW, stop)
        found = _window(fd, base, end).find(b"\n", at - base)
        if found >= 0:
            return base + found + 1
        at = end
    return stop


class Messages:
    """The messages counted in one file, in the order their runs ended, a column a field: each one's
    id, the offsets of its first and its newest line, its model and its usage counts
    (``cost.usage_counts``, a column each). Columns, not a record a message: a batch of runs becomes
    rows by ``list.extend``, without a Python step each, and is summed the same way. A message counted
    again (its lines apart from each other) keeps its first offset and takes the newer usage: its
    older row is emptied (no id, no counts, no newest line)."""

    def __init__(self) -> None:
        self.ids: list[object] = []
        self.firsts: list[int] = []
        self.lasts: list[int] = []
        self.models: list[object] = []
        self.counts: tuple[list[int], ...] = ([], [], [], [], [])
        self.seen: set[object] = set()

    def add_many(self, ids: list[str], firsts: tuple[int, ...], lasts: tuple[int, ...], models: list[str],
                 counts: tuple[list[int], ...]) -> bool:
        """Rows for messages not counted before; False, and nothing added, when one of them was."""
        if not self.seen.isdisjoint(ids) or len(set(ids)) != len(ids):
            return False
        self.seen.update(ids)
        self.ids += ids
        self.firsts += firsts
        self.lasts += lasts
        self.models += models
        for column, more in zip(self.counts, counts):
            column += more
        return True

    def add(self, mid: object, first: int, last: int, model: object, counts: tuple[int, ...]) -> None:
        if mid in self.seen:
            row = self.ids.index(mid)
            first, self.ids[row], self.lasts[row] = self.firsts[row], None, -1
            for column in self.counts:
                column[row] = 0
        self.seen.add(mid)
        self.ids.append(mid)
        self.firsts.append(first)
        self.lasts.append(last)
        self.models.append(model)
        for column, count in zip(self.counts, counts):
            column.append(count)

    def held(self) -> list[int]:
        """The rows of the newest message and of any whose lines interleave with it: held back, so that
        lines of theirs still to be written are read together with the ones already there. A row's
        newest line comes after the rows' before it (a run ends where the next begins)."""
        if not self.ids:
            return []
        cut, lasts, held = self.firsts[-1], self.lasts, []
        row = len(lasts)
        while True:
            while row and (lasts[row - 1] >= cut or lasts[row - 1] < 0):
                row -= 1
                if lasts[row] >= 0:
                    held.append(row)
            earliest = min(self.firsts[r] for r in held)
            if earliest == cut:
                return held
            cut = earliest

    def by_model(self) -> list[tuple[object, tuple[list[int], ...]]]:
        """Each model with its rows' counts columns."""
        models = self.models
        if not models or models.count(models[0]) == len(models):
            return [(models[0], self.counts)] if models else []
        return [(model, tuple(list(compress(column, mask)) for column in self.counts))
                for model in dict.fromkeys(models) for mask in [list(map(eq, models, repeat(model)))]]


class Scan:
    """The messages of one file's lines, given in order (see the module's docstring)."""

    def __init__(self, since: datetime | None, messages: Messages, fd: int) -> None:
        self.since, self.messages, self.fd = since, messages, fd
        self.cut = _stamp(since)
        # The session's fields between parentUuid and the rest, as last seen, and a user's line's head
        # from parentUuid's closing quote (a newline, which no line holds, before any is seen); the
        # length of the last string parentUuid read.
        self.prefix = self.user = b"\n"
        self.ulen = 0
        # The run of one message's lines being read: (id, first and last offset, the last line as
        # buffer, start and end, the bytes it starts with from its parentUuid's closing quote and its
        # model when it is of Claude Code's layout, else None and None). No run: id None.
        self.run: tuple = (None, 0, 0, b"", 0, 0, None, None)
        # Runs of Claude Code's layout that ended: (id, first, last, the last line's tail, buffer, start,
        # end, model, head).
        self.ended: list[tuple] = []

    def lines(self, buf: bytes, ls: int, cut: int, base: int) -> None:
        """The lines of ``buf[ls:cut]``, each ending with a newline; ``base`` is the offset of ``buf``."""
        # Bytes are compared as slices: cheaper than startswith, whose arguments are parsed the slow way.
        find, head_match, parent, longest = buf.find, lines.HEAD.match, _PARENT, MAX_LINE
        prefix, user, ulen = self.prefix, self.user, self.ulen
        psize, usize = len(prefix), len(user)
        mid, first, last, rbuf, rls, rle, head, model = self.run
        ended, tail = self.ended, lines.TAIL_START  # flush() empties ended in place
        size = len(head) if head is not None else 0
        while ls < cut:
            le = find(b"\n", ls)
            if le - ls > longest:
                ls = le + 1
                continue
            if buf[ls:(at := ls + 15)] == parent:
                # The quote that closes a string parentUuid as long as the last one (see the module's
                # docstring), and the head and a user's type after it, within the line (neither holds a
                # newline); else the quote is searched for.
                if (g := at + ulen) < le:
                    if buf[g:g + size] == head:  # the run's message again
                        last, rbuf, rls, rle = base + ls, buf, ls, le
                        ls = le + 1
                        continue
                    if buf[g:g + usize] == user:
                        ls = le + 1
                        continue
                if (q := find(b'"', at, le)) != g and q >= 0:  # a parentUuid of another length: the line again
                    ulen = q - at
                    continue
                q += 1  # where the fields after it start (0: no quote, not Claude Code's layout)
            else:
                q = 0
            if q:
                at = q + psize
                known = buf[q:at] == prefix
                if not known and (found := lines.PREFIX.match(buf, ls, le)) is not None:
                    # The session's fields, seen first or changed: the line is a user's or begins a run.
                    prefix, user, psize, usize = _learnt(found)
                    at, known = q + psize, True
                    if buf[q - 1:q - 1 + usize] == user:
                        ls = le + 1
                        continue
                if known and (found := head_match(buf, at)) is not None:  # a run begins
                    if head is not None:  # end()'s first case, inline: a call a message costs 3% of the read
                        ended.append((mid, first, last, rbuf[rbuf.rfind(tail, rls, rle):rle], rbuf, rls, rle, model,
                                      head))
                        if len(ended) >= BATCH:
                            self.flush()
                    elif mid is not None:
                        self.end(mid, first, last, rbuf, rls, rle, head, model)
                    mid, first, last, rbuf, rls, rle = found[2], base + ls, base + ls, buf, ls, le
                    head, model = buf[q - 1:found.end()], found[1]
                    size = len(head)
                    ls = le + 1
                    continue
            if lines.may_count(buf, ls, le):
                key = lines.message_id(buf, ls, le)
                if mid is not None and mid != key:
                    self.end(mid, first, last, rbuf, rls, rle, head, model)
                    mid, head, model, size = None, None, None, 0
                if key is None:
                    self.take(None, base + ls, base + ls, buf, ls, le)
                else:
                    if mid is None:
                        mid, first = key, base + ls
                    last, rbuf, rls, rle, head, model, size = base + ls, buf, ls, le, None, None, 0
            if not q and (found := lines.PREFIX.match(buf, ls, le)) is not None:  # a parentUuid of null
                prefix, user, psize, usize = _learnt(found)
            ls = le + 1
        self.prefix, self.user, self.ulen = prefix, user, ulen
        self.run = mid, first, last, rbuf, rls, rle, head, model
        self.flush()

    def end(self, mid: bytes, first: int, last: int, buf: bytes, ls: int, le: int, head: bytes | None,
            model: bytes | None) -> None:
        """Count the message of a run of lines that ended: one of Claude Code's layout with the others
        (its tail copied while its bytes are at hand), one of another shape now."""
        if head is not None:
            self.ended.append((mid, first, last, buf[buf.rfind(lines.TAIL_START, ls, le):le], buf, ls, le, model, head))
            if len(self.ended) >= BATCH:
                self.flush()
        else:
            self.take(mid, first, last, buf, ls, le)

    def finish(self) -> None:
        """Count the run the last line read belongs to, and any ended."""
        if self.run[0] is not None:
            self.end(*self.run)
        self.flush()

    def flush(self) -> None:
        """Count the messages of the runs in ``ended``, in the file's order: all at once when every one
        has Claude Code's tail, an id and model without escapes (the JSON parser's to decode), a real
        model, no id seen before and a timestamp not before ``since``; else each alone."""
        if not self.ended:
            return
        ended = self.ended[:]  # emptied in place: lines() holds the list
        self.ended.clear()
        keys, firsts, lasts, tails, _, _, _, models, _ = zip(*ended)
        bills = mids = names = None
        # One line each, as an id or a model holds no newline (a line does not): searched and decoded at once.
        all_ids, all_models = b"\n".join(keys), b"\n".join(models)
        if b"\\" not in all_ids and b"\\" not in all_models:
            try:
                mids, names = all_ids.decode().split("\n"), all_models.decode().split("\n")
            except UnicodeDecodeError:  # json.loads of its line would fail too: each alone
                pass
            else:
                bills = lines.billed(tails)
        if bills is not None and "<synthetic>" not in names:
            counts, stamps = bills
            if (after := self.after(stamps)) is False:
                return
            if after and self.messages.add_many(mids, firsts, lasts, names, counts):
                return
        for i, record in enumerate(ended):
            self.one(record, bills and (tuple(column[i] for column in bills[0]), bills[1][i]))

    def after(self, stamps: tuple[bytes, ...]) -> bool | None:
        """Whether all these timestamps are from ``since`` on (True), all before it (False), or neither,
        or they are not as Claude Code writes one and cannot be compared as bytes (None)."""
        if self.cut is None:
            return True
        if not lines.utc(stamps):
            return None
        after = list(map(ge, stamps, repeat(self.cut)))
        return True if all(after) else False if not any(after) else None

    def one(self, record: tuple, bill: tuple | None) -> None:
        """Count the message of one run of Claude Code's layout; ``bill`` is what its tail says (the usage
        counts and the timestamp's bytes), when read."""
        key, first, last, tail, buf, ls, le, model, head = record
        if bill is None and b"\\" not in key and b"\\" not in model and (found := lines.billed([tail])):
            bill = tuple(column[0] for column in found[0]), found[1][0]
        if bill is not None and b"\\" not in bill[1]:  # a timestamp with an escape is the JSON parser's to decode
            try:
                mid, name, stamp = key.decode(), model.decode(), bill[1].decode()
            except UnicodeDecodeError:  # json.loads of the line would fail too
                return
            self.count(mid, first, last, name, bill[0], stamp)
            return
        if buf.rfind(b'"usage"', ls, le) < 0:  # its newest line bills nothing: the newest one that may
            if (found := self.billing_line(first, last + le - ls, head)) is None:
                return
            buf, ls, le, last = found
        self.take(key, first, last, buf, ls, le)

    def billing_line(self, first: int, stop: int, head: bytes) -> tuple[bytes, int, int, int] | None:
        """The newest line of a run (its lines between the offsets ``first`` and ``stop``, where its
        newest line's newline is, are the ones with its ``head``) that holds a ``"usage"``, as (buffer,
        start, end, offset), or None: the line reading every line would have counted it with."""
        base = first - first % mmap.ALLOCATIONGRANULARITY
        view = _window(self.fd, base, stop + 1)
        le = stop - base
        while le > first - base:
            ls = view.rfind(b"\n", first - base, le) + 1 or first - base
            # The run's head where lines() found it: after this parentUuid, or after one as long as an earlier one.
            if le - ls <= MAX_LINE and view[ls:ls + 15] == _PARENT and view.find(head, ls + 15, le) >= 0 \
                    and view.rfind(b'"usage"', ls, le) >= 0:
                return view, ls, le, base + ls
            le = ls - 1
        return None

    def take(self, key: bytes | None, first: int, last: int, buf: bytes, ls: int, le: int) -> None:
        """Count the message of the line ``buf[ls:le]`` (at ``last``; its run of lines began at ``first``),
        read by the JSON parser, after the runs that ended before it."""
        self.flush()
        found = lines.message(buf, ls, le)
        if found is not None and isinstance(found[2], dict):
            mid, name, usage, stamp = found
            self.count(mid, first, last, name, usage, stamp)

    def count(self, mid: object, first: int, last: int, name: object, usage: dict | tuple, stamp: object) -> None:
        if name == "<synthetic>" or not mid:
            return
        if self.since is not None and _before(stamp, self.since):
            return
        if isinstance(usage, dict):
            try:
                usage = cost.usage_counts(usage)
            except (ValueError, TypeError):  # counts that are not numbers: nothing to bill
                return
        self.messages.add(mid, first, last, name, usage)


def _learnt(found: re.Match) -> tuple[bytes, bytes, int, int]:
    """The session's fields that ``transcript_line.PREFIX`` found, a user's line's head after them, and
    their lengths."""
    prefix = found[1]
    user = b'"' + prefix + b'"type":"user",'
    return prefix, user, len(prefix), len(user)


def _before(stamp: object, since: datetime) -> bool:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) < since
    except (ValueError, TypeError):  # no usable timestamp: count it rather than lose spend
        return False


def _stamp(since: datetime | None) -> bytes | None:
    """``since`` as Claude Code writes a timestamp (``transcript_line.billed``'s), rounded up to the
    millisecond: a timestamp compares below it, byte by byte, exactly when ``_before`` says it is
    before ``since``. None when every message counts (no ``since``, or one without a time zone, which
    ``_before`` cannot compare)."""
    if since is None or since.utcoffset() is None:
        return None
    t = since.astimezone(UTC) + timedelta(microseconds=999)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f".{t.microsecond // 1000:03d}Z").encode()
