"""Billed == charged: `goal run --attempts N` works a goal bound to a session whose Stop hooks fire meanwhile.

The scripted API bills every Messages call the same usage, and the session's transcript grows between the hooks,
so what was billed is known to the cent: the oracle's calls times their price, and the transcript's messages. The
goal must charge exactly that, whoever made the iterations (issue 27, part A: one writer of money per goal).
Shared by the short form in the default suite (tests/loop/test_one_writer.py) and the long one (-m stress)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from goal_convergence.goals import creation, specs
from goal_convergence.models import Goal
from goal_convergence.storage import cost
from goal_convergence.storage.store import Store
from tests.conftest import REPO, git, wait_until
from tests.fakeapi import FakeAPI, text

ORACLE = "claude-haiku-5-5"
MAKER = "claude-sonnet-5"
USAGE = {"input_tokens": 1000, "output_tokens": 100}
VERDICT = json.dumps({"converged": False, "reasons": ["calc is still wrong"], "nextHint": "fix calc",
                      "confidence": 0.5})


@dataclass
class Figures:
    oracle_billed: float
    oracle_charged: float
    maker_billed: float
    maker_charged: float
    calls: int
    iterations: int
    hooks: int  # Stop hooks fired while the run ran
    deferred: int  # Stop hooks that said a `goal run` holds the goal


def _assistant(n: int) -> str:
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00Z", "sessionId": "s-money", "message": {
        "id": f"msg_m{n:05d}", "model": MAKER, "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 500 + n, "output_tokens": 50 + n}}}) + "\n"


def run(project: Path, api: FakeAPI, tmp: Path, *, attempts: int, iterations: int, hooks: int) -> Figures:
    """Run the race; every figure needed to compare what was billed with what was charged."""
    (project / "check.py").write_text("import sys\nsys.exit(1)\n")  # never green: every iteration is judged
    maker = tmp / "maker.py"
    maker.write_text("import pathlib, time, uuid\npathlib.Path('notes.txt').write_text(uuid.uuid4().hex)\n"
                     "time.sleep(0.3)\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "checks")
    api.set_responder(lambda body: text(VERDICT, usage=USAGE))
    goal = creation.new_goal(Store(), specs.GoalSpec(
        objective="race the money", project=project, checks=["python3 check.py"], oracle_provider="anthropic",
        oracle_model=ORACLE, max_iterations=iterations, max_dollars=None, max_duration=None,
        stuck_after=1000, session_id="s-money"))
    transcript = tmp / "s-money.jsonl"
    transcript.touch()
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "x",
           "GOAL_CONVERGENCE_ORACLE_RETRIES": "0", "GOAL_CONVERGENCE_ORACLE_TIMEOUT": "30"}
    runner = subprocess.Popen([sys.executable, "-m", "goal_convergence", "run", goal.goal_id, "--attempts",
                               str(attempts), "--maker-cmd", f"{sys.executable} {maker}", "--json"],
                              cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: runner.poll() is not None or Store().load(Goal, goal.goal_id).runner is not None,
               "the run takes its claim")
    written = deferred = charged_lines = 0
    payload = {"session_id": "s-money", "transcript_path": str(transcript), "cwd": str(project),
               "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "done"}
    try:
        for _ in range(hooks):
            if runner.poll() is not None:
                break
            with transcript.open("a") as out:
                for _ in range(3):
                    out.write(_assistant(written))
                    written += 1
            done = subprocess.run([sys.executable, "-m", "goal_convergence", "hook", "stop"],
                                  input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=300)
            assert done.returncode == 0, done.stderr.decode()
            deferred += b"is being run by `goal run`" in done.stdout
            if done.stdout.strip():  # the goal was still the session's: what it spent so far is charged
                charged_lines = written
            time.sleep(0.2)
        out_, err = runner.communicate(timeout=600)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode in (0, 2, 4, 7), err.decode() + out_.decode()
    # The session ends: its last message, held back by every Stop's read, is charged now (SessionEnd's child).
    end = {**payload, "hook_event_name": "SessionEnd", "reason": "exit"}
    subprocess.run([sys.executable, "-m", "goal_convergence", "hook", "session-end"], input=json.dumps(end).encode(),
                   env=env, capture_output=True, timeout=120, check=True)
    with open(Store().root / "locks" / "session-end.s-money.lock", "a+") as lock:  # held by its child as it works
        fcntl.flock(lock, fcntl.LOCK_EX)
    # What the session spent on the goal: up to its last stop that found the goal still working (after the run
    # ended it, the session's messages are not the goal's).
    maker_billed = sum(cost.usage_cost(MAKER, json.loads(_assistant(n))["message"]["usage"])
                       for n in range(charged_lines))
    final = Store().load(Goal, goal.goal_id)
    calls = len(api.messages)
    return Figures(oracle_billed=calls * cost.usage_cost(ORACLE, USAGE), oracle_charged=final.spent.oracle_dollars,
                   maker_billed=maker_billed, maker_charged=final.spent.maker_dollars, calls=calls,
                   iterations=final.spent.iterations, hooks=written // 3, deferred=deferred)
