"""How a goal moved, iteration by iteration: the measures the report charts and `goal status` draws as a
sparkline (conditions passing, failing tests from the census, coverage and a metric's number where measured,
cumulative cost).

Pure: a goal in, numbers out. Failing tests come from ONE condition's test census: a coverage condition
often runs the very tests a test condition runs, and adding their censuses would count each failing test
twice. The census counted is that of the condition that ran the most tests at the start (the first on ties;
without a start census, the first condition that has one), and every view names it (``census_label``). An
iteration whose runner gave no count has none (None, drawn as a gap), never a guessed zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Goal, Iteration

BARS = "▁▂▃▄▅▆▇█"
GAP = "·"  # an iteration with nothing measured
SPARK_WIDTH = 30  # the latest iterations `goal status` draws


@dataclass(frozen=True)
class Point:
    number: int
    passing: int
    total: int
    failing_tests: int | None  # from the census of one condition (census_index), never summed over several
    coverage: float | None  # the first condition that measured it
    dollars: float  # this iteration's, maker and oracle
    cumulative: float  # the history's, up to and including this iteration
    kind: str  # converge, stop, veto (every condition passed, not converged), recheck or continue
    metric: float | None = None  # the first metric condition's number (checks/metric.py)


def kind(it: Iteration) -> str:
    action = it.decision.action
    if action == "continue" and it.conditions and all(c.passed for c in it.conditions):
        return "veto"  # green, yet refused: by the oracle, the integrity guard or an open task
    return action


def census_index(goal: Goal) -> int | None:
    """The condition whose census counts the failing tests: the one whose start census ran the most tests,
    else the first whose census some iteration has; None when no condition has a census."""
    start = goal.baseline.census if goal.baseline else []
    ran = [(c.ran or 0, -i) for i, c in enumerate(start) if c is not None]
    if ran:
        return -max(ran)[1]
    return next((c.index for it in goal.history for c in it.conditions if c.census is not None), None)


def census_label(goal: Goal) -> str:
    """Which census the failing tests are from, as the views say it: ``[0]`` (or nothing, with none)."""
    index = census_index(goal)
    return "" if index is None else f"[{index}]"


def failing_tests(it: Iteration, index: int | None) -> int | None:
    """The failing tests condition ``index``'s census counted in this iteration, if it counted them."""
    found = next((c.census for c in it.conditions if c.index == index and c.census is not None), None)
    return found.failed if found is not None else None


def points(goal: Goal) -> list[Point]:
    out, total, index = [], 0.0, census_index(goal)
    for it in goal.history:
        dollars = it.maker_cost.dollars + it.oracle_cost.dollars
        total += dollars
        coverage = next((c.coverage for c in it.conditions if c.coverage is not None), None)
        metric = next((c.metric for c in it.conditions if c.metric is not None), None)
        out.append(Point(it.number, sum(c.passed for c in it.conditions), len(it.conditions), failing_tests(it, index),
                         coverage, dollars, total, kind(it), metric))
    return out


def best(goal: Goal) -> Iteration | None:
    """The iteration that came closest: the most conditions passing, then the fewest failing tests; ties go to
    the latest (the rule `goal rewind --best` follows for the first measure)."""
    index = census_index(goal)
    ranked = [(sum(c.passed for c in it.conditions), -(failing_tests(it, index) or 0), i)
              for i, it in enumerate(goal.history)]
    return goal.history[max(ranked)[2]] if ranked else None


def spark(values: list[float | None], top: float | None = None) -> str:
    """One block character a value, 0 at the bottom and ``top`` (default: the largest) at the top."""
    high = top if top is not None else max((v for v in values if v is not None), default=0)
    if not high:
        return "".join(GAP if v is None else BARS[0] for v in values)
    last = len(BARS) - 1
    return "".join(GAP if v is None else BARS[round(min(max(v, 0), high) / high * last)] for v in values)


def line(goal: Goal, width: int = SPARK_WIDTH) -> str | None:
    """``trend #3-#8: failing tests [0] █▆▄▂▁▁ (12 → 0); passing ▁▁▅▅██ (0/2 → 2/2)``, or None before the
    first iteration (``[0]``: the condition whose census is counted)."""
    shown = points(goal)[-width:]
    if not shown:
        return None
    first, last = shown[0], shown[-1]
    span = f"#{first.number}" if first is last else f"#{first.number}-#{last.number}"
    parts = []
    failing = [p.failing_tests for p in shown]
    if any(v is not None for v in failing):
        ends = [v for v in failing if v is not None]
        parts.append(f"failing tests {census_label(goal)} {spark(failing)} ({ends[0]} → {ends[-1]})")
    metric = [p.metric for p in shown]
    if any(v is not None for v in metric):
        ends = [v for v in metric if v is not None]
        parts.append(f"metric {spark(metric)} ({ends[0]:g} → {ends[-1]:g})")
    top = max(p.total for p in shown)
    parts.append(f"passing {spark([p.passing for p in shown], top)} "
                 f"({first.passing}/{first.total} → {last.passing}/{last.total})")
    return f"trend {span}: " + "; ".join(parts)
