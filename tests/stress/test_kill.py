"""kill -9 of a real `goal run` at each phase of an iteration, again and again; after each kill the next
`goal run` carries on. Invariants (tests/stress/invariants.py): no iteration lost or counted twice, the
goal file always valid, no child process left alive, spend never decreases, active time never includes
the downtime between a kill and the next run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO, run_goal
from tests.fakeapi import delay, text

from . import invariants as inv
from .report import assert_clean
from .scale import SCALE, sized

pytestmark = pytest.mark.stress

GOAL = [sys.executable, "-m", "goal_convergence"]
PHASES = ("maker running", "conditions running", "oracle call in flight", "persisting")
KILLS = sized(24, 8)  # spread evenly over the phases
DOWNTIME = 2.0 if SCALE == "full" else 1.0  # between a kill and the next run: never charged as active time
REACH = 90.0  # seconds for a run to reach the phase it is to be killed in

# The maker and the condition hold (sleep) when the control folder names their phase, so the kill lands there.
MAKER = """
import pathlib, sys, time
ctl = pathlib.Path(sys.argv[1])
if (ctl / "phase").read_text() == "maker running":
    (ctl / "at-phase").touch()
    time.sleep(300)
with open("notes.txt", "a") as fh:
    fh.write(f"{time.time_ns()}\\n")
"""
CONDITION = """
import pathlib, sys, time
ctl = pathlib.Path(sys.argv[1])
if (ctl / "phase").read_text() == "conditions running":
    (ctl / "at-phase").touch()
    time.sleep(300)
"""


def verdict(converged: bool):
    return text(json.dumps({"converged": converged, "conditionResults": [], "reasons": ["scripted"],
                            "nextHint": "" if converged else "keep going", "confidence": 0.9}))


class Oracle:
    """The scripted API's answers: held while the phase is the oracle's, signalled when it answers."""

    def __init__(self, ctl: Path) -> None:
        self.ctl, self.finish = ctl, False

    def __call__(self, body: dict):
        phase = (self.ctl / "phase").read_text()
        if phase == "oracle call in flight":
            (self.ctl / "at-phase").touch()
            return delay(300, verdict(False))
        if phase == "persisting":  # the answer goes out now: the kill lands while the run persists it
            (self.ctl / "at-phase").touch()
        return verdict(self.finish)


@pytest.fixture
def setup(git_repo, fake_api, tmp_path, monkeypatch):
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    (ctl / "phase").write_text("none")
    (tmp_path / "maker.py").write_text(MAKER)
    (tmp_path / "cond.py").write_text(CONDITION)
    for name, value in {"ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "x",
                        "GOAL_CONVERGENCE_ORACLE_RETRIES": "0", "GOAL_CONVERGENCE_ORACLE_TIMEOUT": "600"}.items():
        monkeypatch.setenv(name, value)
    oracle = Oracle(ctl)
    fake_api.set_responder(oracle)
    made = run_goal(git_repo, "new", "keep notes until the oracle agrees", "--check",
                    f"{sys.executable} {tmp_path / 'cond.py'} {ctl}", "--max-iterations", "500",
                    "--max-duration", "10h", "--max-dollars", "1000", "--json")
    assert made.returncode == 0, made.stderr
    token = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(REPO), "STRESS_TOKEN": token}
    args = [*GOAL, "run", json.loads(made.stdout)["goalId"], "--maker-cmd",
            f"{sys.executable} {tmp_path / 'maker.py'} {ctl}", "--json"]
    yield json.loads(made.stdout)["goalId"], ctl, oracle, env, args, token
    for pid in inv.processes_with(token):  # whatever an unfixed runner left behind: ours, killed by pid
        os.kill(pid, signal.SIGKILL)


def test_kill_9_at_every_phase_then_the_next_run_carries_on(setup, git_repo, gc_home, tally):
    goal_id, ctl, oracle, env, args, token = setup
    rows = {phase: tally(f"kill -9 of goal run: {phase}") for phase in PHASES}
    to_the_end = tally("kill -9 of goal run: the run after the kills ends it")
    clock, before = inv.ActiveTime(), None
    for k in range(KILLS):
        phase = PHASES[k % len(PHASES)]
        with rows[phase].attempt(f"kill {k + 1} ({phase})"):
            (ctl / "at-phase").unlink(missing_ok=True)
            (ctl / "phase").write_text(phase)
            started = time.monotonic()
            run = subprocess.Popen(args, cwd=git_repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                reached = _wait_for(ctl / "at-phase", run, REACH)
                if phase == "persisting":
                    time.sleep(random.uniform(0.0, 0.05))
            finally:
                run.kill()
                run.wait()
                clock.alive += time.monotonic() - started
            survivors = inv.reap_survivors(token)  # first: whatever else fails, none may spill into the next kill
            err = run.stderr.read().decode("utf-8", "replace")[-500:]
            run.stderr.close()
            assert reached, f"the run after the previous kill did not reach {phase!r} (exit {run.returncode}): {err}"
            doc = inv.goal_doc(gc_home, goal_id)
            inv.check_ledger(doc)
            inv.check_never_decreases(before, doc)
            clock.check(doc)
            before = doc
            inv.check_no_children(survivors)
        time.sleep(DOWNTIME)
    with to_the_end.attempt("the last run"):
        (ctl / "phase").write_text("none")
        oracle.finish = True
        started = time.monotonic()
        done = subprocess.run(args, cwd=git_repo, env=env, capture_output=True, text=True, timeout=300)
        clock.alive += time.monotonic() - started
        survivors = inv.reap_survivors(token)
        assert done.returncode == 0, f"the last run exited {done.returncode}: {done.stderr[-500:]}"
        doc = inv.goal_doc(gc_home, goal_id)
        assert doc["state"] == "converged" and doc["pending"] is None, (doc["state"], doc["pending"])
        inv.check_ledger(doc)
        inv.check_never_decreases(before, doc)
        clock.check(doc)
        inv.check_no_children(survivors)
    assert_clean(*rows.values(), to_the_end)


def _wait_for(marker: Path, run: subprocess.Popen, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if marker.exists():
            return True
        if run.poll() is not None:
            return False
        time.sleep(0.02)
    return False
