"""A maker cannot change its own goal, its turn ends with its whole process tree, and it has an honest way out
(issue 24). Real process chains: `goal run` as a process, its maker a shell, and the maker's own `goal` calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.models import Goal, TriageItem
from goal_convergence.system import orphans

from ..conftest import run_goal
from .test_claim import goal_run, wait_for

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the maker's process tree is read from /proc")

APPROVE = "cat >/dev/null; echo '{\"ok\": true, \"reason\": \"looks good\"}'"


def new_goal(project: Path, check: str = "test -f done.txt", *flags: str) -> str:
    done = run_goal(project, "new", "make done.txt", "--check", check, "--oracle", "command", "--oracle-cmd", APPROVE,
                    *flags, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["goalId"]


def run(project: Path, goal_id: str, maker: str, *flags: str) -> subprocess.CompletedProcess:
    """`goal run ID --maker-cmd MAKER` as a process of its own: the maker's ancestry is a real runner's."""
    return subprocess.run([sys.executable, "-m", "goal_convergence", "run", goal_id, "--maker-cmd", maker, *flags],
                          cwd=project, capture_output=True, text=True, timeout=120)


# Each try's exit code and output go to $OUT/NAME.code and NAME.out; the maker then does the work.
TRIES = r"""
goal() { "$PY" -m goal_convergence "$@"; }
try() { name=$1; shift; "$@" > "$OUT/$name.out" 2>&1; echo $? > "$OUT/$name.code"; }
try run goal run "$GOAL_ID" --oracle conditions --maker-cmd true
try new goal new "a second goal of the maker's" --check true --oracle conditions
try abandon env -u GOAL_CONVERGENCE_MAKER "$PY" -m goal_convergence abandon "$GOAL_ID"
try pause goal pause
try act goal triage act tri-aaaaaaaa
try slash sh -c 'echo abandon | "$PY" -m goal_convergence slash'
try status goal status "$GOAL_ID"
try list goal list --all --json
try triage goal triage list
try help goal run --help
env > "$OUT/maker.env"
touch done.txt
"""


@pytest.fixture
def out(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    monkeypatch.setenv("OUT", str(folder))
    monkeypatch.setenv("PY", sys.executable)
    return folder


def test_a_maker_is_refused_every_change_to_goals_and_its_run_carries_on(store, git_repo, out, tmp_path):
    goal_id = new_goal(git_repo)
    (tmp_path / "maker.sh").write_text(TRIES)
    done = run(git_repo, goal_id, f"sh {tmp_path / 'maker.sh'}")
    assert done.returncode == 0, done.stderr
    for name in ("run", "new", "abandon", "pause", "act", "slash"):
        said = (out / f"{name}.out").read_text()
        assert (out / f"{name}.code").read_text().strip() == "77", (name, said)
        assert f"inside the maker of goal {goal_id}" in said and "Only a person may" in said, said
        assert '`goal blocked "why"`' in said
    for name in ("status", "list", "triage", "help"):
        assert (out / f"{name}.code").read_text().strip() == "0", (out / f"{name}.out").read_text()
    goal = store.load(Goal, goal_id)
    assert (goal.state, goal.oracle.provider, goal.settings_history) == ("converged", "command", [])
    assert [s["goalId"] for s in store.summaries()] == [goal_id]  # no second goal
    env = (out / "maker.env").read_text().splitlines()
    assert f"GOAL_CONVERGENCE_MAKER={goal_id}" in env and f"GOAL_ID={goal_id}" in env
    assert not [line for line in env if line.startswith("GOAL_FILE=")]
    assert not list((store.root / "makers").iterdir())  # the runner's record went with its claim


def test_the_same_commands_from_a_person_outside_any_maker_are_not_refused(store, git_repo):
    goal_id = new_goal(git_repo)
    assert run_goal(git_repo, "pause", goal_id).returncode == 0
    assert run_goal(git_repo, "abandon", goal_id).returncode == 0


def test_flags_given_to_a_refused_second_run_change_nothing(store, git_repo):
    goal_id = new_goal(git_repo)
    first = goal_run(git_repo, goal_id, "touch started; sleep 60")
    try:
        wait_for(lambda: (git_repo / "started").exists())
        second = run_goal(git_repo, "run", goal_id, "--oracle", "conditions", "--max-iterations", "99",
                          "--maker-cmd", "touch done.txt")
        assert second.returncode == 70 and "already being run" in second.stderr, second.stderr
    finally:
        first.kill()
        first.wait()
    goal = store.load(Goal, goal_id)
    assert (goal.oracle.provider, goal.budget.max_iterations, goal.settings_history) == ("command", 15, [])


def test_flags_given_with_the_goal_id_apply_once_the_run_holds_the_claim(store, git_repo):
    goal_id = new_goal(git_repo)
    done = run_goal(git_repo, "run", goal_id, "--oracle", "conditions", "--maker-cmd", "touch done.txt")
    assert done.returncode == 0, done.stderr
    goal = store.load(Goal, goal_id)
    assert (goal.state, goal.oracle.provider, len(goal.settings_history)) == ("converged", "conditions", 1)


def test_goal_blocked_from_inside_a_maker_escalates_its_goal_with_the_reason(store, git_repo):
    goal_id = new_goal(git_repo)
    why = "the test expects 3 but the spec says 4"
    done = run(git_repo, goal_id, f"{sys.executable} -m goal_convergence blocked '{why}'")
    assert done.returncode == 1, done.stderr  # unfixable
    goal = store.load(Goal, goal_id)
    assert (goal.state, goal.stop_reason, goal.escalation.blocker) == ("escalated", "unfixable", "needs_user_input")
    assert why in goal.escalation.detail
    item = store.load(TriageItem, goal.escalation.triage_id)
    assert why in item.reasons[0] and item.blocker == "needs_user_input"


def test_a_goal_blocked_line_in_the_makers_last_message_escalates_the_goal(store, git_repo):
    goal_id = new_goal(git_repo)
    done = run_goal(git_repo, "run", goal_id, "--maker-cmd", "echo 'I looked.'; echo '**Goal blocked:** no such API'")
    assert done.returncode == 1, done.stderr
    goal = store.load(Goal, goal_id)
    assert (goal.state, goal.stop_reason, goal.escalation.blocker) == ("escalated", "unfixable", "needs_user_input")
    item = store.load(TriageItem, goal.escalation.triage_id)
    assert any("cannot be met as written: no such API" in r for r in item.reasons)


# Left running by the maker: a setsid daemon that swaps the fixed file in while the checks run, a double fork, and
# a plain background sleep; each records its pid.
STRAYS = r"""
echo broken > state.txt
setsid sh -c 'echo $$ >> "$OUT/pids"; sleep 0.5; while :; do echo fixed > state.txt; sleep 0.05; done' \
  > /dev/null 2>&1 < /dev/null &
