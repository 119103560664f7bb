"""What counts as moving: a metric's number against its target, and the checks and tests that passed before and
fail now (regressions, blamed on the iteration that broke them). Pure: the goal's history and this iteration's
evidence in, findings out; rules/decide.py turns them into the hint and the stuck rule."""

from __future__ import annotations

from collections.abc import Callable, Container

from ..models import ConditionEvidence, Goal, Iteration, Regression, target

REGRESSIONS_SHOWN = 5
FILES_SHOWN = 5


def _metrics(goal: Goal) -> list[int]:
    return [i for i, c in enumerate(goal.stopping_conditions) if c.type == "metric" and c.target]


def _value(it_conditions: list[ConditionEvidence], index: int) -> float | None:
    return next((c.metric for c in it_conditions if c.index == index), None)


def metric_stall(goal: Goal, found: list[ConditionEvidence]) -> int:
    """How many iterations in a row, this one included, moved no failing metric past its best before them and
    passed no more conditions than before them; 0 when no metric fails now."""
    failing = [i for i in _metrics(goal) if not next((c.passed for c in found if c.index == i), True)]
    if not failing:
        return 0
    runs = [it.conditions for it in goal.history] + [found]
    stall = 0
    for k in range(len(runs) - 1, 0, -1):
        before = runs[:k]
        if _moved(goal, before, runs[k], failing):
            break
        stall += 1
    return stall


def _moved(goal: Goal, before: list[list[ConditionEvidence]], now: list[ConditionEvidence], metrics: list[int]) -> bool:
    if sum(c.passed for c in now) > max(sum(c.passed for c in run) for run in before):
        return True
    for i in metrics:
        value, goal_target = _value(now, i), goal.stopping_conditions[i].target
        seen = [v for v in (_value(run, i) for run in before) if v is not None]
        assert goal_target is not None
        if value is not None and (not seen or all(target.better(value, v, goal_target) for v in seen)):
            return True
    return False


def metric_worse(goal: Goal, found: list[ConditionEvidence]) -> str:
    """``The metric `cmd` got worse: 12 → 15 (target <= 0).`` for each metric that moved the wrong way since the
    last iteration, or ''."""
    if not goal.history:
        return ""
    said = []
    for i in _metrics(goal):
        now, last = _value(found, i), _value(goal.history[-1].conditions, i)
        goal_target = goal.stopping_conditions[i].target
        assert goal_target is not None
        if now is not None and last is not None and target.better(last, now, goal_target):
            said.append(f"The metric `{goal.stopping_conditions[i].command}` got worse: {target.shown(last)} → "
                        f"{target.shown(now)} (target {goal_target}).")
    return " ".join(said)


def regressions(goal: Goal, found: list[ConditionEvidence], changed_now: list[str], number: int,
                began_with: Callable[[int], Container[str]]) -> list[Regression]:
    """The conditions and tests that pass in an earlier iteration and fail in this one (``number``), each with
    the first failing iteration after its last pass and the files that iteration changed (``changed_now``: this
    one's). A test counts as passing in an iteration whose test census named ids, when it was among the tests
    condition's census began with (``began_with(index)``, read only when needed) and not among the failures.
    Tests that never passed are no regressions."""
    history = [it for it in goal.history if it.number < number]
    found_by = {c.index: c for c in found}
    out: list[Regression] = []
    for index, now in sorted(found_by.items()):
        if now.passed:
            continue
        passes = [it for it in history if _condition(it, index) is not None and _condition(it, index).passed]
        if passes:
            out.append(_blame(goal, history, index, None, passes[-1].number, changed_now, number))
            continue
        started = _LazyIds(began_with, index)
        for test in now.failed_tests:
            seen = [it for it in history if _test_passed(it, index, test, started)]
            if seen:
                out.append(_blame(goal, history, index, test, seen[-1].number, changed_now, number))
    return out


def _condition(it: Iteration, index: int) -> ConditionEvidence | None:
    return next((c for c in it.conditions if c.index == index), None)


class _LazyIds:
    """The ids a condition's census began with, read the first time one is asked about."""

    def __init__(self, read: Callable[[int], Container[str]], index: int) -> None:
        self._read, self._index, self._ids = read, index, None

    def __contains__(self, test: object) -> bool:
        if self._ids is None:
            self._ids = self._read(self._index)
        return test in self._ids


def _test_passed(it: Iteration, index: int, test: str, started: Container[str]) -> bool:
    ran = _condition(it, index)
    census = ran.census if ran is not None else None
    return (ran is not None and census is not None and census.ids > 0 and test not in ran.failed_tests
            and test in started)


def _blame(goal: Goal, history: list[Iteration], index: int, test: str | None, passed_at: int,
           changed_now: list[str], number: int) -> Regression:
    after = [it for it in history if it.number > passed_at]
    since = after[0] if after else None
    files = (since.checkpoint.changed if since and since.checkpoint else []) if since else changed_now
    return Regression(condition=index, test=test, passed_at=passed_at, since=since.number if since else number,
                      files=files[:20])


def regression_hint(goal: Goal, found: list[Regression]) -> str:
    """``Regressions: `pytest -q` passed at iteration 3 and fails since iteration 4, which changed src/parser.py
    (`goal diff ID 4`).``, or ''."""
    if not found:
        return ""
    parts = []
    for r in found[:REGRESSIONS_SHOWN]:
        what = f"test {r.test}" if r.test else f"`{goal.stopping_conditions[r.condition].command}`"
        files = ", ".join(r.files[:FILES_SHOWN]) + (f" and {len(r.files) - FILES_SHOWN} more"
                                                      if len(r.files) > FILES_SHOWN else "")
        changed = f", which changed {files}" if files else ""
        parts.append(f"{what} passed at iteration {r.passed_at} and fails since iteration {r.since}{changed} "
                     f"(`goal diff {goal.goal_id} {r.since}`)")
    more = len(found) - REGRESSIONS_SHOWN
    return "Regressions: " + "; ".join(parts) + (f"; and {more} more" if more > 0 else "") + "."
