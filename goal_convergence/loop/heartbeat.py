"""The heartbeat: run a project's checks and turn each failure into one goal, or one triage item.

The checks are the project's configured ones (config.py), else what inference finds the project
can run (tests, lint, build; coverage only when configured, since only a setting can say its
threshold). They run with the conditions' own runner, so a failure has the same fingerprint here
as in a goal's evidence.

A failure is known by its project, its check's command and its fingerprint. Seen again while its
goal is open (active, paused) or its triage item is open, that one is updated (count, last seen);
a goal that escalated or was abandoned, or an item that was dismissed, is a person's call already:
it is reported as known and never re-opened. Anything else is new, and at most
``max_new_per_hour`` new goals and items are made per project in any hour; the rest are skipped
(reported, not recorded) and come back at the next heartbeat.

With ``run`` it then works on every open heartbeat goal of the project that no session holds, so an
hourly plain heartbeat and a nightly ``--run`` share the work. Those goals are judged by the oracle
the settings (or ``--oracle``) name at that run: a goal made before an oracle could run here waits,
open, and is worked on once one is set.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from ..checks import conditions, inference
from ..errors import InvalidInput, OracleUnavailable, UsageError
from ..goals import creation, lookup, specs, triage
from ..models import (ConditionEvidence, FailingCondition, Goal, HeartbeatMark, OracleConfig, StoppingCondition,
                      TriageItem, now_iso, parse_iso)
from ..report import render
from ..storage import config
from ..storage.config import HeartbeatConfig
from ..storage.store import Store
from . import makers, runner, wave
from .makers import Maker

RATE_WINDOW = timedelta(hours=1)
INFERRED_KINDS = ("test_pass", "lint_clean", "build_pass")
_OPEN = ("active", "paused", "open")
_KNOWN = ("escalated", "failed", "dismissed")

FindingOutcome = Literal["created", "updated", "known", "skipped"]


@dataclass
class Tracked:
    """A goal or triage item a heartbeat made, as far as deduplication cares."""

    kind: Literal["goal", "triage"]
    item_id: str
    command: str
    fingerprint: str
    state: str  # the goal's state or the item's status
    count: int


@dataclass
class Finding:
    """One failing check and what the heartbeat did about it."""

    condition: StoppingCondition
    fingerprint: str
    first_failure: str
    outcome: FindingOutcome = "skipped"
    tracked: Tracked | None = None  # the goal or item it was recorded on (none when skipped)

    def dump(self) -> dict:
        t = self.tracked
        return {"outcome": self.outcome, "kind": t and t.kind, "id": t and t.item_id, "state": t and t.state,
                "count": t.count if t else 0, "type": self.condition.type, "command": self.condition.command,
                "fingerprint": self.fingerprint, "firstFailure": self.first_failure}


@dataclass
class Report:
    project: str
    mode: str
    checks: int
    max_new_per_hour: int
    findings: list[Finding] = field(default_factory=list)
    runs: list[runner.RunResult] = field(default_factory=list)
    blocked: str | None = None  # why --run could not work on the goals (no oracle can judge them)
    wave: wave.WaveResult | None = None  # with --parallel K > 1: the wave that worked them

    @property
    def changed(self) -> bool:
        """Worth a line in a cron mail: something new was made, skipped, run, or could not be run."""
        return bool(self.runs or self.blocked) or any(f.outcome in ("created", "skipped") for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0 unless a goal run with --run did not converge: then that run's exit code (`goal run`'s), or as a
        wave the wave's (wave.py); when no oracle could judge the goals, the code of OracleUnavailable (errors.py)."""
        code = self.wave.exit_code if self.wave else next((r.exit_code for r in self.runs if r.exit_code != 0), 0)
        return code or (OracleUnavailable.exit_code if self.blocked else 0)

    def summary(self) -> dict:
        return {"project": self.project, "mode": self.mode, "checks": self.checks, "failing": len(self.findings),
                "maxNewPerHour": self.max_new_per_hour, "findings": [f.dump() for f in self.findings],
                "runs": [{"goalId": r.goal.goal_id, "stop": r.stop, "exitCode": r.exit_code,
                          "iterations": r.goal.spent.iterations, "totalCostUsd": round(r.goal.spent.dollars, 6)}
                         for r in self.runs],
                "wave": self.wave.summary() if self.wave else None, "blocked": self.blocked, "exitCode": self.exit_code}

    def text(self) -> str:
        lines = [f"heartbeat in {self.project}: {self.checks} check(s), {len(self.findings)} failing"]
        for f in self.findings:
            t = f.tracked
            what = f"{'goal' if t.kind == 'goal' else 'triage item'} {t.item_id} ({t.state})" if t else ""
            lines.append({
                "created": f"  new {what}: {_objective(f.condition)}\n    {f.first_failure}",
                "updated": f"  seen again ({t.count if t else 0} times): {what}, `{f.condition.command}`",
                "known": f"  known, not re-opened: {what}, `{f.condition.command}`",
                "skipped": f"  skipped `{f.condition.command}`: {self.max_new_per_hour} new per hour already made "
                           f"here (max_new_per_hour); the next heartbeat records it",
            }[f.outcome])
        if self.wave:
            lines += ["  ran a wave:"] + ["    " + row for row in self.wave.table().splitlines()]
        else:
            lines += ["  ran " + render.run_summary(r.goal, r.stop).replace("\n", "\n    ") for r in self.runs]
        lines += [f"  {self.blocked}"] if self.blocked else []
        return "\n".join(lines)


