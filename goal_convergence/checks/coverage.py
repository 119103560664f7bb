"""The total coverage figure in a coverage tool's output.

Understood without configuration: coverage.py and pytest-cov (the TOTAL row), jest/istanbul and
vitest (the ``All files`` row: the ``% Lines`` column when the header is there, else the first,
statements), go (``go tool cover -func``'s ``total:`` line; else the lowest of the per-package
``coverage: N% of statements`` figures: go prints no statement counts, so a weighted total cannot
be computed, and the lowest figure never claims more than the code has), lcov summaries
(``lines......: N%``), cargo-llvm-cov (the TOTAL row's Lines ``Cover`` column) and tarpaulin
(``N% coverage, a/b lines covered``). Anything else: a ``coverageRegex`` whose first group (or
whole match) holds the number.

``CoverageLines`` keeps, while output streams, the few lines these parsers need, so a coverage
table longer than the stored tail still parses.
"""

from __future__ import annotations

import re
from collections import deque

from ..errors import InvalidInput
from ..system.lines import LineScanner, decode_line, line_end
from ..system.sieve import Keys

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_GO_TOTAL = re.compile(r"^total:\s+\(statements\)\s+(\d+(?:\.\d+)?)%", re.M)
_TARPAULIN = re.compile(r"(\d+(?:\.\d+)?)% coverage, \d+/\d+ lines covered")
_LCOV = re.compile(r"^\s*lines\.*:\s+(\d+(?:\.\d+)?)%", re.M)
_LLVM_HEADER = re.compile(r"^Filename\s+Regions\s.*$", re.M)
_TOTAL_ROW = re.compile(r"^TOTAL\s.*%.*$", re.M)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")
_ISTANBUL_HEADER = re.compile(r"^.*\|\s*% Stmts\s*\|.*$", re.M)
_ISTANBUL_ROW = re.compile(r"^\s*All files\s*\|.*$", re.M)
_PYTEST_COV_TOTAL = re.compile(r"Total coverage: (\d+(?:\.\d+)?)%")
_GO_PACKAGE = re.compile(r"coverage: (\d+(?:\.\d+)?)% of statements")

# A streamed line goes to the parsers only if it could be one of the lines above.
_WANTED = re.compile(
    r"coverage|covered|^total:|^\s*lines\.*:|^TOTAL\s|^Filename\s+Regions\s|\|\s*% Stmts|^\s*All files\s*\|"
)
# The lines ``_WANTED`` can match (sieve.py).
_KEYS = Keys(starts=(b"total:", b"lines", b"TOTAL", b"Filename", b"All files"), indented=(b"lines", b"All files"),
             anywhere=(b"cover", b"% Stmts"))


def compile_regex(regex: str) -> re.Pattern[str]:
    try:
        return re.compile(regex, re.M)
    except re.error as e:
        raise InvalidInput(f"coverageRegex {regex!r} is not a valid regular expression ({e}); "
                           "fix it in the goal's condition") from None


def parse_coverage(output: str, regex: str | None = None) -> float | None:
    """The total coverage percentage in ``output``, or None when none could be read."""
    if regex:
        matches = list(compile_regex(regex).finditer(output))
        if not matches:
            return None
        last = matches[-1]
        number = _NUMBER.search(last.group(1) if last.re.groups and last.group(1) else last.group(0))
        return float(number.group()) if number else None
    for parse in (_go_total, _tarpaulin, _lcov, _llvm_cov, _istanbul, _coverage_py, _go_packages):
        value = parse(output)
        if value is not None:
            return value
    return None


def _last(pattern: re.Pattern[str], output: str) -> float | None:
    found = pattern.findall(output)
    return float(found[-1]) if found else None


def _go_total(output: str) -> float | None:
    return _last(_GO_TOTAL, output)


def _tarpaulin(output: str) -> float | None:
    return _last(_TARPAULIN, output)


def _lcov(output: str) -> float | None:
    return _last(_LCOV, output)


def _llvm_cov(output: str) -> float | None:
    headers = _LLVM_HEADER.findall(output)
    rows = _TOTAL_ROW.findall(output)
    if not headers or not rows:
        return None
    names = re.split(r"\s{2,}", headers[-1].strip())
    cells = rows[-1].split()
    if len(names) == len(cells) and "Lines" in names and "Cover" in names[names.index("Lines") :]:
        cell = cells[names.index("Cover", names.index("Lines"))]
        return float(cell.rstrip("%")) if _PERCENT.fullmatch(cell) else None
    # Unknown layout: regions, functions and lines are the first three percentages of the row.
    percents = _PERCENT.findall(rows[-1])
    return float(percents[2]) if len(percents) >= 3 else None


def _istanbul(output: str) -> float | None:
    rows = _ISTANBUL_ROW.findall(output)
    if not rows:
        return None
    column = 1
    headers = _ISTANBUL_HEADER.findall(output)
    if headers:
        names = [c.strip() for c in headers[-1].split("|")]
        column = names.index("% Lines") if "% Lines" in names else 1
    cells = [c.strip() for c in rows[-1].split("|")]
    if column >= len(cells) or not _NUMBER.fullmatch(cells[column]):
        return None
    return float(cells[column])


def _coverage_py(output: str) -> float | None:
    rows = _TOTAL_ROW.findall(output)
    if rows:
        return float(_PERCENT.findall(rows[-1])[-1])
    return _last(_PYTEST_COV_TOTAL, output)


def _go_packages(output: str) -> float | None:
    found = _GO_PACKAGE.findall(output)
    return min(map(float, found)) if found else None


class CoverageLines(LineScanner):
    """Keeps, from streamed output (``feed`` each read, then ``close``), the lines ``parse_coverage``
    needs (bounded)."""

    _MAX = 500

    def __init__(self, regex: str | None = None) -> None:
        # A regex of the user's own has no keys: every line is matched against it.
        super().__init__(() if regex else (_KEYS,))
        self._wanted = compile_regex(regex) if regex else _WANTED
        self._lines: deque[str] = deque(maxlen=self._MAX)
        # Go prints one figure a package, maybe thousands; only the lowest counts.
        self._lowest_go: tuple[float, str] | None = None

    def _scan(self, block: bytes, found: list[list[int]]) -> None:
        if self.keys:
            lines = [block[start : line_end(block, start)] for start in found[0]]
        else:
            lines = block.split(b"\n")
            if block.endswith(b"\n"):
                lines.pop()  # what follows the block's last newline: nothing
        for raw in lines:
            line = decode_line(raw[:4096])
            if not self._wanted.search(line):
                continue
            if self._wanted is _WANTED and (m := _GO_PACKAGE.search(line)) and not _GO_TOTAL.search(line):
                value = float(m.group(1))
                if self._lowest_go is None or value < self._lowest_go[0]:
                    self._lowest_go = (value, line)
                continue
            self._lines.append(line)

    def text(self) -> str:
        lines = list(self._lines)
        if self._lowest_go:
            lines.append(self._lowest_go[1])
        return "\n".join(lines)
