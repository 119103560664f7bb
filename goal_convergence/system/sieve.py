"""Which lines of a block of output the scanners read: found by a few passes in C over the whole block.

A scanner's rules match one decoded line each, nearly all of them at the line's start. Its ``Keys``
say which lines could match one of its rules: patterns at a line's start, after its leading
whitespace, after a count at its start, right after its first word (or its first word that is not a
time or a count), and strings anywhere in it. A
``Sieve`` compiles the keys of every scanner reading one output into one regular expression tried at
each line's start (the regex engine walks over the lines in C, a line that starts like no key is left
after a test or two, and a log line that begins with a time, which no key can find, after one) and one
fast search per string, then tells each scanner which lines are its own. A gigabyte of ordinary output
costs a few passes, not a Python step a line. One scanner may take runs of lines whole (``Keys.runs``: a
flood of pytest's verbose lines, a line a test): a run of lines no other scanner's key finds is walked in one
match and handed over as one span, which that scanner reads in bulk.

Keys are bytes and the rules match text (``lines.decode_line``), so each key finds at least the
lines its rules match: its classes take every byte of a non-ASCII character (``DIGIT``, ``WORD``,
``NONSPACE``, ``SPACE``), and a line holding a NUL, an escape or a carriage return that does not end
it is read whatever it holds, since decoding changes it. A key may find more lines than its rule
takes: a line read that matches no rule changes nothing.
"""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Superset classes, in bytes, of the text classes the rules use: a non-ASCII character is bytes >= 0x80.
DIGIT = rb"[0-9\x80-\xff]"
WORD = rb"[A-Za-z0-9_\x80-\xff]"
# Positive classes, not negated ones: the engine tests a byte against one bitmap instead of two steps, and
# these are tested at nearly every line's start.
NONSPACE = rb"[\x00-\x08\x0e-\x1f!-\xff]"  # not whitespace (what [^ \t\n\r\x0b\x0c] takes)
SPACE = rb"[ \t\x0b\x0c\x1c-\x1f\xc2\xe1\xe2\xe3]"  # the first byte of each whitespace character
# Exactly the whitespace characters but the line ends (what str.isspace takes), so it can be possessive; apart,
# a run of the ASCII ones is counted in one step of the engine, not one a character.
_ASCII_SPACE = rb"[ \t\x0b\x0c\x1c-\x1f]"
_WIDE_SPACE = rb"(?:\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80)"
WHITESPACE = b"(?:" + _ASCII_SPACE + b"|" + _WIDE_SPACE + b")"
# A line's first word: its bytes up to whitespace or a colon. Possessive: what follows it is one of those.
_WORD_BYTE = rb"[\x00-\x08\x0e-\x1f!-9;-\xff]"
_WORD_RUN = _WORD_BYTE + b"*+"
_WORD_START = rb"[\x00-\x08\x0e-\x1f!-/;-\xff]"  # a first word's first byte that is not a digit
_NOT_WORD = rb"[\x00-\x09\x0b-/:-@\[-^`{-\xff]"  # neither a word character nor a newline
# The bytes a regular expression gives a meaning to, which cannot open a key that shares the gate.
_SPECIAL = frozenset(b"[](){}.*+?^$|\\")


@dataclass(frozen=True)
class Keys:
    """The lines one scanner reads. Each key is a regular expression in bytes, without capturing groups."""

    starts: tuple[bytes, ...] = ()  # at the line's start; each begins with a literal byte (one gate for all)
    indented: tuple[bytes, ...] = ()  # after the line's leading whitespace (one character or more)
    counted: tuple[bytes, ...] = ()  # after a count at the line's start: non-word bytes, digits, a space
    after_word: tuple[bytes, ...] = ()  # right after the line's first word (not empty); each begins with ":" or a space
    # As after_word, when the first word does not begin with a digit (a name, not a time or a count): most lines
    # of a log begin with a time, followed by a space, which these keys then cost nothing.
    after_name: tuple[bytes, ...] = ()
    anywhere: tuple[bytes, ...] = ()  # plain strings, anywhere in the line
    # As after_word, the lines this member takes in runs: a run of such lines that no key of another member finds
    # is one span (``Lines.runs``), walked in one match, not a line at a time. One member of a sieve at most.
    runs: tuple[bytes, ...] = ()
    # Strings one of which every line these keys find holds, a newline before the line's start counted (a key at
    # the line's start needs b"\n" and its first bytes); ``anywhere`` keys aside. None: not said. When every other
    # member says them, a block that holds none of them is one run for the member that takes runs, not looked at
    # line by line (``Lines.checked``): a few searches over the block instead of a regex walk of every line.
    needs: tuple[bytes, ...] | None = None


