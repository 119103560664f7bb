"""Parallel attempts (`goal run --attempts N`): real git repos, worktrees, command makers that are real shell
scripts (each knows its attempt by its worktree's name), the conditions as the judge. `goal run` is a subprocess
only for the kill -9."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from goal_convergence.goals import standings
from goal_convergence.loop import engine, runner
from goal_convergence.models import Budget, Cost, Goal, OracleConfig, StoppingCondition
from goal_convergence.vcs import worktree
from tests.conftest import git, run_goal

# Turn 1 of every attempt changes a notes file (progress, not a fix); turn 2 of attempt $WINNER fixes the bug;
# any other later turn works "forever" (a sleep in the maker's own group) until it is stopped.
MAKER = r"""
k=$(basename "$PWD" | sed 's/^attempt-//')
n=$(( $(cat "$STATE/$k.turns" 2>/dev/null || echo 0) + 1 ))
echo $n > "$STATE/$k.turns"
awk '{print $5}' /proc/$$/stat >> "$STATE/$k.groups"
[ -e stale.txt ] && echo "$k" >> "$STATE/saw-stale"
if [ "$k:$n" = "$WINNER:2" ]; then
  i=0  # with $WAIT_FOR: not before that many iterations are recorded (each attempt's first, on a slow machine too)
  while [ "$(grep -o '"attempt":' "$GOAL_CONVERGENCE_HOME/goals/$GOAL_ID.json" | wc -l)" -lt "${WAIT_FOR:-0}" ] \
      && [ $i -lt 1200 ]; do
    sleep 0.05; i=$((i + 1)); done
  [ -n "$USER_EDIT" ] && echo "the user's own edit" > "$USER_EDIT"
  echo right > answer.txt; echo "fixed answer.txt"
elif [ "$n" = 1 ] && [ -z "$HANG_FIRST" ]; then
  echo "attempt $k turn $n" >> "notes-$k.txt"; echo "tried something"
else
  echo stale > stale.txt; sleep 300 & wait
