"""One runner a goal (claim.py): a killed run's downtime is not charged, a second run is refused
while the first lives and takes over once it is dead, a pending iteration that can never be recorded
does not make the loop spin, and children do not outlive a killed run (orphans.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.goals import creation, specs
from goal_convergence.loop import claim, engine, makers, runner
from goal_convergence.models import ChildGroup, Cost, Goal, Pending, RunChildren, Runner, Verdict, now_iso
from goal_convergence.rules import budget
from goal_convergence.storage.store import Store
from goal_convergence.system import orphans
from tests.conftest import REPO, run_goal
from tests.fakes import T0, Clock, FakeOracle

YES = Verdict(converged=True, reasons=["done"])
NO = Verdict(converged=False, reasons=["not yet"], next_hint="keep going")


class Maker:
    """Takes ``seconds`` of the clock a turn, creates done.txt on its ``finish_on``-th turn."""

    name = "fake"

    def __init__(self, clock: Clock, seconds: float = 10, finish_on: int = 1) -> None:
        self.clock, self.seconds, self.finish_on, self.turns = clock, seconds, finish_on, 0

    def work(self, goal: Goal, hint: str, timeout: float | None) -> engine.MakerReport:
        self.turns += 1
        self.clock.advance(self.seconds)
        if self.turns >= self.finish_on:
            (Path(goal.project_root) / "done.txt").write_text("done\n")
        return engine.MakerReport(summary=f"turn {self.turns}", cost=Cost(dollars=0.01, tokens=10))


def edges(clock: Clock, oracle: FakeOracle) -> engine.Edges:
    return engine.Edges(get_oracle=lambda config, goal, rerun=None: oracle, now=clock.now)


def new_goal(project: Path, **limits) -> str:
    spec = specs.GoalSpec(objective="create done.txt", project=project, checks=["test -f done.txt"],
                          oracle_provider="conditions", **{"max_iterations": 5, "max_dollars": None,
                                                           "max_duration": None, **limits})
    return creation.new_goal(Store(), spec).goal_id


# The first run, in a process of its own: it claims the goal at T0 and is killed (SIGKILL) during its maker's turn.
KILLED_RUN = """
import os, signal, sys
from goal_convergence.loop import engine, runner
from goal_convergence.storage.store import Store
from tests.fakes import Clock, FakeOracle

class Killed:
    name = "killed"

    def work(self, goal, hint, timeout):
        os.kill(os.getpid(), signal.SIGKILL)

oracle = FakeOracle()
runner.run_goal(Store(), sys.argv[1], Killed(), edges=engine.Edges(get_oracle=lambda c, g, rerun=None: oracle,
                                                                    now=Clock().now))
