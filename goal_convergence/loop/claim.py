"""One runner a goal: the claim `goal run` holds on its goal, the heartbeat that keeps it fresh, and
the record of its children's process groups that lets a later run reap what a killed one left.

The claim (``Goal.runner``: pid, host, start time, since, last seen, heartbeats) is taken and dropped
under the goal's lock. A second `goal run` on the goal is refused while the first lives; a claim whose
process is gone is taken over, its clock charged up to its last sign of life only. On this host a claim lives while its pid (with its start
time) does; another host's lives while its heartbeat counter moves, which the one who would take it
over watches for ``budget.STALE_SECONDS`` on its own monotonic clock: two hosts' wall clocks are never
compared (one 45 s ahead would take a live claim). Whatever makes iterations also holds the goal's writer
lock (``writing``), so that a Stop hook and a `goal run` never judge and charge one goal at once.
The groups live in a side file, ``runs/GOAL-ID.children.json`` next to the goals, written at each child's
start and end (a goal write per child would cost far more).
"""

from __future__ import annotations

import json
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from ..errors import GoalConvergenceError, RunnerBusy
from ..models import ChildGroup, Goal, RunChildren, Runner, now_iso, parse_iso
from ..rules import budget
from ..storage.store import Store, write_atomic
from ..system import files, insiders, orphans, process, subreaper
from ..system.log import log_error
from . import engine

RUNS = "runs"


def _mine(runner: Runner | None) -> bool:
    return runner is not None and (runner.pid, runner.host, runner.started) == orphans.me()


# How often a claim of another host is looked at while it is watched.
WATCH_SECONDS = 0.5


def _alive(runner: Runner, now: datetime) -> bool:
    """On this host, whether its process lives; another host's claim is live until watched still (``_still``)."""
    if runner.host == orphans.host():
        return orphans.alive(runner.pid, runner.started)
    return True


def _still(store: Store, goal_id: str, runner: Runner) -> bool:
    """Whether another host's claim stays as it is (its heartbeat counter still) for ``budget.STALE_SECONDS`` of
    our own monotonic clock: then its process is gone."""
    until = time.monotonic() + budget.STALE_SECONDS
    while time.monotonic() < until:
        time.sleep(WATCH_SECONDS)
        if store.load(Goal, goal_id).runner != runner:
            return False
    return True


def live_runner(goal: Goal, now: datetime) -> Runner | None:
    """The `goal run` of another process that works ``goal`` now, if there is one."""
    old = goal.runner
    return old if old is not None and not _mine(old) and _alive(old, now) else None


def holder(runner: Runner) -> str:
    """Who holds a claim, in words: `goal run` (pid 12 on host, since ...)."""
    return f"`goal run` (pid {runner.pid} on {runner.host}, since {runner.since})"


class Held(RunnerBusy):
    """Another live writer holds the goal's claim."""

    def __init__(self, message: str, runner: Runner) -> None:
        super().__init__(message)
        self.runner = runner


def take(store: Store, goal_id: str, now: datetime) -> Goal:
    """Claim the goal for this process and start its clock; reap what dead runs left first.
    Raises Held when another live `goal run` holds it."""
    reap(store)
    pid, host, started = orphans.me()
    seen = store.load(Goal, goal_id).runner
    gone = seen if seen is not None and seen.host != host and _still(store, goal_id, seen) else None

    def change(goal: Goal) -> Goal:
        old = goal.runner
        if live_runner(goal, now) and (gone is None or old != gone):
            raise Held(
                f"goal {goal.goal_id} is already being run by {holder(old)}; wait for it to end, or stop it first "
                f"(`goal pause {goal.goal_id}`, or kill {old.pid}), then run again", old)
        if old is not None and not _mine(old):
            # Killed: its clock ran up to its last sign of life, not to now.
            budget.accrue(goal, min(now, parse_iso(old.seen_at)))
            budget.run_clock(goal, now, False)
        engine.repair_pending(goal)
        goal.runner = Runner(pid=pid, host=host, started=started, since=now_iso(now), seen_at=now_iso(now))
        budget.accrue(goal, now)
        budget.run_clock(goal, now, goal.state == "active" or goal.active_since is not None)
        return goal

    return store.update(Goal, goal_id, change)


def release(store: Store, goal_id: str, now: datetime) -> Goal:
    """Charge and stop the clock, and drop the claim if it is still ours."""
    def change(goal: Goal) -> Goal:
        budget.accrue(goal, now)
        budget.run_clock(goal, now, False)
        if _mine(goal.runner):
            goal.runner = None
        return goal

    goal = store.update(Goal, goal_id, change)
    path = _runs_path(store, goal_id)
    with store.lock(path):
        record = _read(path)
        if record is not None and _mine_record(record):
            path.unlink()
    return goal


