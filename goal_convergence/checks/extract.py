"""The lines of a command's output that say what failed, and a fingerprint of those failures.

``FailureScanner`` reads output as it streams, in reads cut anywhere, and keeps a bounded list
of the lines that matter: failing test ids and lint findings first, then assertion and error
details, then the runners' summary counts. Runners covered: pytest, unittest, jest/vitest, go
test, cargo test, ruff, eslint, tsc (and the ``file:line: error:`` shape of mypy and compilers);
when none of them matched, any line that mentions an error, failure, assertion, exception or
panic is kept instead.

``fingerprint`` hashes the normalised set of those lines, so two runs that fail the same way
give the same value however long they took and wherever their temp files were.
"""

from __future__ import annotations

import bisect
import hashlib
import re

from ..system.lines import LineScanner, decode_line, line_end
from ..system.sieve import DIGIT, NONSPACE, SPACE, WHITESPACE, WORD, Keys, Sieve

MAX_LINES = 60
# Failing test ids are what the maker and the oracle need most, and they are short: keep every one
# of a large suite's failures (the oracle's input folds thousands of names into a few KB).
MAX_ID_LINES = 5_000
MAX_LINE_CHARS = 300
PASS_FINGERPRINT = "pass"

# A line longer than this (minified JS, binary noise) is cut: it is never kept whole anyway.
_MAX_SCANNED_LINE = 4096
# A traceback whose exception line never comes must not keep the scanner reading every line.
_MAX_TRACEBACK_LINES = 200

_ID, _DETAIL, _SUMMARY, _GENERIC = range(4)

# The lines the rules below can match (sieve.py); the ruff code line aside: it counts only before a
# " --> " line, which holds one, and is looked at then. Keys are case-sensitive, as the rules are.
_MARKS = tuple(mark.encode() for mark in "✕×●✖")
_SPACE_FIRST = b" \t\x0b\x0c\x1c\x1d\x1e\x1f\xc2\xe1\xe2\xe3"  # the first bytes of whitespace (sieve.SPACE)
_WORD_OR_NEWLINE = frozenset(b"\nabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")  # no count begins with one
_KEYS = Keys(
    starts=(b"FAIL", b"ERROR", b"--- FAIL", b"test ", rb"error[:\[]", b"E" + SPACE, b"panic: ", b"Expected:",
            b"Received:", b"!", b"Test", b"Found ", rb"Traceback \(", b"thread '", b"-->", *_MARKS),
    indented=(rb"Traceback \(", b"-->", b"--- FAIL", b"FAIL", *_MARKS, "→".encode(), b"Expected:", b"Received:",
              b"Test", rb"[^ \t\n\r\x0b\x0c:]*+:(?<=rror:|tion:) ", NONSPACE + rb"*_test\.go:", DIGIT + b"+:"),
    counted=(b"failed", b"error", WORD + b"+, "),
    # A thrown error's "Name: ", ruff's "path:1:2: E501", mypy's and compilers' "path:1: error: ".
    # (Its nonspace run ends with a colon: that test first, with no step back, as most lines fail it.)
    after_word=(b":(?<=rror:|tion:) ", b":(?=" + NONSPACE + b"*+(?<=:) )(?:" + NONSPACE + b"*:)?" + DIGIT
                + b"+(?::" + DIGIT + b"+: [A-Z]+" + DIGIT + b"|(?::" + DIGIT + b"+)?: (?:error|fatal))"),
    # tsc's " - error TS" and "): error TS", wherever its file name's spaces put it (a longer string is found faster)
    anywhere=(b" error TS",),
    # What the keys above need (sieve.Keys.needs): a start's first bytes, whitespace at the start, the first byte
    # of a count (a digit, or a byte that is no word's), and the ": " every key after the first word ends its match
    # with or looks ahead to.
    needs=(*(b"\n" + need for need in (b"FAIL", b"ERROR", b"--- FAIL", b"test ", rb"error", b"E", b"panic: ",
                                       b"Expected:", b"Received:", b"!", b"Test", b"Found ", b"Traceback (",
                                       b"thread '", b"-->", *_MARKS, *(bytes([byte]) for byte in _SPACE_FIRST),
                                       *(bytes([byte]) for byte in range(256) if byte not in _WORD_OR_NEWLINE))),
           b": "))
# eslint's heading: a line that is a path (the last rule). Many outputs print paths that are no heading
# (warnings): a path line no other key found is only held, and read if an eslint finding comes after it.
_PATHS = Keys(starts=(b"/(?!" + WHITESPACE + b")" + NONSPACE,), needs=(b"\n/",))
# The words of a generic line (lowercased), looked for only until enough generic lines are kept.
_GENERIC_KEYS = (Keys(anywhere=(b"error", b"fail", b"assert", b"exception", b"traceback", b"panic")),)

