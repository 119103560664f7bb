"""Parallel attempts at one goal (`goal run ID --attempts N`): N makers race, each in a worktree of its own.

The worktrees (worktree.py) all start from one commit of the user's tree as it is on disk, each on its branch
``goal/GOAL-ID/attempt-K``. One `goal run` (one claim, claim.py) runs the attempts in threads: the makers work
at once, each a child in its own process group; each attempt's "record the maker's turn, run the iteration"
step holds one lock, so the goal's pending iteration, history and one lifetime budget are kept as by a single
loop, and iterations are numbered in the goal's one sequence, each with its attempt's number. An attempt is
judged on its own iterations (engine.at): its hint and its stuck count are its own, and it may end alone
(engine.ATTEMPT_STOPS) while others work; the last one's end, or a spent budget, is the goal's.

The first iteration that converges (the integrity guard and the judge included) wins: the other makers are
cancelled (their groups get TERM, then KILL), every worktree and attempt branch is removed, and the winner's
work comes into the user's files as a patch from the start commit, or onto the branch the user named. A run
killed outright leaves its worktrees behind: the next `goal run` of the goal (runner.py) or `goal abandon`
removes them (``sweep``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UsageError
from ..models import MAX_ATTEMPTS, Goal
from ..rules import budget
from ..storage.store import Store
from ..system import subreaper
from ..vcs import git, worktree
from . import engine
from .makers import Maker

PREFIX = worktree.ATTEMPTS


@dataclass
class _Attempt:
    number: int
    tree: worktree.Worktree
    session_id: str | None = None  # its own `claude -p` session: the goal file holds one, not N
    ended: bool = False


@dataclass
class Raced:
    """How the race ended: the goal as it is now, every iteration's outcome, and which attempt won and where its
    work went (None when none won)."""

    goal: Goal
    outcomes: list[engine.Outcome]
    note: str | None = None


def count(goal: Goal, asked: int | None) -> int:
    """How many attempts a run makes: the number asked for, else the goal's default, else one."""
    n = asked if asked is not None else goal.maker.attempts or 1
    if not 1 <= n <= MAX_ATTEMPTS:
        raise UsageError(f"--attempts {n} is out of range: give 1 to {MAX_ATTEMPTS} (each attempt runs a maker "
                         "and the checks on this machine)")
    return n


def sweep(goal: Goal) -> list[Path]:
    """Remove the worktrees and branches a killed run of ``goal``'s attempts left."""
    return worktree.sweep(Path(goal.project_root), goal.goal_id, PREFIX)


class _Race:
    def __init__(self, store: Store, goal_id: str, maker: Maker, attempts: list[_Attempt], edges: engine.Edges,
                 on_iteration: Callable[[engine.Outcome], None] | None, on_progress: Callable | None) -> None:
        self.store, self.goal_id, self.maker, self.attempts, self.edges = store, goal_id, maker, attempts, edges
        self.on_iteration, self.on_progress = on_iteration, on_progress
        self.turn = threading.Lock()  # one attempt at a time records its maker's turn and runs its iteration
        self.over = threading.Event()  # set once the goal is no longer worked: cancels every maker
        self.outcomes: list[engine.Outcome] = []
        self.winner: _Attempt | None = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        threads = [threading.Thread(target=self._guarded, args=(a,), name=f"{self.goal_id} attempt {a.number}")
                   for a in self.attempts]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        finally:  # an interrupt: the makers are cancelled, and each attempt ends its iteration in flight
            self.over.set()
            for t in threads:
                t.join()
        if self.failure is not None:
            raise self.failure

    def _guarded(self, attempt: _Attempt) -> None:
        try:
            self._work(attempt)
        except BaseException as exc:  # the run reports it once every attempt has stopped
            self.failure = self.failure or exc
        finally:
            attempt.ended = True
            if self.failure is not None or all(a.ended for a in self.attempts):
                self.over.set()

    def _view(self, goal: Goal, attempt: _Attempt) -> Goal:
        view = engine.at(goal, attempt.tree.path, attempt.number)
        return view.model_copy(update={"maker": goal.maker.model_copy(update={"session_id": attempt.session_id})})

    def _work(self, attempt: _Attempt) -> None:
        while not self.over.is_set():
            with self.turn:
                goal = self.store.load(Goal, self.goal_id)
                if goal.state != "active" or engine.stop_if_exhausted(self.store, self.goal_id, self.edges):
                    self.over.set()
                    return
            view = self._view(goal, attempt)
            with subreaper.ending_strays():  # before its checks see its tree
                report = self.maker.work(view, view.last_hint, budget.seconds_left(goal), cancel=self.over)
            attempt.session_id = report.session_id or attempt.session_id
            with self.turn:
                # charged even when the goal ended meanwhile: the turn was paid for
                goal = engine.record_maker(self.store, self.goal_id, replace(report, session_id=None),
                                           now=self.edges.now())
                if goal.state != "active" or self.over.is_set():  # an interrupt: the next run judges this turn
                    return
                others = any(not a.ended for a in self.attempts if a is not attempt)
                outcome = engine.run_iteration(self.store, self.goal_id, on_progress=self.on_progress,
                                               edges=self.edges, workdir=attempt.tree.path,
                                               attempt=engine.Attempt(attempt.number, others))
                self.outcomes.append(outcome)
                if self.on_iteration:
                    self.on_iteration(outcome)
                if outcome.goal.state != "active":
                    self.winner = attempt if outcome.goal.state == "converged" else None
                    self.over.set()
                    return
                if outcome.decision.action == "stop":  # stuck, or judged unfixable, while others work on
                    attempt.ended = True  # under the lock: the next attempt's ``others`` must not count it
                    return


