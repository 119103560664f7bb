"""Waves: several goals of one project worked at once, K at a time, each in a worktree of its own, and
their work merged back in the order the goals were given.

Every goal of a wave is run by a `goal run ID --workdir TREE` of its own, a child process (process.py:
its own group, killed with its children on Ctrl-C): it holds the goal's claim, records its children's
groups and works exactly as `goal run` does, but in its worktree (engine.at), all of them started from
one commit of the user's tree as it is on disk (worktree.start_commit). A session bound in Claude Code
works its goal one at a time: a wave is headless and refuses such a goal, like any goal not of the
project, not active or held by a live `goal run`, before anything runs.

When every goal has ended, each one's work is committed on its branch (``goal/GOAL-ID``) and the
converged ones are brought into the user's tree in order: merged (no fast-forward) into the user's
branch when the tree is clean, else applied to the files as a patch, the user's own uncommitted work
left as it is. A conflict, or a stopping condition that fails in the user's tree after the merge,
takes that goal's work back out, keeps its branch and files a triage item saying why and how to
merge it by hand; the others go on. Branches of merged goals are deleted, the others kept (a later
wave carries on from a kept branch); worktrees are always removed.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..checks import conditions
from ..errors import InvalidInput, UsageError
from ..goals import triage
from ..models import EXIT_CODES, FailingCondition, Goal, TriageItem, now_iso
from ..report.render import money
from ..storage.store import Store
from ..system import process
from ..system.log import log_error
from ..vcs import worktree
from ..vcs.git import Repo
from . import claim, engine

# A goal that converged but whose work could not be merged needs a person, as an escalated goal does: it
# counts as the lowest escalation code, so a wave with one exits non-zero.
MERGE_FAILED = EXIT_CODES["unfixable"]
BASE_FILE = "wave.base"  # beside a goal's worktrees: the commit its branch started from


@dataclass
class Member:
    """One goal of a wave: its worktree, how its run ended, and what became of its work."""

    goal: Goal
    tree: worktree.Worktree
    workdir: Path  # the goal's project folder inside the worktree
    code: int | None = None  # its `goal run`'s exit code; None when it never ran
    said: str = ""  # the end of what its `goal run` printed
    merge: str = "not run"  # merged, applied, no changes, not converged, conflict, red after merge, not run
    head: str | None = None  # its branch's commit once its work is committed there
    note: str = ""
    triage_id: str | None = None

    @property
    def stop(self) -> str:
        g = self.goal
        return g.stop_reason if g.state != "active" and g.stop_reason else "paused" if g.state == "paused" else "-"

    @property
    def exit_code(self) -> int:
        code = EXIT_CODES.get(self.stop, self.code if self.code is not None else 130)
        return max(code, MERGE_FAILED) if self.merge in ("conflict", "red after merge") else code

    def dump(self) -> dict:
        g = self.goal
        return {"goalId": g.goal_id, "objective": g.objective, "stop": self.stop, "exitCode": self.exit_code,
                "iterations": g.spent.iterations, "totalCostUsd": round(g.spent.dollars, 6),
                "branch": self.tree.branch, "merge": self.merge, "note": self.note or None, "triageId": self.triage_id}


@dataclass
class WaveResult:
    project: str
    parallel: int
    members: list[Member]

    @property
    def exit_code(self) -> int:
        """The worst (highest) of the goals' codes: a stop reason's, raised to MERGE_FAILED for a merge that
        failed, or a `goal run` that ended without one (75 paused, 69/70 could not run, 130 interrupted)."""
        return max((m.exit_code for m in self.members), default=0)

    def summary(self) -> dict:
        return {"project": self.project, "parallel": self.parallel, "goals": [m.dump() for m in self.members],
                "exitCode": self.exit_code}

    def table(self) -> str:
        if not self.members:
            return f"no goal to run in {self.project}"
        rows = [f"{'GOAL':<14} {'STOP':<17} {'ITER':>4} {'COST':>8}  MERGE"]
        for m in self.members:
            g = m.goal
            merge = m.merge + (f": {m.note}" if m.note else "")
            rows.append(f"{g.goal_id:<14} {m.stop:<17} {g.spent.iterations:>4} {money(g.spent.dollars):>8}  {merge}")
        return "\n".join(rows)


def heartbeat_goals(store: Store, root: Path) -> list[Goal]:
    """The project's open heartbeat goals no session holds, oldest first (one heartbeat's by id: they share a
    stamp), the order a wave merges them in: what `goal heartbeat --run` works on."""
    return [g for g in sorted(store.iter_all(Goal), key=lambda g: (g.created_at, g.goal_id))
            if g.project_root == str(root) and g.state == "active" and g.source == "heartbeat" and not g.session_id]


def admit(store: Store, root: Path, goal_ids: list[str]) -> list[Goal]:
    """The goals, each checked fit for a wave in ``root``; every reason one is not, in one refusal."""
    if len(set(goal_ids)) != len(goal_ids):
        raise UsageError("a goal is named twice; name each goal of the wave once")
    now = datetime.now(UTC)
    found = [store.load(Goal, goal_id) for goal_id in goal_ids]
    problems = []
    for g in found:
        held = claim.live_runner(g, now)
        problems += [f"{g.goal_id} is of the project {g.project_root}, not {root}: run a wave there "
                     f"(--project {g.project_root})"] if g.project_root != str(root) else []
        problems += [f"{g.goal_id} is {g.state}, and a wave works active goals: `goal resume {g.goal_id}` first, "
                     "or leave it out"] if g.state != "active" else []
        problems += [f"{g.goal_id} is bound to the Claude Code session {g.session_id}, which works it one goal at a "
                     "time; a wave is headless: leave it out"] if g.session_id else []
        problems += [f"{g.goal_id} is being run by `goal run` (pid {held.pid}); wait for it to end, or leave "
                     "it out"] if held else []
    if problems:
        raise InvalidInput("no goal was run: " + "; ".join(problems))
    for g in found:
        engine.check_oracle(g)  # like `goal run`: a goal that could never be judged stops the wave before it starts
    return found


def run(store: Store, root: Path, goal_ids: list[str] | None, parallel: int, maker_cmd: str | None = None,
        on_end: Callable[[Member], None] | None = None) -> WaveResult:
    """Work the goals ``goal_ids`` of the project ``root`` (None: its heartbeat goals), ``parallel`` at a time,
    then merge back the converged ones in order (see the module). ``maker_cmd``: the makers' command (default:
    `claude -p`, as `goal run` has it)."""
    if goal_ids is None:
        goal_ids = [g.goal_id for g in heartbeat_goals(store, root)]
    goals = admit(store, root, goal_ids)
    result = WaveResult(str(root), parallel, [])
    if not goals:
        return result
    repo = worktree.open_repo(root, "goal wave")
    base = worktree.start_commit(repo, "goal wave: the project's tree as the wave began")
    with _term_interrupts():
        try:
            for g in goals:
                tree = _tree_for(repo, g.goal_id, base)
                result.members.append(Member(g, tree, tree.path / Path(g.project_root).relative_to(repo.top)))
            _work(result.members, parallel, maker_cmd, on_end)
            for m in result.members:
                m.goal = store.load(Goal, m.goal.goal_id)
                _bring_back(store, repo, m)
        finally:
            for m in result.members:
                _settle(repo, m)
            claim.reap(store)  # a `goal run` killed with the wave leaves its makers' groups behind: not for long
    return result


def _tree_for(repo: Repo, goal_id: str, base: str) -> worktree.Worktree:
    """The goal's worktree: on a new branch from ``base``, or on the branch an earlier wave kept for it (its
    work carries on there)."""
    home, branch = worktree.home_for(goal_id), f"goal/{goal_id}"
    record = home / BASE_FILE
    if worktree.has_branch(repo, branch) and record.is_file():
        return worktree.reopen(repo, home / "wave", branch, record.read_text().strip())
    tree = worktree.add(repo, home / "wave", branch, base)
    record.write_text(base)
    return tree


def _work(members: list[Member], parallel: int, maker_cmd: str | None,
          on_end: Callable[[Member], None] | None) -> None:
    stop = threading.Event()

    def one(m: Member) -> None:
        if stop.is_set():
            return
        # --quiet: the wave reads the run's closing lines (why it ended), not the story of its iterations
        args = [sys.executable, "-m", "goal_convergence", "run", m.goal.goal_id, "--quiet", "--workdir", str(m.workdir)]
        out = process.Capture()
        done = process.run(args + (["--maker-cmd", maker_cmd] if maker_cmd else []), m.workdir, out, cancel=stop)
        m.code, m.said = done.code, out.last_text().strip()
        if on_end:
            on_end(m)

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="wave")
    try:
        pending = {pool.submit(one, m) for m in members}
        while pending:  # short waits: Ctrl-C reaches this thread between them
            done, pending = concurrent.futures.wait(pending, timeout=0.2)
            for future in done:
                future.result()
    except BaseException:
        stop.set()  # each `goal run` gets SIGTERM (stopping its maker's group), then SIGKILL (process.py)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def interrupt_on_term() -> None:
    """In a wave's `goal run`: SIGTERM ends it as Ctrl-C would, so its maker's group is stopped and its claim
    released before it exits."""
    signal.signal(signal.SIGTERM, _interrupt)


@contextmanager
def _term_interrupts() -> Iterator[None]:
    """While a wave runs, a kill (SIGTERM) stops it as Ctrl-C does: every goal stopped, nothing left running.
    (Only the main thread may set a handler; elsewhere the default stays.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _committed(repo: Repo, m: Member) -> str:
    """The goal's work committed on its branch (once): the branch's commit."""
    if m.head is None:
        m.head = worktree.commit(repo, m.tree, f"goal {m.goal.goal_id}: the maker's work")
    return m.head


def _bring_back(store: Store, repo: Repo, m: Member) -> None:
    """Bring a converged goal's work into the user's tree, re-check it there, and take it back out (and file a
    triage item) when it conflicts or turns a stopping condition red."""
    head = _committed(repo, m)
    if m.goal.state != "converged":
        m.merge = "not converged" if m.code is not None else "not run"
        ended = m.said.splitlines()[-1] if m.said and m.stop not in EXIT_CODES else ""  # why it ended, if not a stop
        m.note = "; ".join(filter(None, [ended, f"its work is on {m.tree.branch}" if head != m.tree.base else ""]))
        return
    if head == m.tree.base:
        m.merge = "no changes"
        return
    g, branch = m.goal, m.tree.branch
    by_hand = f"`git merge --no-ff {branch}` (or `git diff {m.tree.base} {branch} | git apply`)"
    # A merge would also bring in what the user's tree held uncommitted when the wave began (it is on the branch):
    # only a branch from a clean tree is merged, into a tree still clean.
    if worktree.clean(repo) and worktree.from_head(repo, m.tree.base):
        before = worktree.head(repo)
        refused = worktree.merge(repo, branch, f"goal {g.goal_id}: {g.objective.splitlines()[0][:200]}")
        m.merge, undo = "merged", (lambda: worktree.undo_merge(repo, before))
    else:
        patch = worktree.changes(repo, m.tree, head)
        refused = worktree.try_apply(repo, patch)
        m.merge, undo = "applied", (lambda: _unapply(repo, patch))
    if refused is not None:
        where = f"in {', '.join(refused.files)}" if refused.files else f"({refused.reason})"
        _failed(store, m, "conflict", f"conflict {where}",
                f"goal {g.goal_id} converged in its worktree, but its work conflicts with the project's tree {where}; "
                f"the tree was left as it was and the branch {branch} is kept: merge it by hand with {by_hand}")
        return
    red = [(c, e) for c, e in zip(g.stopping_conditions, conditions.check_goal_conditions(g), strict=True)
           if not e.passed]
    if red:
        undo()
        cond, ev = red[0]
        _failed(store, m, "red after merge", f"`{cond.command}` failed after the merge",
                f"goal {g.goal_id} converged in its worktree, but after its work was brought into the project's tree "
                f"`{cond.command}` failed there ({ev.first_failure[:200]}); the work was taken back out and the branch "
                f"{branch} is kept: merge it by hand with {by_hand} and fix what fails",
                [FailingCondition(type=c.type, command=c.command, first_failure=e.first_failure[:300])
                 for c, e in red])


def _unapply(repo: Repo, patch: bytes) -> None:
    refused = worktree.try_apply(repo, patch, reverse=True)
    if refused is not None:
        raise worktree.WorktreeError(f"a wave's patch could not be taken back out of {repo.top} ({refused.reason}); "
                                     "look at `git status` and `git diff` there")


def _failed(store: Store, m: Member, merge: str, note: str, reason: str,
            failing: list[FailingCondition] | None = None) -> None:
    g, stamp = m.goal, now_iso()
    item = store.create(TriageItem(
        triage_id=triage.new_triage_id(), source="wave", goal_id=g.goal_id, objective=g.objective,
        project_root=g.project_root, stop_reason=g.stop_reason, reasons=[reason], failing_conditions=failing or [],
        spent=g.spent.model_copy(), iterations=g.spent.iterations, created_at=stamp, updated_at=stamp))
    m.merge, m.note, m.triage_id = merge, f"{note}; triage item {item.triage_id}", item.triage_id


def _settle(repo: Repo, m: Member) -> None:
    """Remove the worktree; its branch (and the record of where it started) only once its work is merged."""
    try:
        head = _committed(repo, m)  # nothing is lost with the folder
    except worktree.WorktreeError as exc:  # then the folder stays, with the work in it
        log_error("wave", f"{m.tree.path} kept: {exc}")
        m.note = m.note or f"its work is in {m.tree.path}"
        return
    keep = m.merge not in ("merged", "applied", "no changes") and head != m.tree.base
    worktree.remove(repo, m.tree, keep_branch=keep)
    if not keep:
        shutil.rmtree(worktree.home_for(m.goal.goal_id), ignore_errors=True)