# Every line is matched once against all the rules below (one alternation: the first that
# matches wins, so order matters). The named rules carry state from line to line; "k<kind>_<n>"
# rules only keep the line as that kind.
_STATEFUL = [
    ("traceback", r"\s*Traceback \(most recent call last\):"),
    ("panic", r"thread '[^']*'(?: \(\d+\))? panicked at .*"),  # cargo test (newer Rust adds a thread id)
    ("arrow", r"\s*--> (?P<where>\S+:\d+:\d+)\s*$"),  # ruff's full format: the finding's place
    ("ruff", r"(?P<code>[A-Z]{1,4}\d{2,4}) (?:\[\*\] )?(?P<message>.+)$"),  # ...after its code line
    ("eslint", r"\s+(?P<pos>\d+:\d+)\s+(?P<severity>error|warning)\s+(?P<finding>.+)$"),
]
_KEEP = [
    # unittest's closing line comes before pytest's FAILED rule, which would take it for an id.
    (_SUMMARY, r"FAILED \((?:failures|errors)=.*\)$"),
    (_ID, r"(?:FAILED|ERROR) \S+"),  # pytest short summary
    (_ID, r"(?:FAIL|ERROR): \S+"),  # unittest
    (_ID, r"\s*--- FAIL: \S+"),  # go test
    (_ID, r"test \S+ \.\.\. FAILED$"),  # cargo test
    (_ID, r"error(?:\[E\d+\])?: .+"),  # rustc / cargo
    (_ID, r"\s*FAIL\s+\S"),  # jest, vitest, go package line
    (_ID, r"\s*[✕×]\s+\S"),  # jest, vitest
    (_ID, r"\s*● \S"),  # jest failure heading
    (_ID, r"\S+?:\d+:\d+: [A-Z]+\d+\b"),  # ruff (concise), flake8
    (_ID, r"\S.*?\(\d+,\d+\): error TS\d+: "),  # tsc
    (_ID, r"\S.*?:\d+:\d+ - error TS\d+: "),  # tsc --pretty
    (_ID, r"\S+?:\d+(?::\d+)?: (?:error|fatal error): "),  # mypy, gcc, clang
    (_DETAIL, r"E\s{3}.*\S"),  # pytest assertion detail
    (_DETAIL, r"panic: "),  # go
    (_DETAIL, r"\s+\S+_test\.go:\d+: "),  # go t.Errorf
    (_DETAIL, r"\s*(?:Expected|Received):\s.*\S"),  # jest
    (_DETAIL, r"\s+→ \S"),  # vitest
    (_DETAIL, r"\s*(?:[\w.]+\.)?\w*(?:Error|Exception): "),  # thrown errors
    (_SUMMARY, r"\W*\d+ (?:failed|errors?)\b"),  # pytest, with or without ===
    (_SUMMARY, r"\W*(?:\d+ \w+, )+\d+ (?:failed|errors?)\b"),
    (_SUMMARY, r"!+ Interrupted: "),
    (_SUMMARY, r"\s*(?:Tests?|Test Files|Test Suites):?\s+.*\b\d+ failed\b"),  # jest, vitest
    (_SUMMARY, r"test result: FAILED\."),  # cargo
    (_SUMMARY, r"✖ \d+ problems?"),  # eslint
    (_SUMMARY, r"Found \d+ errors?\b"),  # ruff, tsc
]
# Last: a line that is only a path is eslint's heading for the findings under it.
_PATH = ("path", r"/\S.*$")
_LINE = re.compile("|".join(
    [f"(?P<{name}>{rule})" for name, rule in _STATEFUL]
    + [f"(?P<k{kind}_{n}>{rule})" for n, (kind, rule) in enumerate(_KEEP)]
    + [f"(?P<{_PATH[0]}>{_PATH[1]})"]
))
_GENERIC_WORDS = re.compile(r"(?i)\b(?:errors?|fail(?:ed|s|ures?)?|assert\w*|\w*exception|traceback|panic\w*)\b")
_ZERO_COUNT = re.compile(r"(?i)\b(?:0|no) (?:errors?|fail(?:ed|ures?)|problems)\b")