"""


def test_a_run_killed_and_resumed_65s_later_is_not_charged_the_downtime(store, git_repo):
    goal_id = new_goal(git_repo, max_duration="1m")
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, goal_id], cwd=REPO, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert store.load(Goal, goal_id).active_since is not None  # what a killed run leaves behind
    clock, oracle = Clock(T0 + timedelta(seconds=65)), FakeOracle()
    oracle.enqueue(YES)
    result = runner.run_goal(store, goal_id, Maker(clock, seconds=10), edges=edges(clock, oracle))
    assert (result.stop, result.goal.spent.iterations) == ("converged", 1)
    assert result.goal.spent.active_seconds == 10  # its own turn; the dead run's gap is not charged
    saved = store.load(Goal, goal_id)
    assert saved.runner is None and saved.active_since is None


def test_a_clock_charged_after_its_runner_went_quiet_stops_at_its_last_sign_of_life(make_goal):
    goal = make_goal(active_since=now_iso(T0), runner=Runner(pid=1, host="elsewhere", since=now_iso(T0),
                                                              seen_at=now_iso(T0 + timedelta(seconds=5))))
    budget.accrue(goal, T0 + timedelta(seconds=65))
    assert goal.spent.active_seconds == 5
    alive = make_goal(active_since=now_iso(T0), runner=Runner(pid=1, host="elsewhere", since=now_iso(T0),
                                                              seen_at=now_iso(T0 + timedelta(seconds=50))))
    budget.accrue(alive, T0 + timedelta(seconds=65))
    assert alive.spent.active_seconds == 65  # heard from within budget.STALE_SECONDS: it is working


def test_a_pending_iteration_already_recorded_does_not_make_the_run_spin(store, git_repo):
    goal_id = new_goal(git_repo)

    def recorded_three(goal: Goal) -> Goal:
        goal.spent.iterations = 3
        goal.pending = Pending(number=1, started_at=now_iso(T0), maker_cost=Cost(dollars=0.5))
        return goal

    store.update(Goal, goal_id, recorded_three)
    clock, oracle = Clock(), FakeOracle()
    oracle.enqueue(NO, NO)  # a third call would fail: the script is empty
    maker = Maker(clock, finish_on=99)
    result = runner.run_goal(store, goal_id, maker, edges=edges(clock, oracle))
    assert result.stop == "ceiling"
    assert len(oracle.history) == 2 and maker.turns == 1  # iterations 4 (the repaired pending) and 5
    assert [it.number for it in result.goal.history] == [4, 5]


def goal_run(project: Path, goal_id: str, maker_cmd: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "goal_convergence", "run", goal_id, "--maker-cmd", maker_cmd],
                            cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(what, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what.__name__}")


def test_a_second_run_is_refused_while_the_first_lives_and_takes_over_once_it_is_dead(store, git_repo):
    goal_id = new_goal(git_repo)
    first = goal_run(git_repo, goal_id, "touch started; sleep 60")
    try:
        def maker_started() -> bool:
            return (git_repo / "started").exists()

        wait_for(maker_started)
        second = run_goal(git_repo, "run", goal_id, "--maker-cmd", "touch done.txt")
        assert second.returncode == 70, second.stdout + second.stderr
        assert f"already being run by `goal run` (pid {first.pid} on " in second.stderr
        assert "since" in second.stderr and f"goal pause {goal_id}" in second.stderr
        assert not (git_repo / "done.txt").exists()
    finally:
        first.kill()
        first.wait()
    third = run_goal(git_repo, "run", goal_id, "--maker-cmd", "touch done.txt")
    assert third.returncode == 0, third.stderr
    saved = store.load(Goal, goal_id)
    assert (saved.state, saved.runner, [it.number for it in saved.history]) == ("converged", None, [1])


def process_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _killed_mid_maker(store, git_repo, *, also_the_watchdog: bool) -> tuple[str, str, orphans.Stat, int, int]:
    """A `goal run` killed with -9 while its maker's shell waits on a ``sleep`` of its own (and, if asked, its
    watchdog killed first): the goal, the sleep's marker, the shell, the shell's start time, the watchdog."""
    goal_id = new_goal(git_repo)
    marker = f"{os.getpid() % 1000}.{time.monotonic_ns() % 100000:05d}"  # a sleep no other test starts
    first = goal_run(git_repo, goal_id, f"sleep {marker}; true")
    try:
        (sleep_pid,) = wait_for(lambda: process_with(f"sleep\0{marker}"))
        shell = orphans.stat(sleep_pid)
        assert shell is not None and shell.pgid != os.getpgid(first.pid)  # a process group of its own

        def recorded() -> bool:  # the shell can start its sleep before the run has written the group down
            try:
                doc = json.loads((store.root / claim.RUNS / f"{goal_id}.children.json").read_text())
            except (OSError, ValueError):
                return False
            return shell.pgid in [g["pgid"] for g in doc["groups"]]

        wait_for(recorded, 10)
        leader = orphans.started(shell.pgid)
        assert leader is not None  # the shell that leads the group
        (dog,) = [pid for pid in process_with("goal_convergence.system.orphans") if _parent(pid) == first.pid]
        if also_the_watchdog:
            os.kill(dog, signal.SIGKILL)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    return goal_id, marker, shell, leader, dog


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_children_of_a_killed_run_and_theirs_die_with_it(store, git_repo):
    goal_id, marker, shell, leader, dog = _killed_mid_maker(store, git_repo, also_the_watchdog=False)
    wait_for(lambda: not orphans.alive(shell.pgid, leader), 10)  # the shell: killed by the kernel with its parent
    wait_for(lambda: not process_with(f"sleep\0{marker}"), 10)  # its own child: by the run's watchdog
    wait_for(lambda: not orphans.alive(dog, None), 10)  # which is gone too


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_with_its_watchdog_killed_too_the_next_run_reaps_what_a_killed_run_left(store, git_repo):
    goal_id, marker, shell, leader, _ = _killed_mid_maker(store, git_repo, also_the_watchdog=True)
    wait_for(lambda: not orphans.alive(shell.pgid, leader), 10)
    (sleep_pid,) = process_with(f"sleep\0{marker}")  # out of the kernel's reach, and no watchdog is left
    after = run_goal(git_repo, "run", goal_id, "--maker-cmd", "touch done.txt")
    assert after.returncode == 0, after.stderr
    wait_for(lambda: not process_with(f"sleep\0{marker}"), 10)
    assert not list((store.root / claim.RUNS).glob("*.json"))


def test_the_claude_maker_may_spend_only_what_is_left_of_the_budget(make_goal, monkeypatch):
    monkeypatch.setenv("CLAUDE_BIN", "/bin/true")
    goal = make_goal()
    goal.spent.maker_dollars, goal.spent.oracle_dollars = 2.5, 0.25
    args = makers.ClaudeMaker().command(goal, "")
    assert args[args.index("--max-budget-usd") + 1] == "7.2500"


def dead_runner_left(store: Store, goal_id: str, child: subprocess.Popen, started: int | None) -> Path:
    """The side file a `goal run` killed while ``child`` ran would have left."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    path = store.root / claim.RUNS / f"{goal_id}.children.json"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    doc = RunChildren(pid=gone.pid, host=orphans.host(), started=1,
                      groups=[ChildGroup(pgid=child.pid, started=started)])
    path.write_text(json.dumps(doc.dump()))
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_stop_hook_reaps_what_a_killed_run_left_but_never_a_group_that_is_not_its_own(store, git_repo):
    from tests.agents.claude_code.test_hooks import make_goal, stop_input

    goal = make_goal(git_repo)
    ours = subprocess.Popen(["sleep", "60"], start_new_session=True)
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        dead_runner_left(store, goal.goal_id, ours, orphans.started(ours.pid))
        # a group id the dead run recorded for a child started after this one: the id was reused, not ours
        dead_runner_left(store, "goal-zzzzzzzz", other, orphans.started(other.pid) + 1000)
        hooks.run("stop", json.dumps(stop_input(git_repo)).encode(), Store())
        assert ours.wait(timeout=10) == -signal.SIGKILL
        assert other.poll() is None
        assert not list((store.root / claim.RUNS).glob("*.json"))  # both records settled
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_run_that_ends_leaves_the_children_of_another_run_in_the_process_alone():
    # Every watcher hears of every child of the process: three judges' runs at once (test_integrity_matrix) each
    # had their conditions killed by the watchdog of the first run to end.
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        with orphans.watchdog() as tell:
            tell([(other.pid, orphans.started(other.pid))])
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_the_children_record_is_written_whole_without_waiting_for_the_disk(store, git_repo, monkeypatch):
    """A child's start and end each rewrite the record (two a process, some 30 an iteration): an fsync each
    cost a third of a small iteration, and a record is worthless once the machine restarts anyway."""
    goal_id = new_goal(git_repo)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    record = claim._recorder(store, goal_id)
    record([(4242, 7), (4343, None)])
    doc = json.loads((store.root / claim.RUNS / f"{goal_id}.children.json").read_text())
    assert [(g["pgid"], g["started"]) for g in doc["groups"]] == [(4242, 7), (4343, None)]
    assert synced == []
