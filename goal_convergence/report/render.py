"""Text a person reads: goal lists, status pages, one-line summaries, condition tables and progress."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from ..checks import inference
from ..goals import standings, trend
from ..models import Census, ConditionEvidence, Goal, Integrity, parse_iso
from ..models.goal import HIDDEN
from ..rules import budget, plan
from ..system import clock
from ..system.text import clip, money, plural, state_words, terminal_safe


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def budget_line(goal: Goal, now: datetime | None = None) -> str:
    b, s = goal.budget, goal.spent
    seconds = s.active_seconds  # plus the stretch the clock is running now, not yet charged
    seconds += budget.running_seconds(goal, now or clock.now())
    parts = [f"iterations {s.iterations}/{b.max_iterations or '∞'}",
             f"time {duration(seconds)}/{b.max_duration or '∞'}",
             f"spend {money(s.dollars)}/{money(b.max_dollars) if b.max_dollars else '∞'}"]
    if b.max_tokens:
        parts.append(f"tokens {s.tokens}/{b.max_tokens}")
    return ", ".join(parts)


def condition_lines(goal: Goal) -> list[str]:
    lines = []
    for i, c in enumerate(goal.stopping_conditions):
        extra = f" (>= {c.threshold:g}%)" if c.threshold is not None else f" (target {c.target})" if c.target else ""
        lines.append(f"  [{i}] {c.type}{extra}: {c.command}")
    return lines


def status(goal: Goal, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    lines = [f"{goal.goal_id}: {goal.objective}",
             state_line(goal) + (f", accepted by a person at {goal.accepted_at[:16].replace('T', ' ')} over the "
                                 "tripwires' findings" if goal.accepted_at else ""),
             f"project: {goal.project_root}",
             f"session: {goal.session_id or '(none)'}",
             "conditions:", *condition_lines(goal),
             f"budget: {budget_line(goal, now)}",
             oracle_line(goal)]
    lines += plan_lines(goal)
    lines += integrity_lines(goal)
    lines += checkpoint_lines(goal)
    lines += attempt_lines(goal)
    lines += escalation_lines(goal)
    lines += [f"settings changed {c.at[:16].replace('T', ' ')} by `{c.via}`: "
              + ", ".join(_change(d) for d in c.changes) for c in goal.settings_history[-3:]]
    lines += filter(None, [trend.line(goal)])
    for it in goal.history[-5:]:
        passing = sum(c.passed for c in it.conditions)
        age = duration((now - parse_iso(it.ended_at)).total_seconds())
        lines.append(f"  #{it.number} {it.decision.action:<8} {passing}/{len(it.conditions)} passing, {age} ago"
                     + (f" (attempt {it.attempt})" if it.attempt else ""))
    if goal.last_hint and goal.state != "converged":  # a converged goal's last hint is no longer advice
        lines.append(f"last hint: {goal.last_hint}")
    return "\n".join(lines)


def state_line(goal: Goal) -> str:
    """The goal's state, or "tampered" when its file cannot be trusted: what the file claims is then no news."""
    if goal.tampered:
        return (f"state: TAMPERED (the file says {goal.state}); {goal.tampered}; the next iteration escalates it "
                f"and restores its sealed terms")
    return f"state: {state_words(goal.state, goal.stop_reason)}"


def created(goal: Goal) -> str:
    """What `goal new` prints: the goal, why its checks were chosen when the objective named none, and what will
    not work as the user may expect (creation_notes)."""
    note = inference.guard_note(goal.stopping_conditions)
    return "\n".join([f"created {goal.goal_id}", status(goal), *([note] if note else []), *creation_notes(goal)])


def creation_notes(goal: Goal) -> list[str]:
    """Said when the goal is made, not found out later: a project outside git, a judge that cannot run here."""
    from . import judge

    notes = []
    if goal.base_commit is None:
        b = goal.baseline
        over = f", {len(b.unkept)} of them over the size limits (a change to those is seen but cannot be undone)" \
            if b and b.unkept else ""
        notes.append(f"note: {goal.project_root} is not a git repository (or has no commit yet): the baseline is "
                     f"a copy of {plural(b.files if b else 0, 'check-defining file')}{over}, and there will be no checkpoints "
                     f"(`goal diff`, `goal rewind`). For those, run `git init` and commit, then make the goal again.")
    missing = judge.unavailable(goal)
    return notes + ([f"note: {missing}"] if missing else [])