class FailureScanner(LineScanner):
    """Streams output (``feed`` each read, then ``close``) and keeps the bounded list of lines that matter."""

    # Lines whose effect depends on nothing but themselves are remembered, so a flood of the same
    # line (a retry loop, a repeated warning) costs one set lookup a line.
    _MAX_MEMO = 10_000

    def __init__(self) -> None:
        super().__init__((_KEYS, _PATHS))
        self._kept: list[list[str]] = [[] for _ in range(4)]
        self._seen: set[tuple[int, str]] = set()
        self._memo: set[bytes] = set()
        self._traceback_left = 0
        self._panic: str | None = None
        self._ruff_code: str | None = None
        self._eslint_file: str | None = None
        self._eslint_heading = b""  # the last path line, held: the eslint file once a finding comes
        self._last_line = b""

    def _scan(self, block: bytes, found: list[list[int]]) -> None:
        """Read the lines of a block (the last may lack its newline at the end of the output) that
        hold a key, and those after them while a traceback or a panic is being read."""
        keyed, paths = found
        starts = ([0] if self._traceback_left or self._panic is not None else []) + keyed
        generic: set[int] = set()  # lines read only for their words: they count while no specific one is kept
        if not self._generic_done():
            generic = set(Sieve.of(_GENERIC_KEYS).find(block.lower())[0]).difference(starts)
        starts = sorted({*starts, *generic})
        pos = 0  # where the first line not read yet starts
        for start in starts:
            if start < pos or start >= len(block) or start in generic and self._generic_done():
                continue
            self._hold_heading(block, paths, pos, start)
            if start > pos or self._last_line:  # the line before was not read: it may be ruff's code line
                before = self._last_line if start == 0 else block[block.rfind(b"\n", 0, start - 1) + 1 : start - 1]
                self._ruff_code = self._code(before) if b"-->" in block[start : line_end(block, start)] else None
                self._last_line = b""
            while True:
                end = line_end(block, start)
                self._read(block[start:end][:_MAX_SCANNED_LINE])
                pos = start = end + 1
                if pos >= len(block) or not (self._traceback_left or self._panic is not None):
                    break
        self._hold_heading(block, paths, pos, len(block))
        last = block.rfind(b"\n", 0, len(block) - 1) + 1
        if pos <= last:
            self._last_line = block[last : line_end(block, last)][:_MAX_SCANNED_LINE]

    def _hold_heading(self, block: bytes, paths: list[int], start: int, end: int) -> None:
        """Hold the last path line among the lines from ``start`` to ``end``, none of them read: only an
        eslint finding reads it, and a line not read changes nothing else."""
        if (i := bisect.bisect_left(paths, end)) and paths[i - 1] >= start:
            self._eslint_heading = block[paths[i - 1] : line_end(block, paths[i - 1])][:_MAX_SCANNED_LINE]

    def _generic_done(self) -> bool:
        return len(self._kept[_GENERIC]) >= MAX_LINES or any(self._kept[:_GENERIC])

    def _read(self, raw: bytes) -> None:
        if raw in self._memo and not self._traceback_left and self._panic is None:
            self._ruff_code = None
        elif self._line(decode_line(raw)) and len(self._memo) < self._MAX_MEMO:
            self._memo.add(raw)

    @staticmethod
    def _code(raw: bytes) -> str | None:
        """ruff's "CODE message" when ``raw`` is its code line."""
        m = _LINE.match(decode_line(raw))
        return f"{m.group('code')} {m.group('message')}" if m and m.lastgroup == "ruff" else None

    @property
    def lines(self) -> list[str]:
        specific = self._kept[_ID] + (self._kept[_DETAIL] + self._kept[_SUMMARY])[:MAX_LINES]
        return specific or self._kept[_GENERIC][:MAX_LINES]

    def _keep(self, kind: int, text: str) -> None:
        bucket = self._kept[kind]
        if len(bucket) >= (MAX_ID_LINES if kind == _ID else MAX_LINES):
            return
        text = " ".join(text.split())[:MAX_LINE_CHARS]
        if text and (kind, text) not in self._seen:
            self._seen.add((kind, text))
            bucket.append(text)

    def _line(self, line: str) -> bool:
        """Take in one line; True when what it did depended on nothing but the line."""
        if self._panic is not None:
            # Rust >= 1.73 prints the panic message on the line after "panicked at <place>:".
            self._keep(_DETAIL, f"{self._panic} {line.strip()}")
            self._panic = None
            return False
        if self._traceback_left:
            self._traceback_left -= 1
            if line and not line[0].isspace():
                self._keep(_DETAIL, line)
                self._traceback_left = 0
            return False
        ruff_code, self._ruff_code = self._ruff_code, None
        m = _LINE.match(line)
        rule = m.lastgroup if m else None
        if rule == "traceback":
            self._traceback_left = _MAX_TRACEBACK_LINES
        elif rule == "panic":
            if line.endswith(":"):
                self._panic = line
            else:
                self._keep(_DETAIL, line)
        elif rule == "arrow" and ruff_code:
            self._keep(_ID, f"{m.group('where')}: {ruff_code}")  # type: ignore[union-attr]
        elif rule == "ruff":
            self._ruff_code = f"{m.group('code')} {m.group('message')}"  # type: ignore[union-attr]
        elif rule == "eslint":
            if self._eslint_heading:
                self._eslint_file, self._eslint_heading = decode_line(self._eslint_heading), b""
            where = f"{self._eslint_file}:{m.group('pos')}" if self._eslint_file else m.group("pos")  # type: ignore[union-attr]
            self._keep(_ID, f"{where}: {m.group('severity')} {m.group('finding')}")  # type: ignore[union-attr]
        elif rule and rule.startswith("k"):
            self._keep(int(rule[1 : rule.index("_")]), line)
            return True
        else:
            if rule == "path":
                self._eslint_file, self._eslint_heading = line, b""
            if _GENERIC_WORDS.search(line) and not _ZERO_COUNT.search(line):
                self._keep(_GENERIC, line)
            return rule is None
        return False