class Lines(list[int]):
    """The starts of the lines of a block one member reads, in order; ``runs``: the (start, end) spans of the
    runs of lines it takes whole (``Keys.runs``), in order, each ending at its last line's newline or the
    block's end. A run's lines are not listed one by one, except those decoding rewrites. Unless ``checked``,
    the block held none of what the other members' keys need (``Keys.needs``) and is one run whose lines were
    not looked at: no key of another member finds any of them, but some may not be lines of a run, and the
    lines the runner's own keys find among them are not listed (a sieve of its keys alone tells them apart)."""

    runs: list[tuple[int, int]] = []
    checked = True


def _first_byte(key: bytes) -> int:
    if key[:1] == b"\\" and key[1] in _SPECIAL:
        return key[1]
    if not key or key[0] in _SPECIAL or key[:1].isdigit():
        raise ValueError(f"a start key begins with a literal byte other than a digit (a count is counted), "
                         f"not {key[:1]!r}: {key!r}")
    return key[0]


def _body(parts: dict[str, list[bytes]], mark: bytes = b"()") -> tuple[list[bytes], list[tuple[str, bytes]]]:
    """The branches of one alternation over the keys by kind, and the key each group stands for. Each key
    ends with an empty group of its own (``mark``; none when it is b""), numbered in the order tried, that says
    which matched (at its end: the engine skips a key whose first byte does not match only when the key begins
    with it)."""
    groups: list[tuple[str, bytes]] = []

    def group(*kinds: str) -> bytes:
        if kinds[0] not in _AFTER:
            groups.extend((kinds[0], key) for key in parts[kinds[0]])
            return b"(?:" + b"|".join(key + mark for key in parts[kinds[0]]) + b")"
        # Most lines' first word is followed by a space: the keys after a colon are tested once for all.
        alternatives = []
        for first in (b":", b" "):
            keys = [(kind, key) for kind in kinds for key in parts[kind] if key[:1] == first]
            groups.extend(keys)
            if keys:
                alternatives.append(first + b"(?:" + b"|".join(key[1:] + mark for _, key in keys) + b")")
        return b"(?:" + b"|".join(alternatives) + b")"

    branches = []
    # Each branch but the last begins with a one-byte class, which the engine tests before entering it:
    # a line is walked into two branches at most. A line that starts with a digit takes the first only.
    if parts["counted"] or parts["after_word"]:
        branches.append(b"[0-9]" + DIGIT + b"*+(?:" + b"|".join(
            ([b" " + group("counted")] if parts["counted"] else [])
            + ([_WORD_RUN + group("after_word")] if parts["after_word"] else [])) + b")")
    if parts["indented"]:
        # The first byte alone, then what it starts must be whitespace.
        branches.append(rb"[ \t\x0b\x0c\x1c-\x1f\xc2\xe1\xe2\xe3](?:(?<=[ \t\x0b\x0c\x1c-\x1f])|(?<=\xc2)[\x85\xa0]"
                        rb"|(?<=\xe1)\x9a\x80|(?<=\xe2)(?:\x80[\x80-\x8a\xa8\xa9\xaf]|\x81\x9f)|(?<=\xe3)\x80\x80)"
                        + _ASCII_SPACE + b"*+(?:" + _WIDE_SPACE + _ASCII_SPACE + b"*+)*+" + group("indented"))
    if parts["counted"]:
        branches.append(_NOT_WORD + _NOT_WORD + b"*" + DIGIT + b"+ " + group("counted"))
    if parts["after_word"] or parts["after_name"]:
        branches.append(_WORD_START + _WORD_RUN + group(*_AFTER))
    if parts["starts"]:
        gate = bytes(sorted({_first_byte(key) for key in parts["starts"]}))
        branches.append(b"(?=[" + re.escape(gate) + b"])" + group("starts"))
    return branches, groups


def _either(branches: list[bytes]) -> bytes:
    return b"(?:" + b"|".join(branches) + b")" if branches else b"(?!)"


_AFTER = ("after_word", "after_name")
_KINDS = ("indented", "counted", *_AFTER, "starts")


def _boring(parts: dict[str, list[bytes]]) -> bytes:
    """A line that starts with a digit and that no key can find, as a timestamped log line: its first word,
    not a count, ends with whitespace that begins no key after a first word. Keys after a count or a first
    word are the only ones a line that starts with a digit can match."""
    ends = bytes(b for b in b"\t\x0b\x0c\r " if not any(key[0] == b for key in parts["after_word"]))
    # After the digits (which take every byte >= 0x80), a byte of a first word that is no digit: not a count.
    return b"[0-9]" + DIGIT + b"*+" + _WORD_START + _WORD_RUN + b"[" + re.escape(ends) + b"]"


