"""A flood of pytest's verbose lines, read a run of lines at a time, and the test ids the census counts past its
bound of ids kept by name (census.py, ``MAX_IDS``).

`pytest -v` prints a line a test: ``path::Class::test[params] PASSED   [ 42%]``. A run of them (the sieve hands
the census runs of lines whose first word ends with "::" whole, sieve.py ``Keys.runs``) is read with a few
passes in C: one regular expression takes every line's test name (what follows its id's last colon), and
tells whether every line of the run is a verbose line that reads the same undecoded (else the census reads
the run a line at a time, as any other). Below the bound another takes each line's id and outcome, noted as
reading the line alone would note them, without decoding it or trying the census's rules on it. Past the
bound the census keeps no id but those of the start run: a line whose name is no such id's name cannot be one
of them, and is only counted; the few lines whose name is are noted by id and outcome, as below the bound. So
a run naming 10 million distinct tests costs a few passes over its bytes and one short string a line.

The regular expression that takes the names is most of that cost (about 0.3 s of CPU per 100 MB of 100-byte lines,
three times what reading the pipe costs), and no pass in C replaces it while the count stays exact: a count of
strings over the whole block cannot tell where a line's first space is (``x y PASSED`` is no test), a split into
lines and a call in C a line cost more, and finding the start's names in order with ``find`` misses a watched name
printed twice or out of order, which only every line's name shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable

from ..models import Census
from ..system.sieve import holds

_OUTCOMES = b"PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
# The classes of census._PYTEST_VERBOSE in bytes, for ASCII lines: [^\s:] and \S, then [^ \n] (below). A line
# matches below exactly when its text matches that rule (its id ends at its first space, its outcome follows),
# the lengths bounded so that the census's cut of a long line (census._MAX_LINE) leaves both whole.
_PATH, _FIRST = rb"[\x00-\x08\x0e-\x1b!-9;-\x7f]", rb"[\x00-\x08\x0e-\x1b!-\x7f]"
_NAME = rb"[\x00-\x09\x0b-\x1f!-9;-\x7f]"  # [^ \n] but the colon: what follows an id's last colon
# Each line, after its newline: the id, the test's name its last group (what follows the id's last colon, as
# in the census's normalised id), then the outcome, at the line's end or before a space.
# ([^ ] for [^ \n] before the last colon is faster, and a match that runs on into the next line is one too few.)
_LINE = re.compile(rb"\n" + _PATH + rb"{1,1000}::(?=" + _FIRST + rb")(?:[^ ]{0,1000}:)?(" + _NAME
                   + rb"{0,2000}) (?:" + _OUTCOMES + rb")(?![^ \n])")
# The same lines, each one's node id (up to its first space) and outcome: the ids the census keeps by name.
_IDS = re.compile(rb"\n(" + _PATH + rb"{1,1000}::(?=" + _FIRST + rb")(?:[^ ]{0,1000}:)?" + _NAME
                  + rb"{0,2000}) (" + _OUTCOMES + rb")(?![^ \n])")
_SKIPPED = re.compile(rb"\n[^ ]*+ SKIPPED")  # on lines that all match _LINE: the skipped tests
_REWRITTEN = (b"\x00", b"\x1b", b"\r")  # bytes decoding changes (lines.decode_line)

def pytest_id(nodeid: str) -> str:
    """A verbose line's node id as the JUnit XML's classname::name, so that the output and the XML give the same
    ids. The path ends at the first "::" (it may hold a "["), the parameters start at the first "[" after it
    (they may hold "::")."""
    path, _, rest = nodeid.partition("::")
    name, bracket, params = rest.partition("[")
    *classes, test = name.split("::")
    return ".".join([path.replace("/", ".").removesuffix(".py"), *classes]) + f"::{test}{bracket}{params}"


def test_name(test_id: str) -> str:
    """What follows the last colon of a test id: the same in a verbose line's id and in the census's."""
    return test_id.rpartition(":")[2]


def watched(ids: Iterable[str]) -> tuple[set[bytes], bool]:
    """The names of ``ids`` (a verbose line with none of them names none of those ids), and whether one holds an
    address (census.normalise_id: then a line that holds one is read alone)."""
    found = {test_name(test_id).encode() for test_id in ids}
    return found, any(b"0x?" in name for name in found)


def names(lines: bytes, pattern: re.Pattern[bytes] = _LINE) -> list | None:
    """The test names of ``lines`` (each line after a newline: the run with a newline before it), one a line
    in order; None unless every line is a verbose pytest line that decoding leaves as it is."""
    if not lines.isascii() or any(byte in lines for byte in _REWRITTEN):
        return None
    found = pattern.findall(lines)
    return found if len(found) == lines.count(b"\n") else None


def verbose(lines: bytes) -> list[tuple[str, str]] | None:
    """As ``names``, each line's node id and outcome: what the census reads of each line below its bound."""
    found = names(lines, _IDS)
    return None if found is None else [(nodeid.decode(), outcome.decode()) for nodeid, outcome in found]


