"""The stress suite's tally: each attack's attempts, how many broke an invariant, and how many of those
lost (or double-counted) spend or iterations, leaked data or ran a planted program. Tests record their
rows in ``user_properties``, which pytest-xdist carries back to the controller, and this plugin prints
the table at the end of the run (registered in tests/conftest.py so the controller loads it too)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from .invariants import Lost

PROPERTY = "stress-tally"


class Tally:
    """Attempts at one attack. An attempt that breaks an invariant is counted and the run goes on, so
    the table says how often; ``assert_clean`` then fails the test with every problem seen."""

    def __init__(self, attack: str) -> None:
        self.attack = attack
        self.tried = self.failed = self.lost = 0
        self.problems: list[str] = []

    @contextlib.contextmanager
    def attempt(self, what: str) -> Iterator[None]:
        self.tried += 1
        try:
            yield
        except AssertionError as exc:
            self.failed += 1
            self.lost += isinstance(exc, Lost)
            self.problems.append(f"{what}: {str(exc).strip()[:600]}")


def assert_clean(*tallies: Tally) -> None:
    """Fails the test with every problem its attacks met (after all of them ran, so the table is whole)."""
    report = []
    for t in tallies:
        assert t.tried, f"{t.attack}: no attempt ran"
        if t.problems:
            shown = t.problems[:30] + ([f"... and {len(t.problems) - 30} more"] if len(t.problems) > 30 else [])
            report.append(f"{t.attack}: {t.failed} of {t.tried} attempts broke an invariant ({t.lost} lost spend, "
                          f"iterations or data):\n  " + "\n  ".join(shown))
    if report:
        pytest.fail("\n".join(report), pytrace=False)


@pytest.fixture
def tally(request) -> Iterator:
    """``tally(attack)`` makes a Tally whose row is reported whatever becomes of the test."""
    made: list[Tally] = []

    def make(attack: str) -> Tally:
        made.append(Tally(attack))
        return made[-1]

    yield make
    for t in made:
        request.node.user_properties.append((PROPERTY, [t.attack, t.tried, t.failed, t.lost]))


# Filled by the process that prints the summary (the xdist controller, or the only process with -n 0).
_ROWS: dict[str, list[int]] = {}


def pytest_runtest_logreport(report) -> None:
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == PROPERTY:
            attack, tried, failed, lost = value
            row = _ROWS.setdefault(attack, [0, 0, 0])
            row[0], row[1], row[2] = row[0] + tried, row[1] + failed, row[2] + lost


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    rows = _ROWS
    if not rows:
        return
    terminalreporter.section("stress: attacks (tried, failed, lost)")
    width = max(len("attack"), *(len(a) for a in rows))
    terminalreporter.write_line(f"| {'attack':<{width}} | tried | failed | lost |")
    terminalreporter.write_line(f"|{'-' * (width + 2)}|------:|-------:|-----:|")
    for attack in sorted(rows):
        tried, failed, lost = rows[attack]
        terminalreporter.write_line(f"| {attack:<{width}} | {tried:>5} | {failed:>6} | {lost:>4} |")