def oracle_line(goal: Goal) -> str:
    o = goal.oracle
    if o.provider == "conditions":  # no model is asked, so none is named
        return "oracle: conditions (no independent judge: the conditions alone decide)" + _expectation(goal)
    if o.provider == "command":
        return f"oracle: command ({o.command})" + _expectation(goal)
    return f"oracle: {o.provider} ({o.model})" + _expectation(goal)


def _expectation(goal: Goal) -> str:
    # Named, never shown: a maker that reads this (the slash command hands it to the session) must not learn it.
    return "; and a hidden expectation of the maker's last message" if goal.oracle.expect else ""


def _change(d) -> str:
    before, after = (HIDDEN if v else v for v in (d.before, d.after)) if d.setting == "expect" else (d.before, d.after)
    return f"{d.setting} {before} -> {after}"


def checkpoint_lines(goal: Goal) -> list[str]:
    """Whether each iteration's tree is kept, and how to see or restore one."""
    kept = [it.number for it in goal.history if it.checkpoint]
    if goal.checkpoints_off:
        return [f"checkpoints: OFF ({goal.checkpoints_off})"]
    if not kept:
        return []
    return [f"checkpoints: {len(kept)}, the latest of iteration {kept[-1]} (`goal diff {goal.goal_id} N`, "
            f"`goal rewind {goal.goal_id} N`)"]


def attempt_lines(goal: Goal) -> list[str]:
    """The parallel attempts side by side, when more than one has worked the goal."""
    rows = standings.standings(goal)
    if not rows:
        return []
    lines = [f"attempts: {len(rows)}", f"  {'#':<3} {'STATE':<9} {'ITER':>4} {'BEST':>6} {'COST':>9}  LAST REASON"]
    for r in rows:
        best = f"{standings.passing(r.best)}/{len(r.best.conditions)}"
        lines.append(f"  {r.attempt:<3} {r.state:<9} {len(r.iterations):>4} {best:>6} {money(r.dollars):>9}  "
                     f"{clip(r.reason.replace(chr(10), ' '), 70)}")
    return lines


def plan_lines(goal: Goal) -> list[str]:
    """The plan, open tasks first, and the confidence the oracle must reach, when the goal has them."""
    lines = [f"min confidence: {goal.min_confidence:g} (a converged verdict less sure than that is a veto)"
             ] if goal.min_confidence is not None else []
    if goal.tasks:
        done = [t for t in goal.tasks if t.state == "done"]
        lines.append(f"plan: {len(goal.tasks) - len(done)} open, {len(done)} done")
        lines += [f"  [{'x' if t.state == 'done' else ' '}] {t.id} {t.title}"
                  + (f" (oracle, #{t.added_in})" if t.added_by == "oracle" else "")
                  + (f" (done #{t.done_in})" if t.done_in else "")
                  for t in sorted(goal.tasks, key=lambda t: t.state != "open")]
    return lines


def open_task_lines(goal: Goal) -> list[str]:
    """What the maker reads about the plan: each open task, and that the goal waits for them."""
    still = plan.open_tasks(goal.tasks)
    if not still:
        return []
    return (["Open tasks of the plan (the goal converges only once the oracle finds each one done):"]
            + [f"  - {t.id} {t.title}" for t in still])


def escalation_lines(goal: Goal) -> list[str]:
    """Why the goal stopped and where its triage item is, then the detail as a sentence of its own."""
    e = goal.escalation
    if e is None:
        return []
    line = f"escalated: stop reason {e.stop_reason}" + (f" (blocker: {e.blocker.replace('_', ' ')})" if e.blocker else "")
    if e.triage_id:
        line += f"; triage item {e.triage_id} (`goal triage show {e.triage_id}`)"
    detail = e.detail.strip()
    return [line] + ([f"  {detail[0].upper()}{detail[1:]}" + ("" if detail.endswith(".") else ".")] if detail else [])


def integrity_lines(goal: Goal) -> list[str]:
    """The guard: whether it enforces, the census at the start and last, and what changed in the checks."""
    if goal.baseline is None:
        return ["integrity: no baseline (a goal made before goal-convergence 0.2): its checks are not verified"]
    b = goal.baseline
    how = ("reported, NOT enforced (--tests-may-change: the objective is to change tests)" if goal.tests_may_change
           else "enforced: a green run converges only if the original tests still run and pass")
    last = goal.history[-1].integrity if goal.history else None
    kept = f"  baseline: {plural(b.files, 'check-defining file')} kept" + (f"; {b.note}" if b.note else "")
    return [f"integrity: {how}", kept, *census_lines(b.census, last, "  "), *(guard_lines(last, "  ") if last else [])]