def race(store: Store, goal_id: str, maker: Maker, n: int, *, branch: str | None = None,
         edges: engine.Edges | None = None, on_iteration: Callable[[engine.Outcome], None] | None = None,
         on_progress: Callable | None = None) -> Raced:
    """Run ``n`` attempts at the active goal ``goal_id`` until one converges or the goal ends; call it under the
    goal's claim. ``branch``: leave the winner's work on a new branch of that name, not in the user's files."""
    edges = edges or engine.Edges()
    goal = store.load(Goal, goal_id)
    repo = worktree.open_repo(Path(goal.project_root), "`goal run --attempts` and `--branch`")
    if branch:
        worktree.refuse_branch(repo, branch)  # before any maker spends anything
    base = worktree.start_commit(repo, f"goal-convergence {goal_id}: the tree its attempts start from")
    attempts: list[_Attempt] = []
    running: _Race | None = None
    note: str | None = None
    keep = False  # the winner's branch, while its work is nowhere else
    try:
        for k in range(1, n + 1):
            name = f"{PREFIX}{k}"
            tree = worktree.add(repo, worktree.home_for(goal_id) / name, worktree.branch_for(goal_id, name), base)
            attempts.append(_Attempt(k, tree))
        running = _Race(store, goal_id, maker, attempts, edges, on_iteration, on_progress)
        running.run()
        if running.winner is not None:
            keep = True
            note, keep = _bring_back(repo, goal_id, running.winner, branch)
    finally:
        winner = running.winner if running else None
        for a in attempts:
            worktree.remove(repo, a.tree, keep_branch=keep and a is winner)
        with contextlib.suppress(OSError):
            worktree.home_for(goal_id).rmdir()
    return Raced(store.load(Goal, goal_id), running.outcomes, note)


def _bring_back(repo: git.Repo, goal_id: str, winner: _Attempt, branch: str | None) -> tuple[str, bool]:
    """Put the winner's work where it goes; what to tell the user, and whether its attempt branch must stay."""
    tree, k = winner.tree, winner.number
    head = worktree.commit(repo, tree, f"goal-convergence {goal_id}: the work of attempt {k}, which converged")
    start = tree.base[:12]
    if branch:
        worktree.name_branch(repo, branch, head)
        return (f"attempt {k} won; its work is on the branch {branch} and your files are as they were "
                f"(`git diff {start} {branch}` shows it, `git cherry-pick {start}..{branch}` brings it in)"), False
    try:
        worktree.apply(repo, worktree.changes(repo, tree, head))
    except worktree.WorktreeError:
        return (f"attempt {k} won, but its changes no longer apply to your files (they changed meanwhile), so they "
                f"are kept on the branch {tree.branch}: bring them in with `git cherry-pick {start}..{tree.branch}`"
                ), True
    return f"attempt {k} won; its changes are in your files", False