def beat(store: Store, project: Path | str | None = None, *, mode: str | None = None, run: bool = False,
         maker: Maker | None = None, oracle: str | None = None, now: datetime | None = None,
         parallel: int = 1) -> Report:
    """Run the project's checks, record their failures, and with ``run`` work on the project's open
    heartbeat goals one after another, or ``parallel`` at a time as a wave (``maker`` defaults to `claude -p`).
    ``oracle`` overrides the settings' oracle."""
    root = lookup.find_project(project)
    settings = config.project_config(root).heartbeat
    if oracle:
        settings = settings.model_copy(update={"oracle": oracle})
    mode = mode or settings.mode
    if run and mode == "triage":
        raise UsageError("--run works on the goals a heartbeat makes, but --mode triage makes triage items; "
                         "drop one of them")
    if parallel > 1 and not run:
        raise UsageError("--parallel says how many goals --run works on at once; add --run")
    if maker is not None and not run:
        raise UsageError("--maker and --maker-cmd say who works on the new goals, which only --run does; add --run")
    checks = checks_for(settings, root)
    evidence = conditions.run_conditions(checks, root)
    report = Report(str(root), mode, len(checks), settings.max_new_per_hour)
    failing = [(c, e) for c, e in zip(checks, evidence, strict=True) if not e.passed]
    if failing:
        # Two heartbeats of one project at once (an overlapping cron) must not both make the same goal.
        with store.lock(Path("heartbeat-" + hashlib.sha256(str(root).encode()).hexdigest()[:16])):
            report.findings = _record(store, root, settings, mode, failing, now or datetime.now(UTC))
    if run:
        _run_open_goals(store, root, settings, report, maker or makers.ClaudeMaker(), parallel)
    return report


def _run_open_goals(store: Store, root: Path, settings: HeartbeatConfig, report: Report, maker: Maker,
                    parallel: int) -> None:
    """Work on every open heartbeat goal of the project no session holds, oldest first: the ones this
    heartbeat made and the ones an earlier (plain) one did, judged by the oracle the settings name now;
    one after another, or ``parallel`` at a time as a wave (wave.py)."""
    waiting = wave.heartbeat_goals(store, root)
    judge = OracleConfig(provider=settings.oracle, model=settings.oracle_model or specs.DEFAULT_ORACLE_MODEL,
                         command=settings.oracle_command)
    for goal in waiting:
        if (goal.oracle.provider, goal.oracle.model, goal.oracle.command) != (judge.provider, judge.model,
                                                                              judge.command):
            store.update(Goal, goal.goal_id, lambda g: setattr(g, "oracle", judge.model_copy(
                update={"expect": g.oracle.expect})))
    try:
        if parallel > 1:
            report.wave = wave.run(store, root, [g.goal_id for g in waiting], parallel,
                                   maker.command if isinstance(maker, makers.CommandMaker) else None)
            report.runs = [runner.RunResult(m.goal, m.stop) for m in report.wave.members]
            return
        for goal in waiting:
            report.runs.append(runner.run_goal(store, goal.goal_id, maker))
    except OracleUnavailable as exc:
        # Nothing was spent and the goals stay open: once an oracle is set up the next --run works on them.
        left = len(waiting) - len(report.runs)
        report.blocked = (f"no goal was run: {exc}. For heartbeat goals, put `oracle = \"conditions\"` (or another "
                          f"oracle) under [heartbeat] in {config.PROJECT_FILE}, or pass --oracle. "
                          + ("The open heartbeat goal here waits" if left == 1 else
                             f"The {left} open heartbeat goals here wait") + " for the next `goal heartbeat --run`")


def checks_for(settings: HeartbeatConfig, root: Path) -> list[StoppingCondition]:
    if settings.checks:
        return [c.condition() for c in settings.checks]
    commands = inference.project_commands(root)
    found = [StoppingCondition(type=kind, command=commands[kind])  # type: ignore[arg-type]
             for kind in INFERRED_KINDS if kind in commands]
    if not found:
        raise InvalidInput(f"no checks to run in {root}: none are configured and none could be inferred; list them "
                           f"under [heartbeat] checks in {config.PROJECT_FILE}, or [tool.goal-convergence.heartbeat] "
                           f"in pyproject.toml (docs/heartbeat.md, Settings)")
    return found