def skipped(lines: bytes) -> int:
    """How many of ``lines`` (as ``names`` takes them, all verbose lines) say SKIPPED."""
    return len(_SKIPPED.findall(lines)) if holds(lines, b" SKIPPED") else 0


def tally(lines: bytes, found: list[bytes], hits: list[bytes], past: Beyond,
          note: Callable[[list[tuple[str, str]]], object]) -> None:
    """Count the verbose lines of a run past the bound (``lines``, their names ``found``) into ``past``, but those
    whose names are ``hits`` (in order): their ids and outcomes (``verbose``) are handed to ``note``, as their ids
    may be kept or start ones."""
    ran = len(found) - skipped(lines)
    raws = [lines[start:end] for start, end in lines_named(lines, hits)]
    ran -= sum(raw.split(b" ", 2)[1] != b"SKIPPED" for raw in raws)
    note(verbose(b"\n" + b"\n".join(raws)) or [])
    past.count += len(found) - len(hits)
    past.ran += ran


def lines_named(lines: bytes, wanted: list[bytes]) -> list[tuple[int, int]]:
    """The (start, end) of the lines of ``lines`` (as ``names`` took them) whose names are ``wanted``, the
    names of those lines in order: one pass, each line found after the one before."""
    found, at = [], 0
    for name in wanted:
        while True:
            if (at := lines.find(b":" + name + b" ", at)) < 0:
                return found  # not there: never so for names these lines gave
            start = lines.rfind(b"\n", 0, at) + 1
            # The name ends the id when the line's first space follows it (else it is later in the line).
            if lines.find(b" ", start) == at + 1 + len(name):
                end = lines.find(b"\n", at)
                found.append((start, len(lines) if end < 0 else end))
                at = found[-1][1]
                break
            at += 1
    return found


class Beyond:
    """The test ids a run named past ``MAX_IDS``: counted, and those of ``expected`` (the ids the goal's start
    run named, asked for when the first id past the bound comes) remembered with whether they ran. So the
    guard can still say exactly which start tests are missing; without ``expected`` it cannot, and says so
    by its counts only."""

    def __init__(self, expected: Collection[str] | None) -> None:
        self.expected = expected
        self.found: dict[str, bool] = {}  # start test id -> whether it ran (else it was only skipped)
        self.count = self.ran = 0  # the lines naming a test past the bound (one printed twice counts twice)

    def add(self, test_id: str, ran: bool) -> None:
        self.count += 1
        self.ran += ran
        if self.expected is not None and test_id in self.expected:
            self.found[test_id] = self.found.get(test_id, False) or ran

    def knows(self, test_id: str) -> bool:
        """Whether this run's census can say if ``test_id`` is there."""
        return self.expected is not None and test_id in self.expected


def beyond(census: Census) -> Beyond | None:
    """The ids of ``census`` past the census's bound (None when it kept them all by name)."""
    return census._beyond
