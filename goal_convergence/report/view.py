"""What a goal's report shows, worked out from the goal: the gauges, the chart, the plan, the timeline's
extras (each iteration's measures, its checkpoint commands) and the iteration that came closest. The
template only lays these out; it computes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ..goals import standings, trend
from ..models import Goal, Iteration, parse_iso, target
from ..rules import budget
from ..system.text import plural
from . import chart, render

# The design's table of stop reasons, in the words a person reads.
MEANING = {
    "converged": "all conditions pass as the goal began them and the oracle agrees",  # meaning() names the judge
    "unfixable": "the oracle judged the goal impossible here (with evidence)",
    "stuck": "no progress: the same failures and no change to the tree, iteration after iteration",
    "timeout": "wall-time budget spent (paused time does not count)",
    "ceiling": "iteration budget spent",
    "budget-exhausted": "dollar (or token) budget spent, maker and oracle together",
    "cancelled": "abandoned by the user",
    "judge-error": "the oracle could not give a valid verdict, repeatedly",
    "tampered": "the goal's terms, state or baseline were edited outside goal-convergence",
    "flagged": "every check passed, but a tripwire flagged how: a person accepts or rejects it",
}
ACCEPTED = "every check passed and a person accepted the run over the tripwires' findings (`goal triage act ID accept`)"
KINDS = {"converge": "converged", "veto": "green, not accepted (oracle veto, integrity guard, open task or judge "
         "error)", "continue": "not done: carry on", "recheck": "checked again", "stop": "stopped"}
HYDRATED_TAIL = 4000  # characters of a condition's output tail the timeline shows (latest iterations only)


def judged_by(goal: Goal, it: Iteration | None = None) -> str:
    """Who gave an iteration's verdict (``Iteration.judged_by``; for iterations recorded before it was kept, the
    goal's judge): a model's name, ``conditions`` or ``command: CMD``."""
    if it is not None and it.judged_by:
        return it.judged_by
    o = goal.oracle
    return o.provider if o.provider == "conditions" else f"command: {o.command}" if o.provider == "command" else o.model


def verdict_title(by: str) -> str:
    """The heading of a verdict, in the words of the judge that gave it."""
    if by == "conditions":
        return "Judged by the conditions alone (no oracle model)"
    return f"The command oracle's verdict ({by.removeprefix('command: ')})" if by.startswith("command: ") else (
        f"Oracle verdict ({by})")


def meaning(goal: Goal) -> str:
    """The stop reason in words, with "the oracle agrees" only where an oracle judged the last iteration."""
    if goal.accepted_at:
        return ACCEPTED
    said = MEANING.get(goal.stop_reason or "", "")
    by = judged_by(goal, goal.history[-1] if goal.history else None)
    if goal.stop_reason == "converged" and by == "conditions":
        return "all conditions pass as the goal began them (the conditions alone judge: no oracle model)"
    if goal.stop_reason == "converged" and by.startswith("command: "):
        return "all conditions pass as the goal began them and the command oracle agrees"
    return said


@dataclass(frozen=True)
class Entry:
    """One iteration on the timeline: the record itself and its measures."""

    it: Iteration
    point: trend.Point
    seconds: float  # from start to end
    diff: str | None  # the checkpoint commands, when it has one
    rewind: str | None
    by: str = ""  # who gave the verdict (judged_by)


def when(stamp: str | None) -> str:
    return parse_iso(stamp).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if stamp else ""


def active_seconds(goal: Goal, now: datetime) -> float:
    """Charged time plus the stretch the clock is running now (as `goal status` counts it)."""
    return goal.spent.active_seconds + budget.running_seconds(goal, now)


def gauges(goal: Goal, now: datetime) -> list[chart.Gauge]:
    b, s = goal.budget, goal.spent
    seconds, limit = active_seconds(goal, now), budget.parse_duration(b.max_duration) if b.max_duration else None
    out = [chart.gauge("iterations", "Iterations", f"{s.iterations} / {b.max_iterations or '∞'}",
                       [("used", s.iterations)], b.max_iterations),
           chart.gauge("time", "Active time", f"{render.duration(seconds)} / {b.max_duration or '∞'}",
                       [("used", seconds)], limit),
           chart.gauge("dollars", "Dollars", f"{render.money(s.dollars)} / "
                       f"{render.money(b.max_dollars) if b.max_dollars else '∞'} "
                       f"(maker {render.money(s.maker_dollars)}, oracle {render.money(s.oracle_dollars)})",
                       [("maker", s.maker_dollars), ("oracle", s.oracle_dollars)], b.max_dollars)]
    if b.max_tokens or s.tokens:
        out.append(chart.gauge("tokens", "Tokens", f"{s.tokens:,} / {f'{b.max_tokens:,}' if b.max_tokens else '∞'} "
                               f"(maker {s.maker_tokens:,}, oracle {s.oracle_tokens:,})",
                               [("maker", s.maker_tokens), ("oracle", s.oracle_tokens)], b.max_tokens))
    return out


def series(goal: Goal, points: list[trend.Point]) -> list[chart.Series]:
    """The chart's panels: only measures some iteration has (a goal without a census draws no test panel)."""
    total = max((p.total for p in points), default=len(goal.stopping_conditions)) or 1
    out = [chart.Series("passing", f"Conditions passing (of {total})", [p.passing for p in points], total,
                        lambda v: f"{v:g}", step=True, whole=True)]
    failing = [p.failing_tests for p in points]
    if any(v is not None for v in failing):
        out.append(chart.Series("failing", f"Failing tests (census of condition {trend.census_label(goal)})", failing,
                                chart.nice_top(max(v for v in failing if v is not None)), lambda v: f"{v:g}",
                                whole=True))
    coverage = [p.coverage for p in points]
    if any(v is not None for v in coverage):
        wanted = next((c.threshold for c in goal.stopping_conditions if c.threshold is not None), None)
        out.append(chart.Series("coverage", "Coverage %", coverage, 100.0, lambda v: f"{v:g}%",
                                threshold=wanted, threshold_label=f"target {wanted:g}%" if wanted is not None else ""))
    metric = [p.metric for p in points]
    measured = next((c for c in goal.stopping_conditions if c.type == "metric" and c.target), None)
    if measured is not None and any(v is not None for v in metric):
        _, wanted = target.parse_target(measured.target or "")
        high = max([v for v in metric if v is not None] + [wanted])
        out.append(chart.Series("metric", f"Metric: {measured.command}", metric, chart.nice_top(high),
                                lambda v: f"{v:g}", threshold=wanted, threshold_label=f"target {measured.target}"))
    top = chart.nice_top(points[-1].cumulative if points else 0)
    out.append(chart.Series("cost", "Cumulative cost, maker and oracle ($)", [p.cumulative for p in points], top,
                            lambda v: render.money(v)))
    return out


