"""The session's spend, metered from its transcript by the hooks: charged once however many hooks of
the session race, and never for what the session spent while its goal was not active."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks, transcript
from goal_convergence.goals import moves
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.agents.claude_code.test_hooks import load, make_goal

SONNET = "claude-sonnet-5"


@pytest.fixture
def project(git_repo: Path) -> Path:
    return git_repo


def line(mid: str, at: datetime, inp: int = 100_000, out: int = 10_000) -> str:
    return json.dumps({"type": "assistant", "timestamp": at.isoformat().replace("+00:00", "Z"), "message": {
        "id": mid, "model": SONNET, "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": inp, "output_tokens": out}}}) + "\n"


def cost_of(path: Path) -> float:
    return transcript.read(path, {}, final=True).dollars


def session_end(project: Path, path: Path) -> bytes:
    return json.dumps({"session_id": "s-1", "transcript_path": str(path), "cwd": str(project),
                       "hook_event_name": "SessionEnd", "reason": "exit"}).encode()


def test_racing_hooks_of_one_session_charge_its_transcript_once(project, tmp_path):
    goal = make_goal(project)
    path = tmp_path / "t.jsonl"
    later = datetime.now(UTC) + timedelta(hours=1)
    # Long enough that reading it takes a while: hooks that read it outside the goal's lock all overlap.
    path.write_text("".join(line(f"msg_{i}", later, inp=10, out=1) for i in range(20_000)))
    expected = cost_of(path)
    hooks_at_once = 8
    gate = threading.Barrier(hooks_at_once)
    errors: list[BaseException] = []

    def hook() -> None:
        try:
            gate.wait()
            hooks.run("session-end", session_end(project, path), Store())
        except BaseException as exc:  # noqa: BLE001  (reported below, in the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=hook) for _ in range(hooks_at_once)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert load(goal.goal_id).spent.maker_dollars == pytest.approx(expected)


def test_what_a_session_spent_while_its_goal_was_paused_is_not_charged_after_resume(project, tmp_path):
    goal = make_goal(project)
    start = datetime.now(UTC)
    path = tmp_path / "t.jsonl"
    path.write_text(line("msg_before", start + timedelta(minutes=1)))
    hooks.run("session-end", session_end(project, path), Store())
    before = load(goal.goal_id).spent.maker_dollars
    assert before == cost_of(path)

    moves.move(Store(), goal.goal_id, "pause", now=start + timedelta(minutes=2))
    with path.open("a") as fh:
        fh.write(line("msg_paused", start + timedelta(minutes=3), inp=900_000))
    hooks.run("session-end", session_end(project, path), Store())  # no goal is active: nothing charged
    moves.resume(Store(), goal.goal_id, now=start + timedelta(minutes=4))
    after = tmp_path / "after.jsonl"
    after.write_text(line("msg_after", start + timedelta(minutes=5), inp=50_000))
    with path.open("a") as fh:
        fh.write(after.read_text())

    hooks.run("session-end", session_end(project, path), Store())
    saved = Store().load(Goal, goal.goal_id)
    assert saved.spent.maker_dollars == pytest.approx(before + cost_of(after))
    assert saved.transcript_since is None  # the skip is done once the transcript was read