def census_lines(start: list[Census | None], guard: Integrity | None, indent: str = "") -> list[str]:
    """Each condition's test census at the start and, when there is one, at the last check."""
    lines = []
    for i, before in enumerate(start):
        now = guard.census[i] if guard and i < len(guard.census) else None
        start = before.summary if before else "unknown (no census from this runner)"
        lines.append(f"{indent}tests [{i}] at start: {start}" + (f"; last: {now.summary}" if now else ""))
    return lines


def guard_lines(guard: Integrity, indent: str = "") -> list[str]:
    lines = [f"{indent}{what}: {', '.join(paths[:10])}" + (" ..." if len(paths) > 10 else "")
             for what, paths in (("changed", guard.changed), ("deleted", guard.deleted), ("added", guard.added))
             if paths]
    p = guard.pristine
    if p is not None:
        lines.append(f"{indent}pristine re-run: {'passed' if p.passed else 'FAILED'} in {p.duration_seconds:.1f}s"
                     + (f" ({p.failures[0]})" if p.failures else ""))
    elif guard.pristine_note:
        lines.append(f"{indent}pristine re-run: {guard.pristine_note}")
    # a detail that names its subject already (a test id, a file) says it once
    lines += [f"{indent}issue: {i.kind}: " + (i.detail if i.subject in i.detail else f"{i.subject}: {i.detail}")
              + (f" (since #{i.since})" if i.since else "") for i in guard.issues[:10]]
    lines += [f"{indent}finding: {i.kind}: {i.detail}" for i in guard.findings[:10]]
    lines += [f"{indent}note: {note}" for note in guard.notes[:5]]
    return lines


def iteration_line(outcome) -> str:
    """One live progress line per iteration of `goal run`."""
    goal, it, d = outcome.goal, outcome.iteration, outcome.decision
    passing = f"{sum(c.passed for c in it.conditions)}/{len(it.conditions)} passing" if it else "no checks"
    what = d.action if d.action != "stop" else f"stop: {d.stop_reason}"
    return ((f"attempt {it.attempt}: " if it and it.attempt else "") + f"iteration {goal.spent.iterations}/{goal.budget.max_iterations or '∞'}: {passing}, "
            f"{money(goal.spent.dollars)}, {duration(goal.spent.active_seconds)} active -> {what}")


def run_summary(goal: Goal, stop: str, note: str | None = None) -> str:
    lines = [f"{goal.goal_id}: {stop} after {plural(goal.spent.iterations, 'iteration')}, "
             f"{duration(goal.spent.active_seconds)} active, {money(goal.spent.dollars)}"]
    lines += [note] if note else []
    if goal.escalation and goal.escalation.triage_id:
        lines.append(f"escalated: triage item {goal.escalation.triage_id} (`goal triage show {goal.escalation.triage_id}`)")
    if stop not in ("converged",) and goal.last_hint:
        lines.append(f"last hint: {goal.last_hint}")
    return "\n".join(lines)


def triage_table(items) -> str:
    if not items:
        return "the triage inbox is empty"
    rows = [f"{'ID':<12} {'STATUS':<9} {'REASON':<16} {'GOAL':<13}  OBJECTIVE"]
    for i in items:
        reason = i.stop_reason or i.source
        rows.append(f"{i.triage_id:<12} {i.status:<9} {reason:<16} {i.goal_id or '-':<13}  "
                    f"{i.objective.replace(chr(10), ' ')[:60]}")
    return "\n".join(rows)


