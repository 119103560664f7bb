"""Lifetime budgets: iterations, active wall time, dollars and tokens, maker and oracle together.

Active time runs from ``active_since``. A `goal run` that is killed leaves it behind, so the
runner's claim (runner.py) carries its last sign of life, refreshed every few seconds: whoever
charges the clock after that run has gone quiet charges it only up to there, never the gap.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from ..errors import InvalidInput
from ..models import DURATION_PATTERN, Goal, StopReason, now_iso, parse_iso
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
    elapsed = (end - parse_iso(goal.active_since)).total_seconds()
    goal.spent.active_seconds = goal.spent.active_seconds + max(0.0, elapsed)
    goal.active_since = now_iso(now)


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
