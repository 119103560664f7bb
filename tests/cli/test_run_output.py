"""What `goal run` prints, in a pipe as on a terminal (issue 28, item 3): the goal, its conditions and its judge
at the start; a block an iteration with the maker's summary and the hint it got back; the ledger and the next
commands at the end (report/story.py, the demo's renderer too). `--quiet` prints the stop alone."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.conftest import run_goal as goal

SAYS = f"{shlex.quote(sys.executable)} -c \"print('I looked at the failing check and changed nothing')\""


def test_a_piped_run_tells_the_goal_each_iteration_and_what_to_run_next(git_repo):
    done = goal(git_repo, "run", "make it pass", "--test", "false", "--oracle", "conditions", "--maker-cmd", SAYS,
                "--max-iterations", "2")
    assert done.returncode == 4, done.stderr  # the ceiling
    out = done.stdout.splitlines()
    goal_id = out[0].split(":")[0]
    assert out[:5] == [f"{goal_id}: make it pass", "conditions:", "  [0] test_pass: false",
                       "judge: the conditions alone (no oracle model)",
                       "budget: iterations 0/2, time 0s/2h, spend $0.00/$10.00"]
    first = out.index(next(line for line in out if line.startswith("iteration 1/2: 0/1 passing, $0.00")))
    assert out[first + 1] == "  maker: I looked at the failing check and changed nothing"
    assert out[first + 2].startswith("  hint back to the maker: Make the failing checks pass. [0] `false`")
    assert any(line.startswith("iteration 2/2: 0/1 passing") for line in out)
    ending = out[-10:]
    assert out[-11] == ""  # a blank line before the ending
    triage = json.loads(goal(git_repo, "status", goal_id, "--json").stdout)["escalation"]["triageId"]
    assert ending[0].startswith(f"{goal_id}: ceiling after 2 iterations")
    assert ending[1:3] == [f"escalated: triage item {triage} (`goal triage show {triage}`)",
                           "last hint: Make the failing checks pass. [0] `false`: exit 1"]
    assert ending[3:6] == ["ledger (`goal run --json` prints it whole):",
                           "  #1 continue 0/1 passing, integrity clean, $0.00",
                           "  #2 stop     0/1 passing, integrity clean, $0.00"]
    assert ending[-4:] == ["next:", f"  goal triage show {triage}", f"  goal status {goal_id}",
                           f"  goal report {goal_id} --open"]


def test_quiet_prints_only_the_stop(git_repo):
    done = goal(git_repo, "run", "make it pass", "--test", "true", "--oracle", "conditions", "--maker-cmd", "true",
                "--quiet")
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith("goal-") and ": converged after 1 iteration, " in line and line.endswith(", $0.00")


def test_on_a_terminal_the_run_tells_the_same_and_draws_a_condition_that_runs_a_second(git_repo, tmp_path):
    import os
    import select
    import subprocess

    leader, follower = os.openpty()
    goal_script = str(Path(sys.executable).parent / "goal")
    proc = subprocess.Popen([goal_script, "run", "make it pass", "--test", "sleep 1.5", "--oracle", "conditions",
                             "--maker-cmd", SAYS], cwd=git_repo, stdin=subprocess.DEVNULL, stdout=follower,
                            stderr=follower, env={**os.environ, "COLUMNS": "200"})
    os.close(follower)
    shown = b""
    while True:
        ready = select.select([leader], [], [], 120)[0]
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the terminal closed: the run has ended
            chunk = b""
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    text = shown.decode().replace("\r\n", "\n")
    goal_id = text.rsplit("goal report ", 1)[1].split()[0]
    # after the live lines of the goal's start run (the census `goal run OBJECTIVE` takes as it makes the goal)
    assert f"{goal_id}: make it pass\nconditions:\n  [0] test_pass: sleep 1.5\n" in text
    assert "  maker: I looked at the failing check and changed nothing" in text
    assert "✓ [0]    1." in text  # the live line, once the condition ran a second
    assert text.rstrip().endswith(f"next:\n  goal status {goal_id}\n  goal report {goal_id} --open")