def triage_item(item) -> str:
    lines = [f"{item.triage_id} ({item.status}, from {item.source}): {item.objective}",
             f"project: {item.project_root}"]
    if item.goal_id:
        lines.append(f"goal: {item.goal_id}, stopped: {item.stop_reason}"
                     + (f", blocker: {item.blocker}" if item.blocker else ""))
    lines.append(f"spent: {plural(item.iterations, 'iteration')}, {money(item.spent.dollars)}, "
                 f"{duration(item.spent.active_seconds)} active")
    lines += [f"failing: {c.command}: {c.first_failure or ''}" for c in item.failing_conditions]
    lines += [f"reason: {r}" for r in item.reasons]
    if item.integrity:
        lines.append("integrity:" + ("" if item.integrity.enforced
                                     else " (reported, not enforced: --tests-may-change)"))
        lines += census_lines(item.start_census, item.integrity, "  ") + guard_lines(item.integrity, "  ")
    if item.hint:
        lines.append(f"last hint: {item.hint}")
    if item.best_checkpoint:
        best = item.best_checkpoint
        lines.append(f"best checkpoint: iteration {best.iteration} ({best.passing}/{best.conditions} conditions "
                     f"passing); restore it with `{best.restore}`")
    lines += [f"  attempt {a.attempt}: best iteration {a.iteration} ({a.passing}/{a.conditions} passing); restore it "
              f"with `{a.restore}`" for a in item.attempts]
    if item.stop_reason == "flagged":
        lines.append(f"next: read the findings, then `goal triage act {item.triage_id} accept` to accept the run as "
                     f"done, `goal triage act {item.triage_id}` to send the maker back, or `goal abandon "
                     f"{item.goal_id}`")
    else:
        lines.append(f"next: `goal triage act {item.triage_id}` (with budget flags to raise limits) or "
                     f"`goal triage dismiss {item.triage_id}`")
    return "\n".join(lines)


def _measure(e: ConditionEvidence) -> str:
    """What a run measured: coverage, a metric's number, or nothing."""
    return f"{e.coverage:.1f}%" if e.coverage is not None else f"{e.metric:g}" if e.metric is not None else "-"


def _result(e: ConditionEvidence) -> str:
    return "TIMEOUT" if e.timed_out else "PASS" if e.passed else "FAIL"


def evidence_table(evidence: list[ConditionEvidence]) -> str:
    """A plain-text table: condition, result, duration, coverage, first failure line."""
    header = ("#", "condition", "result", "duration", "measure", "first failure")
    rows = [header]
    for e in evidence:
        first = e.first_failure
        rows.append((str(e.index), clip(f"{e.type}: {e.command}", 48), _result(e), f"{e.duration_seconds:.2f}s",
                     _measure(e), clip(first, 100) if not e.passed else ""))
    widths = [max(len(r[c]) for r in rows) for c in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    passed = sum(e.passed for e in evidence)
    lines.append(f"{passed}/{len(evidence)} conditions pass")
    return "\n".join(line.rstrip() for line in lines)


class LiveProgress:
    """An ``on_progress`` for ``conditions.run_conditions`` that redraws one line a condition, with a
    spinner and its elapsed time, on a terminal, once a condition has run for a second (a quicker run is
    told by the line that follows it). It draws nothing when the stream (stderr by default) is not a
    terminal. The standard library's escapes do it: a spinner and a clock are not worth a dependency
    (``python -X importtime``: rich.progress takes about 47 ms, five times the hooks' whole fast path)."""

    _SPIN = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    AFTER = 1.0  # seconds a condition runs before the display appears

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._drawn = 0
        self._turns = 0  # frames drawn: the spinner moves one step a frame
        self._MARKS: dict[bool | None, str] = {None: self._SPIN[0], True: "✓", False: "✗"}
        try:
            self.enabled = self._stream.isatty()
        except (AttributeError, ValueError):
            self.enabled = False

    def __call__(self, states: Sequence[tuple[int, str, float, bool | None]]) -> None:
        if not self.enabled or not (self._drawn or any(s[2] >= self.AFTER and s[3] is None for s in states)):
            return
        self._MARKS[None] = self._SPIN[self._turns % len(self._SPIN)]
        self._turns += 1
        # One line each, never wrapped: the cursor moves back up by the number of lines drawn.
        width = max(20, shutil.get_terminal_size().columns - 1)
        out = [f"\x1b[{self._drawn}F"] if self._drawn else []
        for index, command, elapsed, passed in states:
            line = terminal_safe(f"{self._MARKS[passed]} [{index}] {elapsed:6.1f}s  {command}")
            out.append("\x1b[2K" + clip(line, width) + "\n")
        # A progress display that cannot write (closed terminal) must not stop the check itself.
        with contextlib.suppress(OSError, ValueError):
            self._stream.write("".join(out))
            self._stream.flush()
            # Once every condition has its result the lines stay as they are, and the next run draws below
            # them (and below whatever was printed in between) instead of over them.
            self._drawn = 0 if all(s[3] is not None for s in states) else len(states)
