"""Lifetime budgets: iterations, active wall time, dollars and tokens, maker and oracle together.

Active time runs from ``active_since``. A `goal run` that is killed leaves it behind, so the
runner's claim (runner.py) carries its last sign of life, refreshed every few seconds: whoever
charges the clock after that run has gone quiet charges it only up to there, never the gap.

Time is measured on the monotonic clock wherever it can be: ``active_mark`` holds its reading when the
clock started, and a ``now`` read in the same boot (system/clock.py's Instant) is compared with that,
so a wall clock that steps forward or back while the goal runs is neither charged nor lost. Only a
span across a reboot or between hosts falls back to the wall clock.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from ..errors import InvalidInput
from ..models import DURATION_PATTERN, ClockMark, Goal, StopReason, now_iso, parse_iso
from ..system import orphans

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
# A runner refreshes its claim this often, and one not heard from for STALE_SECONDS is taken for dead.
HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = 30.0


def parse_duration(text: str) -> int:
    """Seconds in a duration like "90s", "30m", "2h" or "1h30m"."""
    if not isinstance(text, str) or len(text) < 2 or not re.fullmatch(DURATION_PATTERN, text):
        raise InvalidInput(f"{text!r} is not a duration; write it like 90s, 30m, 2h or 1h30m")
    return sum(int(n) * _UNITS[u] for n, u in re.findall(r"([0-9]+)([dhms])", text))


def accrue(goal: Goal, now: datetime) -> None:
    """Charge the active time since ``active_since`` to the goal and restart the clock at ``now``:
    up to ``now``, or to the last sign of life of a runner gone quiet. The runner's own writes are
    its signs of life."""
    runner = goal.runner
    if runner is not None and (runner.pid, runner.host, runner.started) == orphans.me():
        runner.seen_at = now_iso(now)
    if goal.active_since is None:
        return
    end = now
    if runner is not None and now - parse_iso(runner.seen_at) > timedelta(seconds=STALE_SECONDS):
        end = parse_iso(runner.seen_at)
    goal.spent.active_seconds = goal.spent.active_seconds + max(0.0, _span(goal, end))
    start_clock(goal, now)


def _span(goal: Goal, end: datetime) -> float:
    """The seconds from ``active_since`` to ``end``: on the monotonic clock when both were read in one boot."""
    mark, mono, boot = goal.active_mark, getattr(end, "mono", None), getattr(end, "boot", None)
    if mark is not None and mark.since == goal.active_since and mono is not None and boot == mark.boot:
        return mono - mark.at
    return (end - parse_iso(goal.active_since or now_iso(end))).total_seconds()


def clock_started(goal: Goal, now: datetime) -> datetime | None:
    """When the active clock started, on the wall clock as it reads at ``now``: ``active_since`` moved by
    whatever step the wall clock made since (the monotonic mark tells), None when it is not running."""
    return now - timedelta(seconds=_span(goal, now)) if goal.active_since else None


def running_seconds(goal: Goal, now: datetime) -> float:
    """The stretch the active clock has run since it was last charged (as ``accrue`` would charge it now)."""
    return max(0.0, _span(goal, now)) if goal.active_since else 0.0


def run_clock(goal: Goal, now: datetime, running: bool) -> None:
    """Stop the active clock, or start it at ``now`` unless it runs already."""
    if not running:
        goal.active_since = goal.active_mark = None
    elif goal.active_since is None:
        start_clock(goal, now)


def start_clock(goal: Goal, now: datetime) -> None:
    """Start the active clock at ``now`` (its monotonic reading marked when it has one)."""
    goal.active_since = now_iso(now)
    mono, boot = getattr(now, "mono", None), getattr(now, "boot", None)
    goal.active_mark = ClockMark(since=goal.active_since, boot=boot, at=mono) if mono is not None and boot else None


def hold_to_tokens(goal: Goal, dearest_output: float) -> None:
    """Give a goal with a dollar budget and no token budget the tokens its dollars left buy at
    ``dearest_output`` (USD per million, the dearest price known): spend that no price counts (a model
    missing from the table) must still end the loop, and in tokens it can be counted."""
    b = goal.budget
    if b.max_tokens is None and b.max_dollars is not None:
        left = max(0.0, b.max_dollars - goal.spent.dollars)
        b.max_tokens = max(1, goal.spent.tokens + int(left / dearest_output * 1e6))


def exhausted(goal: Goal, active_seconds: float | None = None) -> StopReason | None:
    """The stop reason of the first limit the spent counters have reached, if any."""
    b, s = goal.budget, goal.spent
    seconds = s.active_seconds if active_seconds is None else active_seconds
    if b.max_dollars is not None and s.dollars >= b.max_dollars:
        return "budget-exhausted"
    if b.max_tokens is not None and s.tokens >= b.max_tokens:
        return "budget-exhausted"
    if b.max_duration is not None and seconds >= parse_duration(b.max_duration):
        return "timeout"
    if b.max_iterations is not None and s.iterations >= b.max_iterations:
        return "ceiling"
    return None


def seconds_left(goal: Goal) -> float | None:
    """The wall time a maker's turn may still take (at least a second), None without a time limit."""
    if goal.budget.max_duration is None:
        return None
    return max(1.0, parse_duration(goal.budget.max_duration) - goal.spent.active_seconds)


def dollars_left(goal: Goal) -> float | None:
    if goal.budget.max_dollars is None:
        return None
    return goal.budget.max_dollars - goal.spent.dollars