@contextmanager
def _beating(store: Store, goal_id: str, clock: Callable[[], datetime]) -> Iterator[None]:
    """Refresh our claim every ``budget.HEARTBEAT_SECONDS``: its counter moves on, and the clock is charged."""
    stop = threading.Event()

    def beat(goal: Goal) -> Goal:
        if _mine(goal.runner):
            goal.runner.beats += 1  # type: ignore[union-attr]
        budget.accrue(goal, clock())
        return goal

    def beating() -> None:
        while not stop.wait(budget.HEARTBEAT_SECONDS):
            try:
                store.update(Goal, goal_id, beat)
            except GoalConvergenceError as exc:  # the run itself meets the same problem and reports it
                log_error("heartbeat", f"{goal_id}: {exc}")

    thread = threading.Thread(target=beating, name=f"claim {goal_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def working(store: Store, goal_id: str, clock: Callable[[], datetime]) -> Iterator[None]:
    """While the runner works: be the goal's one writer (``writing``: a Stop hook's iteration in flight ends
    first), refresh its claim (``_beating``), record the groups of its live children, record itself as the runner
    of a maker of the goal (insiders.py: what runs below it is refused the commands that change goals) and adopt
    the orphans below it (subreaper.py)."""
    with writing(store, goal_id), _beating(store, goal_id, clock), orphans.watchdog() as dog, \
            process.watching(dog), process.watching(_recorder(store, goal_id)), insiders.working(store.root, goal_id), \
            subreaper.subreaping():
        yield


@contextmanager
def writing(store: Store, goal_id: str, give_way: Callable[[], Runner | None] | None = None) -> Iterator[None]:
    """Be the goal's one writer of money: what makes iterations (a `goal run` for all of its run, a Stop hook for
    its one iteration) holds this lock, an exclusive ``flock`` of ``runs/GOAL-ID.writer.lock`` that the kernel
    drops with its holder. Without ``give_way`` it waits its turn; with it (a Stop hook) it asks, while it waits,
    whether a live `goal run` holds the goal, and gives way to one (raises Held) instead of waiting for its end."""
    path = _runs_path(store, goal_id).with_name(f"{store.path_for(Goal, goal_id).stem}.writer.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if give_way else 0))
                break
            except BlockingIOError:
                runner = give_way() if give_way else None
                if runner is not None:
                    raise Held(f"goal {goal_id} is being run by {holder(runner)}", runner) from None
                time.sleep(WATCH_SECONDS)
        yield
    finally:
        os.close(fd)


# ---- the children's groups ------------------------------------------------------------------------

def _runs_path(store: Store, goal_id: str) -> Path:
    folder = store.root / RUNS
    files.private_folder(folder)
    # Its own name, so its lock is not the goal's (store.lock names a lock after the file).
    return folder / f"{store.path_for(Goal, goal_id).stem}.children.json"


def _read(path: Path) -> RunChildren | None:
    try:
        return RunChildren.from_doc(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ValidationError) as exc:  # half a record is no record: drop it
        log_error("runs", f"{path}: dropped an unreadable record of child processes ({exc})")
        path.unlink(missing_ok=True)
        return None


def _mine_record(record: RunChildren) -> bool:
    return (record.pid, record.host, record.started) == orphans.me()


def _recorder(store: Store, goal_id: str) -> Callable[[process.Groups], None]:
    path = _runs_path(store, goal_id)
    pid, host, started = orphans.me()

    def record(groups: process.Groups) -> None:
        doc = RunChildren(pid=pid, host=host, started=started,
                          groups=[ChildGroup(pgid=g, started=s) for g, s in groups])
        try:
            with store.lock(path):  # not synced: after a crash of the machine no child of it is left to reap
                write_atomic(path, json.dumps(doc.dump()).encode(), durable=False)
        except (OSError, GoalConvergenceError) as exc:  # never what stops a child from running
            log_error("runs", f"{path}: {exc}")

    return record


def reap(store: Store) -> list[int]:
    """Kill what is left of the children of every dead `goal run` on this host; the group ids killed."""
    folder = store.root / RUNS
    killed: list[int] = []
    for path in sorted(folder.glob("*.children.json")) if folder.is_dir() else ():
        with store.lock(path):
            record = _read(path)
            if record is None or record.host != orphans.host() or _mine_record(record) \
                    or orphans.alive(record.pid, record.started):
                continue
            killed += orphans.reap((g.pgid, g.started) for g in record.groups)
            os.unlink(path)
    return killed
