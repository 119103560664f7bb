"""How a goal moved, iteration by iteration: the measures the report charts and `goal status` draws as a
sparkline (conditions passing, failing tests from the census, coverage and a metric's number where measured,
cumulative cost).

Pure: a goal in, numbers out. Failing tests come from each condition's test census, so an iteration whose
runners gave no count has none (None, drawn as a gap), never a guessed zero.
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
    failing_tests: int | None  # summed over the conditions whose census counted failures
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


def failing_tests(it: Iteration) -> int | None:
    counts = [c.census.failed for c in it.conditions if c.census is not None and c.census.failed is not None]
    return sum(counts) if counts else None


def points(goal: Goal) -> list[Point]:
    out, total = [], 0.0
    for it in goal.history:
        dollars = it.maker_cost.dollars + it.oracle_cost.dollars
        total += dollars
        coverage = next((c.coverage for c in it.conditions if c.coverage is not None), None)
        metric = next((c.metric for c in it.conditions if c.metric is not None), None)
        out.append(Point(it.number, sum(c.passed for c in it.conditions), len(it.conditions), failing_tests(it),
                         coverage, dollars, total, kind(it), metric))
    return out


def best(goal: Goal) -> Iteration | None:
    """The iteration that came closest: the most conditions passing, then the fewest failing tests; ties go to
    the latest (the rule `goal rewind --best` follows for the first measure)."""
    ranked = [(sum(c.passed for c in it.conditions), -(failing_tests(it) or 0), i) for i, it in enumerate(goal.history)]
    return goal.history[max(ranked)[2]] if ranked else None


def spark(values: list[float | None], top: float | None = None) -> str:
    """One block character a value, 0 at the bottom and ``top`` (default: the largest) at the top."""
    high = top if top is not None else max((v for v in values if v is not None), default=0)
    if not high:
        return "".join(GAP if v is None else BARS[0] for v in values)
    last = len(BARS) - 1
    return "".join(GAP if v is None else BARS[round(min(max(v, 0), high) / high * last)] for v in values)


def line(goal: Goal, width: int = SPARK_WIDTH) -> str | None:
    """``trend #3-#8: failing tests █▆▄▂▁▁ (12 → 0); passing ▁▁▅▅██ (0/2 → 2/2)``, or None before the
    first iteration."""
    shown = points(goal)[-width:]
    if not shown:
        return None
    first, last = shown[0], shown[-1]
    span = f"#{first.number}" if first is last else f"#{first.number}-#{last.number}"
    parts = []
    failing = [p.failing_tests for p in shown]
    if any(v is not None for v in failing):
        ends = [v for v in failing if v is not None]
        parts.append(f"failing tests {spark(failing)} ({ends[0]} → {ends[-1]})")
    metric = [p.metric for p in shown]
    if any(v is not None for v in metric):
        ends = [v for v in metric if v is not None]
        parts.append(f"metric {spark(metric)} ({ends[0]:g} → {ends[-1]:g})")
    top = max(p.total for p in shown)
    parts.append(f"passing {spark([p.passing for p in shown], top)} "
                 f"({first.passing}/{first.total} → {last.passing}/{last.total})")
    return f"trend {span}: " + "; ".join(parts)