def _line_start(block: bytes, at: int) -> int:
    return block.rfind(b"\n", 0, at) + 1


def _libc_memmem() -> Callable[..., int | None] | None:
    # glibc's memmem is several times faster than bytes.find for the strings keys are made of.
    try:
        memmem = ctypes.CDLL(None).memmem
    except (OSError, AttributeError):
        return None
    memmem.restype = ctypes.c_void_p
    memmem.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
    return memmem  # type: ignore[no-any-return]


_MEMMEM = _libc_memmem()


def holds(block: bytes, needle: bytes) -> bool:
    """``needle in block`` by glibc's memmem: about twice as fast for a string of rare bytes that is not there (the
    census's " SKIPPED"); for one of frequent bytes, as ": ", a regular expression's search is faster."""
    return next(_lines_holding(block, needle), None) is not None


def _lines_holding(block: bytes, needle: bytes) -> Iterator[int]:
    """The starts of the lines of ``block`` that hold ``needle``, in order."""
    if _MEMMEM is None:
        at = block.find(needle)
        while at >= 0:
            yield _line_start(block, at)
            end = block.find(b"\n", at)
            at = block.find(needle, end) if end >= 0 else -1
        return
    pointer = ctypes.c_char_p(block)  # the block's own bytes, not a copy; kept alive by ``pointer``
    base = ctypes.cast(pointer, ctypes.c_void_p).value or 0
    at, size = 0, len(block)
    while (found := _MEMMEM(base + at, size - at, needle, len(needle))) is not None:
        yield _line_start(block, found - base)
        end = block.find(b"\n", found - base)
        if end < 0:
            return
        at = end + 1


_CR = re.compile(rb"\r(?!\n)")


def _rewritten_lines(block: bytes) -> set[int]:
    """The lines decoding rewrites: they hold a NUL, an escape, or a CR that does not end them."""
    starts = {start for byte in (b"\x00", b"\x1b") if byte in block for start in _lines_holding(block, byte)}
    if b"\r" in block:
        starts.update(_line_start(block, m.start()) for m in _CR.finditer(block))
    return starts