sh -c 'sleep 300 > /dev/null 2>&1 & echo $! >> "$OUT/pids"' &
setsid sh -c 'sleep 301 & echo $! >> "$OUT/pids"; wait' > /dev/null 2>&1 < /dev/null &
sleep 302 > /dev/null 2>&1 & echo $! >> "$OUT/pids"
while [ "$(wc -l < "$OUT/pids")" -lt 4 ]; do sleep 0.01; done
"""


def test_a_makers_turn_ends_with_every_process_it_left_and_the_checks_see_its_tree(store, git_repo, out, tmp_path):
    goal_id = new_goal(git_repo, "sleep 1; grep -qx fixed state.txt", "--max-iterations", "1")
    (tmp_path / "maker.sh").write_text(STRAYS)
    done = run(git_repo, goal_id, f"sh {tmp_path / 'maker.sh'}")
    assert done.returncode == 4, done.stderr  # ceiling: the daemon's swap never reached the checks
    pids = [int(p) for p in (out / "pids").read_text().split()]
    assert len(pids) == 4
    assert [p for p in pids if orphans.alive(p, None)] == []
    assert (git_repo / "state.txt").read_text() == "broken\n"
    assert store.load(Goal, goal_id).history[0].conditions[0].passed is False


def test_strays_are_ended_below_the_runner_only(store, git_repo, out, tmp_path):
    # A process of this test's own, started before the run, is no stray of the maker's.
    mine = subprocess.Popen(["sleep", "60"])
    try:
        goal_id = new_goal(git_repo)
        done = run_goal(git_repo, "run", goal_id, "--maker-cmd", "setsid sleep 303 & touch done.txt")
        assert done.returncode == 0, done.stderr
        assert orphans.alive(mine.pid, None)
    finally:
        mine.kill()
        mine.wait()
    assert os.environ.get("GOAL_CONVERGENCE_MAKER") is None