fi
"""


@pytest.fixture
def project(git_repo: Path, tmp_path: Path, monkeypatch) -> Path:
    (git_repo / "answer.txt").write_text("wrong\n")
    (git_repo / "check.sh").write_text("grep -qx right answer.txt\n")  # a file the check names is the guard's
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "the bug")
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "maker.sh").write_text(MAKER)
    monkeypatch.setenv("STATE", str(state))
    monkeypatch.setenv("WINNER", "2")
    return git_repo


def _maker(project: Path) -> str:
    return f"sh {project.parent / 'maker.sh'}"


def _new(project: Path, *flags: str) -> str:
    done = run_goal(project, "new", "make answer.txt right", "--check", "sh check.sh",
                    "--oracle", "conditions", "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["goalId"]


def _load(store_home: Path, gid: str) -> dict:
    return json.loads((store_home / "goals" / f"{gid}.json").read_text())


def _group_alive(pgid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _groups(state: Path) -> list[int]:
    return [int(line) for f in sorted(state.glob("*.groups")) for line in f.read_text().split()]


def _assert_nothing_left(project: Path, gid: str, state: Path, keep: str | None = None) -> None:
    assert git(project, "worktree", "list").count("\n") == 1, git(project, "worktree", "list")
    assert git(project, "branch", "--list", "goal/*").split() == ([keep] if keep else [])
    assert not worktree.home_for(gid).exists()
    deadline = time.monotonic() + 5
    while any(_group_alive(g) for g in _groups(state)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [g for g in _groups(state) if _group_alive(g)] == [], "a maker's process group outlived the run"


def test_three_attempts_the_second_wins_its_work_comes_back_and_nothing_is_left(project, gc_home, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("WAIT_FOR", "3")
    gid = _new(project)
    started = time.monotonic()
    run = run_goal(project, "run", gid, "--attempts", "3", "--maker-cmd", _maker(project), "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert time.monotonic() - started < 100  # the others' 300 s turns were stopped, not waited for
    ledger = json.loads(run.stdout)
    assert ledger["met"] and "attempt 2 won; its changes are in your files" in ledger["note"]
    assert (project / "answer.txt").read_text() == "right\n"
    assert (project / "notes-2.txt").read_text() == "attempt 2 turn 1\n"  # the winner's whole work, nobody else's
    assert not (project / "notes-1.txt").exists() and not (project / "notes-3.txt").exists()
    doc = _load(gc_home, gid)
    made = [it["attempt"] for it in doc["history"]]
    # every iteration is charged to the one budget, numbered in one sequence: 3 first turns, then the winner's
    assert sorted(made[:3]) == [1, 2, 3] and made[3] == 2
    assert doc["spent"]["iterations"] == len(doc["history"]) == 4
    assert [it["number"] for it in doc["history"]] == [1, 2, 3, 4]
    assert [e["attempt"] for e in ledger["evidence"]] == made
    _assert_nothing_left(project, gid, tmp_path / "state")
    assert [(tmp_path / "state" / f"{k}.turns").read_text().strip() for k in (1, 3)] == ["2", "2"]
    status = run_goal(project, "status", gid)
    assert "attempts: 3" in status.stdout
    rows = {line.split()[0]: line.split()[1] for line in status.stdout.splitlines()[-12:] if line[:3].strip().isdigit()}
    assert rows == {"1": "stopped", "2": "won", "3": "stopped"}, status.stdout


def test_branch_leaves_the_users_tree_alone_and_the_branch_holds_the_fix(project, gc_home, tmp_path):
    (project / "draft.txt").write_text("the user's uncommitted work\n")
    before = git(project, "status", "--porcelain"), git(project, "rev-parse", "HEAD")
    run = run_goal(project, "run", "make answer.txt right", "--check", "sh check.sh", "--oracle", "conditions",
                   "--attempts", "2", "--branch", "fix/answer", "--maker-cmd", _maker(project), "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    ledger = json.loads(run.stdout)
    gid = ledger["goalId"]
    assert "its work is on the branch fix/answer" in ledger["note"]
    assert _load(gc_home, gid)["maker"]["attempts"] == 2  # the objective form made the goal with its default
    assert git(project, "show", "fix/answer:draft.txt") == "the user's uncommitted work\n"  # started from the disk
    assert (git(project, "status", "--porcelain"), git(project, "rev-parse", "HEAD")) == before
    assert (project / "answer.txt").read_text() == "wrong\n"
    assert git(project, "show", "fix/answer:answer.txt") == "right\n"
    assert git(project, "branch", "--list", "fix/answer").strip().endswith("fix/answer")
    _assert_nothing_left(project, gid, tmp_path / "state")


def test_a_branch_that_exists_is_refused_before_any_maker_runs(project, gc_home, tmp_path):
    gid = _new(project)
    git(project, "branch", "taken")
    run = run_goal(project, "run", gid, "--attempts", "2", "--branch", "taken", "--maker-cmd", _maker(project))
    assert run.returncode == 69 and "the branch taken exists already" in run.stderr
    assert _load(gc_home, gid)["spent"]["iterations"] == 0 and not _groups(tmp_path / "state")


def test_when_the_users_tree_changed_meanwhile_the_winners_branch_is_kept(project, gc_home, tmp_path, monkeypatch):
    monkeypatch.setenv("USER_EDIT", str(project / "answer.txt"))  # the winner's maker edits the user's file too
    gid = _new(project)
    run = run_goal(project, "run", gid, "--attempts", "2", "--maker-cmd", _maker(project))
    assert run.returncode == 0, run.stdout + run.stderr
    kept = f"goal/{gid}/attempt-2"
    assert f"kept on the branch {kept}: bring them in with `git cherry-pick" in run.stdout
    assert (project / "answer.txt").read_text() == "the user's own edit\n"  # nothing half-applied
    assert git(project, "show", f"{kept}:answer.txt") == "right\n"
    _assert_nothing_left(project, gid, tmp_path / "state", keep=kept)


def test_none_converges_each_attempt_stuck_on_its_own_and_the_triage_item_names_each_best(
        project, gc_home, tmp_path):
    gid = _new(project, "--stuck-after", "2", "--attempts", "3")  # the goal's default: `goal run ID` races 3
    run = run_goal(project, "run", gid, "--maker-cmd", "true", "--json")
    assert run.returncode == 2, run.stdout + run.stderr
    doc = _load(gc_home, gid)
    # stuck is each attempt's own: two idle iterations each, not two of the goal's
    assert sorted(it["attempt"] for it in doc["history"]) == [1, 1, 2, 2, 3, 3]
    assert doc["stopReason"] == "stuck" and doc["state"] == "escalated"
    item = json.loads((gc_home / "triage" / f"{doc['escalation']['triageId']}.json").read_text())
    bests = item["attempts"]
    assert [b["attempt"] for b in bests] == [1, 2, 3]
    for b in bests:
        own = [it["number"] for it in doc["history"] if it["attempt"] == b["attempt"]]
        assert b["iteration"] == own[-1] and b["restore"] == f"goal rewind {gid} {own[-1]}"
        assert (b["passing"], b["conditions"]) == (0, 1)
    shown = run_goal(project, "triage", "show", item["triageId"]).stdout
    assert f"attempt 3: best iteration {bests[2]['iteration']} (0/1 passing)" in shown
    _assert_nothing_left(project, gid, tmp_path / "state")
    assert git(project, "for-each-ref", f"refs/goal-convergence/{gid}/").count("\n") == 6  # the goal's checkpoints stay
    report = run_goal(project, "report", gid, "--output", str(tmp_path / "report.html"))
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report.html").read_text()
    assert 'id="attempts"' in html and html.count('class="pill a-escalated"') == 1
    assert html.count('class="pill a-stopped"') == 2


def test_attempts_need_git_and_say_so_before_any_maker_runs(tmp_path, gc_home, monkeypatch):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "check.sh").write_text("true\n")
    gid = _new(folder)
    run = run_goal(folder, "run", gid, "--attempts", "2", "--maker-cmd", "touch made-a-turn")
    assert run.returncode == 69 and "`git init`" in run.stderr, run.stderr
    assert not (folder / "made-a-turn").exists() and _load(gc_home, gid)["spent"]["iterations"] == 0


def test_attempts_one_is_the_loop_of_before(project, gc_home, tmp_path):
    gid = _new(project)
    run = run_goal(project, "run", gid, "--attempts", "1", "--maker-cmd", "echo right > answer.txt")
    assert run.returncode == 0, run.stdout + run.stderr
    doc = _load(gc_home, gid)
    assert (project / "answer.txt").read_text() == "right\n"  # worked in the project itself
    assert "attempt" not in doc["history"][0]
    assert "attempts" not in doc["maker"] and "settingsHistory" not in doc  # how the run works, not a setting
    assert not (gc_home / "worktrees").exists()


def _answer_goal(project: Path, goal_id: str, max_iterations: int) -> Goal:
    return Goal(goal_id=goal_id, objective="make answer.txt right", project_root=str(project),
                stopping_conditions=[StoppingCondition(type="custom_command", command="sh check.sh")],
                budget=Budget(max_iterations=max_iterations), oracle=OracleConfig(provider="conditions", model="none"),
                created_at="2026-12-01T00:00:00Z", updated_at="2026-12-01T00:00:00Z")


@dataclass
class _Paid:
    """Changes a file in its attempt's worktree each turn (never the fix), each turn costing 10 cents."""

    turns: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    name: str = "paid"

    def work(self, goal: Goal, hint: str, timeout: float | None, cancel=None) -> engine.MakerReport:
        with self.lock:
            self.turns.append(goal.project_root)
            n = len(self.turns)
        (Path(goal.project_root) / "notes.txt").write_text(f"turn {n}\n")
        time.sleep(0.05 * (n % 3))  # makers finish in another order than they started
        return engine.MakerReport(summary=f"turn {n}", cost=Cost(dollars=0.1, tokens=10))