class Sieve:
    """The keys of the scanners of one output, compiled together: ``find`` gives each its lines."""

    def __init__(self, members: tuple[Keys, ...]) -> None:
        self._size = len(members)
        parts: dict[str, list[bytes]] = {kind: [] for kind in _KINDS}
        owners: dict[tuple[str, bytes], set[int]] = {}
        for k, keys in enumerate(members):
            for kind in _KINDS:
                for key in getattr(keys, kind):
                    if re.compile(key).groups:
                        raise ValueError(f"a key has no capturing group: {key!r}")
                    if kind in _AFTER and key[:1] not in (b":", b" "):
                        raise ValueError(f"a key after the first word begins with a colon or a space: {key!r}")
                    if (kind, key) not in owners:
                        owners[kind, key] = set()
                        parts[kind].append(key)
                    owners[kind, key].add(k)
        branches, order = _body(parts)
        runs = [k for k, keys in enumerate(members) if keys.runs]
        if len(runs) > 1:
            raise ValueError("one member of a sieve at most takes runs of lines (Keys.runs)")
        self._runner = runs[0] if runs else None
        if self._runner is not None:
            for key in members[self._runner].runs:
                if re.compile(key).groups or key[:1] not in (b":", b" "):
                    raise ValueError(f"a key of runs has no capturing group, and begins with a colon or a space: "
                                     f"{key!r}")
            # A line of a run is one that no key of another member finds: those members are not told of it. The keys
            # after the first word are tried where it ends (the first word is walked once).
            others = {kind: [key for key in parts[kind] if owners[kind, key] - {self._runner}] for kind in _KINDS}
            after = _either([b"(?:" + b"|".join(others[kind]) + b")" for kind in _AFTER if others[kind]])
            line = (b"(?!" + _either(_body({**others, "after_word": [], "after_name": []}, b"")[0]) + b")"
                    + _WORD_BYTE + b"++" + b"(?!" + after + b")(?:"
                    + b"|".join(members[self._runner].runs) + b").*+")
            branches = [line + rb"(?:\n" + line + rb")*+()", *branches]  # group 1: a run
        self._at_start = re.compile(_either(branches))
        self._keyed = bool(branches)  # else only strings anywhere are looked for: no walk over the lines
        # A line no key can find (a timestamped log line) begins a run of such lines, walked over in one match
        # with a cheap test a line, that ends before the newline of its last line: the next match tries the line
        # after it. Any other line is tried against the keys.
        boring = _boring(parts)
        run = boring + rb".*+(?:\n" + boring + rb".*+)*+"
        self._after_newline = re.compile(b"\n" + _either([run, *branches]))  # no line of a run is one of those
        # Group g is the g-th key tried: a line found by it matched no key tried before, so only the
        # members with a key tried later may want it too, and are asked with their own keys.
        self._owners = [frozenset()] + [frozenset(owners[item]) for item in order]
        last = [max((g for g, item in enumerate(order, 1) if k in owners[item]), default=0) for k in range(self._size)]
        self._ask = [()] + [tuple(k for k in range(self._size) if k not in self._owners[g] and last[k] > g)
                            for g in range(1, len(order) + 1)]
        self._alone = [re.compile(_either(_body({kind: list(getattr(keys, kind)) for kind in _KINDS})[0]))
                       for keys in members]
        self._needs = _Needs([keys.needs for k, keys in enumerate(members) if k != self._runner]) \
            if self._runner is not None and self._size > 1 else None
        self._needles: dict[bytes, list[int]] = {}
        for k, keys in enumerate(members):
            for needle in keys.anywhere:
                self._needles.setdefault(needle, []).append(k)

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def of(members: tuple[Keys, ...]) -> Sieve:
        """The sieve of these keys, compiled once."""
        return Sieve(members)

    def find(self, block: bytes) -> list[Lines]:
        """For each member, in order, the lines of ``block`` it reads."""
        if not block or not self._size:
            return [Lines() for _ in range(self._size)]
        by_key: list[list[int]] = [[] for _ in self._owners]
        runs: list[tuple[int, int]] = []
        shift, at = self._runner is not None, 0
        checked = self._needs is None or self._needs.found(block)
        if not checked:  # no line holds what another member needs: the whole block is one run
            runs.append((0, len(block) - block.endswith(b"\n")))
        elif first := self._at_start.match(block):
            if shift and first.lastindex == 1:
                runs.append((0, first.end()))
                at = first.end()  # the lines after the first are in the run
            else:
                by_key[first.lastindex - shift].append(0)  # type: ignore[operator]
        for m in self._after_newline.finditer(block, at) if checked and self._keyed else ():
            if shift and m.lastindex == 1:
                runs.append((m.start() + 1, m.end()))
            elif m.lastindex:  # not a run of lines no key finds
                by_key[m.lastindex - shift].append(m.start() + 1)
        found: list[list[int]] = [[] for _ in range(self._size)]
        for g, starts in enumerate(by_key):
            if starts:
                for k in self._owners[g]:
                    found[k] += starts
                for k in self._ask[g]:
                    found[k] += [start for start in starts if self._alone[k].match(block, start)]
        for needle, members in self._needles.items():
            starts = list(_lines_holding(block, needle))
            for k in members:
                found[k] += starts
        if rewritten := _rewritten_lines(block):
            for starts in found:
                starts += rewritten
        lines = [Lines(sorted(set(starts))) for starts in found]
        if self._runner is not None:
            lines[self._runner].runs, lines[self._runner].checked = runs, checked
        return lines


class _Needs:
    """What the other members of a sieve need (``Keys.needs``): ``found`` tells whether a block may hold a line
    one of their keys finds."""

    def __init__(self, needs: list[tuple[bytes, ...] | None]) -> None:
        said = [need for member in needs for need in member or ()]
        if any(not need for need in said):
            raise ValueError("a need is a string of one byte or more")
        # A member that did not say, or that needs only a line's start (any line): every block may.
        self._never = any(member is None for member in needs) or b"\n" in said
        # The needs at a line's start: one search that stops at each newline and tries the needs that begin with
        # the byte after it (one branch each first byte; a need of one byte stands for those it begins). (The
        # engine's own search for a literal string beats memmem and bytes.find on the two-byte needs, which hold
        # frequent bytes.)
        starts = {need[1:] for need in said if need[:1] == b"\n" and need[1:]}
        self._starts = tuple(sorted(starts))
        one = bytes(sorted(need[0] for need in starts if len(need) == 1))
        by_first: dict[bytes, list[bytes]] = {}
        for need in sorted(starts):
            if need[0] not in one:
                by_first.setdefault(need[:1], []).append(re.escape(need[1:]))
        branches = [b"[" + re.escape(one) + b"]"] if one else []
        branches += [re.escape(first) + b"(?:" + b"|".join(rest) + b")" for first, rest in by_first.items()]
        self._searches = [re.compile(b"\n(?:" + b"|".join(branches) + b")").search] if branches else []
        self._searches += [re.compile(re.escape(need)).search for need in sorted({n for n in said if n[:1] != b"\n"})]

    def found(self, block: bytes) -> bool:
        return self._never or block.startswith(self._starts) or any(search(block) for search in self._searches)