def _tracked(goals_here: list[Goal], items_here: list[TriageItem]) -> list[Tracked]:
    found = [Tracked("goal", g.goal_id, g.stopping_conditions[0].command, g.heartbeat.fingerprint, g.state,
                      g.heartbeat.count) for g in goals_here if g.heartbeat]
    found += [Tracked("triage", i.triage_id, i.failing_conditions[0].command, i.fingerprint, i.status, i.count)
              for i in items_here if i.fingerprint and i.failing_conditions]
    return found


def _record(store: Store, root: Path, settings: HeartbeatConfig, mode: str,
            failing: list[tuple[StoppingCondition, ConditionEvidence]], now: datetime) -> list[Finding]:
    goals_here = [g for g in store.iter_all(Goal) if g.project_root == str(root)]
    items_here = [i for i in store.iter_all(TriageItem) if i.project_root == str(root) and i.source == "heartbeat"]
    made = [g.created_at for g in goals_here if g.source == "heartbeat"] + [i.created_at for i in items_here]
    room = max(0, settings.max_new_per_hour - sum(parse_iso(t) > now - RATE_WINDOW for t in made))
    records = _tracked(goals_here, items_here)
    findings = []
    for condition, ev in failing:
        finding = Finding(condition, ev.fingerprint, _first_failure(ev))
        same = [t for t in records if (t.command, t.fingerprint) == (condition.command, ev.fingerprint)]
        match = next((t for t in same if t.state in _OPEN), None) or next((t for t in same if t.state in _KNOWN), None)
        if match is not None and match.state in _OPEN:
            match.count = _seen_again(store, match, now)
            finding.outcome = "updated"
        elif match is not None:
            finding.outcome = "known"
        elif room:
            room -= 1
            match = _create(store, root, settings, mode, condition, ev, finding.first_failure, now)
            records.append(match)
            finding.outcome = "created"
        finding.tracked = match
        findings.append(finding)
    return findings


def _seen_again(store: Store, tracked: Tracked, now: datetime) -> int:
    def bump(mark: HeartbeatMark | TriageItem) -> None:
        mark.count += 1
        mark.last_seen = now_iso(now)

    if tracked.kind == "goal":
        goal = store.update(Goal, tracked.item_id, lambda g: bump(g.heartbeat))  # type: ignore[arg-type]
        return goal.heartbeat.count  # type: ignore[union-attr]
    return store.update(TriageItem, tracked.item_id, bump).count  # type: ignore[arg-type]


def _create(store: Store, root: Path, settings: HeartbeatConfig, mode: str, condition: StoppingCondition,
            ev: ConditionEvidence, first: str, now: datetime) -> Tracked:
    stamp = now_iso(now)
    if mode == "triage":
        item = store.create(TriageItem(
            triage_id=triage.new_triage_id(), source="heartbeat", objective=_objective(condition),
            project_root=str(root), reasons=[f"a heartbeat found `{condition.command}` failing"],
            failing_conditions=[FailingCondition(type=condition.type, command=condition.command, first_failure=first)],
            fingerprint=ev.fingerprint, last_seen=stamp, created_at=stamp, updated_at=stamp))
        return Tracked("triage", item.triage_id, condition.command, ev.fingerprint, item.status, item.count)
    b = settings.budget
    spec = specs.GoalSpec(objective=_objective(condition), project=root, source="heartbeat",
                          max_iterations=b.max_iterations, max_duration=b.max_duration, max_dollars=b.max_dollars,
                          max_tokens=b.max_tokens, oracle_provider=settings.oracle,
                          oracle_model=settings.oracle_model or specs.DEFAULT_ORACLE_MODEL,
                          oracle_command=settings.oracle_command, tests_may_change=settings.tests_may_change,
                          min_confidence=settings.min_confidence,
                          heartbeat=HeartbeatMark(fingerprint=ev.fingerprint, last_seen=stamp), start=[ev])
    spec.add_condition(condition.type, condition.command, condition.threshold, target=condition.target,
                       metric_regex=condition.metric_regex, runs=condition.runs)
    goal = creation.new_goal(store, spec, now)
    return Tracked("goal", goal.goal_id, condition.command, ev.fingerprint, goal.state, 1)


def _objective(condition: StoppingCondition) -> str:
    if condition.type == "coverage_threshold":
        return f"heartbeat: bring `{condition.command}` back to {condition.threshold:g}% coverage"
    return f"heartbeat: make `{condition.command}` pass again"


def _first_failure(ev: ConditionEvidence) -> str:
    return ev.first_failure[:300]