def test_the_budget_is_shared_and_every_turn_is_charged(store, project, gc_home):
    goal = store.create(_answer_goal(project, "goal-abcdef12", max_iterations=4))
    maker = _Paid()
    result = runner.run_goal(store, goal.goal_id, maker, attempts=3)
    assert (result.stop, result.exit_code) == ("ceiling", 4)
    g = result.goal
    assert g.spent.iterations == len(g.history) == 4
    assert {it.attempt for it in g.history} <= {1, 2, 3} and all(it.attempt for it in g.history)
    # turns that ended after the budget ran out were charged too: none is lost
    assert len(maker.turns) >= 4 and g.spent.maker_dollars == pytest.approx(0.1 * len(maker.turns))
    assert 1 < len(set(maker.turns)) <= 3 and str(project) not in maker.turns  # in worktrees, not the project


@pytest.mark.parametrize("then", ["run", "abandon"])
def test_a_killed_runs_worktrees_and_makers_are_reaped_by_the_next_run_or_abandon(project, gc_home, tmp_path,
                                                                               monkeypatch, then):
    state = tmp_path / "state"
    gid = _new(project)
    env = {**os.environ, "HANG_FIRST": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "goal_convergence", "run", gid, "--attempts", "2",
                             "--maker-cmd", _maker(project)], cwd=project, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(_groups(state)) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "the attempts never started"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    stale = sorted(p.name for p in worktree.home_for(gid).iterdir())
    assert stale == ["attempt-1", "attempt-2"]
    killed = _groups(state)
    if then == "run":
        monkeypatch.setenv("WINNER", "1")
        for f in state.glob("*.turns"):
            f.write_text("1")  # the next turns are the second ones: attempt 1 fixes the bug
        run = run_goal(project, "run", gid, "--attempts", "2", "--maker-cmd", _maker(project))
        assert run.returncode == 0, run.stdout + run.stderr
        assert not (state / "saw-stale").exists()  # fresh worktrees, not the killed run's
        assert (project / "answer.txt").read_text() == "right\n"
        assert not any(_group_alive(g) for g in killed)  # the killed run's makers, reaped as it took the claim
        _assert_nothing_left(project, gid, state)
    else:
        try:
            assert run_goal(project, "abandon", gid).returncode == 0
            assert git(project, "worktree", "list").count("\n") == 1
            assert git(project, "branch", "--list", "goal/*").split() == [] and not worktree.home_for(gid).exists()
        finally:  # abandon ends no process; the next `goal run` of any goal reaps a dead run's children (claim.py)
            for g in killed:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(g, signal.SIGKILL)