def _entry(goal: Goal, it: Iteration, point: trend.Point) -> Entry:
    seconds = max(0.0, (parse_iso(it.ended_at) - parse_iso(it.started_at)).total_seconds())
    has = it.checkpoint is not None
    return Entry(it, point, seconds, f"goal diff {goal.goal_id} {it.number}" if has else None,
                 f"goal rewind {goal.goal_id} {it.number}" if has else None, judged_by(goal, it))


def page(goal: Goal, now: datetime | None = None) -> dict:
    """Everything the report template shows, by name."""
    now = now or datetime.now(UTC)
    points = trend.points(goal)
    closest = trend.best(goal) if goal.state != "converged" else None
    entries = [_entry(goal, it, p) for it, p in zip(goal.history, points, strict=True)]
    return {
        "goal": goal, "meaning": meaning(goal), "kinds": KINDS,
        "tampered": goal.tampered,
        "generated": when(now.isoformat()), "gauges": gauges(goal, now),
        "chart": chart.chart(series(goal, points), [p.kind for p in points], points[0].number if points else 1),
        # what the page's script shows on hover: one row an iteration, in the order of the chart's bands
        "rows": [[p.number, p.passing, p.total, p.failing_tests, p.coverage, round(p.dollars, 6),
                  round(p.cumulative, 6), p.kind, p.metric, render.money(p.dollars), render.money(p.cumulative)]
                 for p in points],
        "entries": entries, "latest": {e.it.number for e in entries[-3:]},
        "attempts": standings.standings(goal),
        "closest": next((e for e in entries if closest is not None and e.it is closest), None),
        "oracle": render.oracle_line(goal).removeprefix("oracle: "),
        "open_tasks": sum(t.state == "open" for t in goal.tasks),
        "verdict_title": verdict_title,
        "summary": f"{plural(goal.spent.iterations, 'iteration')}, {render.duration(active_seconds(goal, now))} "
                   f"active, {render.money(goal.spent.dollars)}",
        "tail_chars": HYDRATED_TAIL,
    }
