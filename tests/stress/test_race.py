"""Racing hooks on one goal: real `goal hook stop` and `goal hook session-end` processes of one session, on
one transcript, all at once. The transcript is charged exactly once and the goal file stays valid."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from goal_convergence.goals import creation, specs
from goal_convergence.storage import cost
from goal_convergence.storage.store import Store
from tests.conftest import REPO, wait_until

from . import invariants as inv
from .report import assert_clean
from .scale import sized

pytestmark = pytest.mark.stress

ROUNDS, PER_ROUND = sized(4, 3), sized(10, 6)  # 40 racing hooks in all (18 short)
MESSAGES = 10  # new in the transcript at each round
# Lines per message (Claude Code writes one per content block, each with the message's usage; it counts
# once): a few MB a round, so that reading it keeps each hook between its load of the offsets and its charge.
BLOCKS = 3000
# `goal hook EVENT` through the console script's own entry, its slow path imported before the input
# arrives: released at once, the hooks then meet at the goal file instead of finishing their imports in turn.
PRELOADED = ("import sys; import goal_convergence.agents.claude_code.hooks; from goal_convergence.entry import main; "
             "sys.argv[0] = 'goal'; main()")
MODEL = "claude-sonnet-5"


def assistant_line(n: int) -> str:
    usage = {"input_tokens": 1000 + n, "output_tokens": 100 + n}
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00Z", "message": {
        "id": f"msg_{n:04d}", "model": MODEL, "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "usage": usage}}) + "\n"


def test_racing_hooks_charge_the_transcript_once(git_repo, gc_home, tmp_path, tally):
    race = tally("racing stop and session-end hooks, one session")
    # A check that fails, so each stop runs a whole iteration and blocks; never stuck within the race.
    (git_repo / "check.py").write_text("import sys\nsys.exit(1)\n")
    goal = creation.new_goal(Store(), specs.GoalSpec(objective="race", project=git_repo, checks=["python3 check.py"],
                                                  oracle_provider="conditions", max_iterations=1000,
                                                  stuck_after=1000, session_id="s-race"))
    transcript = tmp_path / "s-race.jsonl"
    transcript.touch()
    lines = [assistant_line(n) for n in range(ROUNDS * MESSAGES)]
    expected = sum(cost.usage_cost(MODEL, json.loads(line)["message"]["usage"]) for line in lines)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def hook(event: str, n: int) -> tuple[subprocess.Popen, int, bytes]:
        """A hook process that waits for its input on a pipe of ours, written when the race starts."""
        payload = {"session_id": "s-race", "transcript_path": str(transcript), "cwd": str(git_repo),
                   "hook_event_name": event, "stop_hook_active": False, "last_assistant_message": f"hook {n}"}
        read, write = os.pipe()
        proc = subprocess.Popen([sys.executable, "-c", PRELOADED, "hook", event], stdin=read,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        os.close(read)
        return proc, write, json.dumps(payload).encode()

    def go(write: int, payload: bytes) -> None:
        os.write(write, payload)
        os.close(write)

    def answer(proc: subprocess.Popen, timeout: float) -> None:
        try:
            out, _ = proc.communicate(timeout=timeout)
        finally:
            proc.kill()
        inv.check_hook_answer(proc.returncode, out.decode("utf-8", "replace"))

    over = 0.0
    for r in range(ROUNDS):
        # The session spent more, and changed the tree (so the stops are never stuck): then the hooks race.
        with open(transcript, "a") as fh:
            fh.writelines(line * BLOCKS for line in lines[r * MESSAGES:(r + 1) * MESSAGES])
        (git_repo / "work.txt").write_text(f"round {r}\n")
        runs = [hook("stop" if n % 2 == 0 else "session-end", n) for n in range(PER_ROUND)]
        for _, write, payload in runs:
            go(write, payload)
        for n, (proc, _, _) in enumerate(runs):
            with race.attempt(f"round {r}, hook {n}"):
                answer(proc, 600)
        with race.attempt(f"the goal after round {r}"):  # a stop holds the newest message back: at most this
            so_far = sum(cost.usage_cost(MODEL, json.loads(line)["message"]["usage"])
                         for line in lines[:(r + 1) * MESSAGES])
            charged = inv.goal_doc(gc_home, goal.goal_id)["spent"]["makerDollars"]
            if charged - so_far > over + 1e-9:  # each round's overcharge counted once
                new, over = charged - so_far - over, charged - so_far
                raise inv.Lost(f"this round charged ${new:.6f} more than was spent (${charged:.6f} for ${so_far:.6f})")
    with race.attempt("the goal after the races and one last session-end"):
        last, write, payload = hook("session-end", PER_ROUND)  # the session ends: what a stop held back is charged now
        go(write, payload)
        answer(last, 120)
        # SessionEnd's work is done by a child the hook does not wait for
        wait_until(lambda: inv.goal_doc(gc_home, goal.goal_id)["transcriptOffsets"].get(str(transcript))
                   == transcript.stat().st_size, "the last SessionEnd's charge", 120)
        doc = inv.goal_doc(gc_home, goal.goal_id)
        inv.check_ledger(doc)
        assert doc["state"] == "active", f"the goal ended during the race: {doc['state']} {doc.get('stopReason')}"
        charged = doc["spent"]["makerDollars"]
        if abs(charged - expected) > 1e-9:
            raise inv.Lost(f"the transcript costs ${expected:.6f} and was charged ${charged:.6f} "
                           f"({charged / expected:.2f} times)")
        assert doc["transcriptOffsets"].get(str(transcript)) == transcript.stat().st_size, doc["transcriptOffsets"]
    assert_clean(race)