def test_standings_side_by_side(make_goal):
    from goal_convergence.models import ConditionEvidence, Decision, Iteration, Verdict

    def it(n: int, attempt: int, passed: bool, action: str = "continue", reason: str | None = None) -> Iteration:
        cond = ConditionEvidence(index=0, type="custom_command", command="c", exit_code=0 if passed else 1,
                                 passed=passed, duration_seconds=0.1)
        return Iteration(number=n, started_at="2026-12-01T00:00:00Z", ended_at="2026-12-01T00:00:01Z",
                         conditions=[cond], attempt=attempt, maker_cost=Cost(dollars=0.25),
                         verdict=Verdict(converged=False, reasons=[f"reason {n}"]),
                         decision=Decision(action=action, stop_reason=reason))
    goal = make_goal(history=[it(1, 1, False), it(2, 2, True), it(3, 2, False, "stop", "stuck"), it(4, 1, False)])
    rows = standings.standings(goal)
    assert [(r.attempt, r.state, len(r.iterations), r.best.number, r.dollars, r.reason) for r in rows] == [
        (1, "working", 2, 4, 0.5, "reason 4"), (2, "stopped", 2, 2, 0.5, "reason 3")]
    assert standings.standings(make_goal(history=[it(1, 1, False)])) == []  # one attempt: nothing side by side


def test_a_goal_paused_mid_race_stops_every_attempt_and_leaves_no_worktree(store, project, gc_home):
    from goal_convergence.goals import moves

    goal = store.create(_answer_goal(project, "goal-paused12", max_iterations=20))

    class Pauser(_Paid):
        paused = None
        def work(self, goal, hint, timeout, cancel=None):
            report = super().work(goal, hint, timeout, cancel)
            with self.lock:
                if len(self.turns) >= 5 and not self.paused:  # someone runs `goal pause` while the makers work
                    self.paused = moves.move(store, goal.goal_id, "pause")
            return report

    maker = Pauser()
    result = runner.run_goal(store, goal.goal_id, maker, attempts=2)
    assert (result.stop, result.exit_code, result.goal.state) == ("paused", 75, "paused")
    assert result.goal.spent.maker_dollars == pytest.approx(0.1 * len(maker.turns))  # every turn charged
    assert result.goal.pending is None or result.goal.pending.maker_cost.dollars > 0
    assert git(project, "worktree", "list").count("\n") == 1 and not worktree.home_for(goal.goal_id).exists()
    assert git(project, "branch", "--list", "goal/*").split() == []