# ---- fingerprint ----------------------------------------------------------------------------

# Each group of rules goes with what a line must hold for any of them to match it, looked for first: a sub
# tries its rule at every character of the line, a literal is found in one pass, and most lines hold none.
# (The rules of a group all miss a line its need misses, so none of them changes it for the next.) None: the
# rules begin with a literal, found as fast.
_NORMALISE: list[tuple[re.Pattern[str] | None, list[tuple[re.Pattern[str], str]]]] = [(
    None if need is None else re.compile(need), [(re.compile(rule), repl) for rule, repl in rules]) for need, rules in [
    (r"-\d\d-", [(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "<time>")]),
    # The varying part of a temp path only: the rest still tells failures in different files apart.
    ("pytest-of-", [(r"\S*pytest-of-[^/\s]+/pytest-(?:\d+|current)/[^/\s]+", "<tmp>")]),
    ("/var/folders/|/tmp/", [(r"(?:/private)?/var/folders/[^/\s]+/[^/\s]+/T/[^/\s]+|/tmp/[^/\s]+", "<tmp>")]),
    ("thread '", [(r"^(thread '[^']*') \(\d+\)", r"\1")]),  # cargo test's thread id
    ("0x", [(r"\b0x[0-9a-fA-F]+\b", "0x?")]),
    # Python traceback and tsc positions, and file:line[:col] anywhere.
    (None, [(r", line \d+", ""), (r"\((\d+),(\d+)\)(?=:)", "")]),
    (r":\d", [(r"(?<=[\w)\]>])(?::\d+){1,2}(?=[:\s),]|$)", "")]),
    # Timings and counts: a number, maybe spaces, then the first letter of a unit or of a word counted.
    (r"\d\s*(?i:[dfimpstwx])", [
        (r"(?i)\b(?:in|took)\s+\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds|m)\b", ""),
        (r"\(\s*\d+(?:\.\d+)?\s*(?:ms|s|sec)\s*\)", ""),
        (r"\b\d+(?:\.\d+)?(?:ms|s)\b", ""),
        (r"(?i)\b\d+ (?:passed|skipped|ignored|measured|filtered out|deselected|xfailed|xpassed"
         r"|warnings?|total|todo|pending|pass|skip)\b", "")]),
    (r"\)\s*$", [(r"\s\(\d+\)\s*$", "")]),  # vitest's "(3)" totals
]]


def normalise(line: str) -> str:
    for need, rules in _NORMALISE:
        if need is None or need.search(line):
            for pattern, repl in rules:
                line = pattern.sub(repl, line)
    # Runs of whitespace and separators as one space, none at the ends (str.split's whitespace is what \s takes).
    for separator in ",;|=":
        line = line.replace(separator, " ")
    return " ".join(line.split())


def fingerprint(failure_lines: list[str], exit_code: int | None, timed_out: bool) -> str:
    """sha256 of what failed, with what changes from run to run (timings, temp paths) removed."""
    if exit_code == 0 and not timed_out and not failure_lines:
        return PASS_FINGERPRINT
    # A timeout kills with TERM or KILL depending on the process: the exit code is noise then.
    outcome = "timeout" if timed_out else f"exit {exit_code}"
    items = sorted({n for n in map(normalise, failure_lines) if n})
    return hashlib.sha256("\n".join([outcome, *items]).encode()).hexdigest()
