"""The Claude Code hooks, run as Claude Code runs them: a process with the hook JSON on stdin.

Each test drives `goal hook <event>` (or the plugin's launcher) as a subprocess against a real goal
store and a real project; the oracle is the conditions-only one, so no model is needed here (the
end-to-end tests in tests/e2e/ use a scripted API and the real Claude Code).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.goals import creation, moves, specs
from goal_convergence.models import Goal, TriageItem
from goal_convergence.storage.store import Store
from goal_convergence.system import index
from goal_convergence.system.text import money
from tests.conftest import REPO, wait_until

LAUNCHER = REPO / "scripts" / "goal-launch.py"
SONNET = "claude-sonnet-5"


def run_hook(event: str, payload: dict | bytes, *, cmd: list[str] | None = None, env: dict | None = None) -> dict | None:
    """Run one hook; assert it behaved as a hook must (exit 0, no traceback); return its JSON answer."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    done = subprocess.run(cmd or [sys.executable, "-m", "goal_convergence", "hook", event], input=data,
                          capture_output=True, env=env or os.environ.copy(), timeout=120)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in out + err
    return json.loads(out) if out.strip() else None


@pytest.fixture
def project(git_repo: Path) -> Path:
    """A project whose one check passes once ``fixed.txt`` exists."""
    (git_repo / "check.py").write_text("import os, sys\nsys.exit(0 if os.path.exists('fixed.txt') else 1)\n")
    return git_repo


def make_goal(project: Path, session: str | None = "s-1", **spec) -> Goal:
    options = dict(checks=["python3 check.py"], oracle_provider="conditions", max_iterations=10, session_id=session)
    return creation.new_goal(Store(), specs.GoalSpec(project=project, **{"objective": "create fixed.txt", **options, **spec}))


def stop_input(project: Path, session: str = "s-1", transcript: Path | None = None, message: str = "Done.") -> dict:
    return {"session_id": session, "transcript_path": str(transcript or project / "none.jsonl"), "cwd": str(project),
            "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": message}


def assistant_line(mid: str, model: str = SONNET, inp: int = 1000, out: int = 100) -> str:
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00Z", "message": {
        "id": mid, "model": model, "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": inp, "output_tokens": out}}}) + "\n"


def load(goal_id: str) -> Goal:
    return Store().load(Goal, goal_id)


def test_stop_with_no_goal_store_at_all_says_nothing(project):
    assert run_hook("stop", stop_input(project)) is None


def test_stop_blocks_with_the_failures_the_hint_and_the_budget_then_converges(project):
    goal = make_goal(project)
    answer = run_hook("stop", stop_input(project, message="I think it is done."))
    reason = hooks.feedback(answer)
    # fed to the model once, without Claude Code's "Stop hook reported a problem" (docs/claude-code.md)
    assert "decision" not in answer and answer["hookSpecificOutput"]["hookEventName"] == "Stop"
    assert answer["systemMessage"] == (f"goal-convergence: {goal.goal_id} iteration 1 not done (1 failing check); "
                                       f"the session carries on")
    assert f"goal {goal.goal_id} is not done yet (iteration 1/10)" in reason
    assert "[0] custom_command `python3 check.py`" in reason
    assert "Hint: " in reason and "iterations 1/10" in reason and "spend $" in reason
    assert "create fixed.txt" in reason
    assert load(goal.goal_id).history[0].maker_summary == "I think it is done."

    (project / "fixed.txt").write_text("yes\n")
    answer = run_hook("stop", stop_input(project))
    assert hooks.feedback(answer) is None
    assert answer["systemMessage"].startswith(f"goal-convergence: {goal.goal_id} converged after 2 iterations")
    assert load(goal.goal_id).state == "converged"
    assert run_hook("stop", stop_input(project)) is None  # done: the session may stop


def test_a_goal_bound_to_another_session_never_blocks_this_one(project):
    goal = make_goal(project, session="s-owner")
    assert run_hook("stop", stop_input(project, session="s-other")) is None
    assert run_hook("session-end", {"session_id": "s-other", "cwd": str(project), "reason": "other"}) is None
    assert load(goal.goal_id).spent.iterations == 0


def test_a_paused_goal_lets_the_session_stop(project):
    goal = make_goal(project)
    moves.move(Store(), goal.goal_id, "pause")
    assert run_hook("stop", stop_input(project)) is None
    assert load(goal.goal_id).spent.iterations == 0


def test_stop_meters_the_maker_from_the_transcript_and_keeps_the_offsets(project, tmp_path):
    goal = make_goal(project)
    transcript = tmp_path / "s-1.jsonl"
    transcript.write_text(assistant_line("msg_1") + assistant_line("msg_1") + assistant_line("msg_2", out=50))
    sub = tmp_path / "s-1" / "subagents" / "agent-1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(assistant_line("msg_sub", inp=500, out=0))
    run_hook("stop", stop_input(project, transcript=transcript))
    after = load(goal.goal_id)
    # The newest message of each file waits for the next read, in case it is still being written.
    assert after.spent.maker_dollars == pytest.approx((1000 * 2 + 100 * 10) / 1e6)
    assert after.transcript_offsets == {str(transcript): len(assistant_line("msg_1")) * 2, str(sub): 0}
    assert after.maker.model == SONNET
    run_hook("session-end", {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(project)})
    wait_until(lambda: load(goal.goal_id).transcript_offsets.get(str(transcript)) == transcript.stat().st_size,
               "SessionEnd's child charges the transcript")
    ended = load(goal.goal_id)
    assert ended.spent.maker_dollars == pytest.approx((3000 + 1000 * 2 + 50 * 10 + 500 * 2) / 1e6)
    assert ended.transcript_offsets == {str(transcript): transcript.stat().st_size, str(sub): sub.stat().st_size}


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "folder"])
def test_a_transcript_that_is_not_a_regular_file_is_logged_and_the_iteration_still_runs(project, gc_home, tmp_path,
                                                                                        kind):
    goal = make_goal(project)
    path = tmp_path / "s-1.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path = Path(kind)
    answer = run_hook("stop", stop_input(project, transcript=path))
    assert hooks.feedback(answer)
    assert load(goal.goal_id).spent.iterations == 1
    logged = (gc_home / "logs" / "goal-convergence.log").read_text()
    assert "regular file" in logged and str(path) in logged


def test_session_end_detaches_and_resume_restarts_the_clock(project):
    goal = make_goal(project)
    assert load(goal.goal_id).active_since is not None
    assert run_hook("session-end", {"session_id": "s-1", "cwd": str(project), "reason": "other"}) is None
    wait_until(lambda: load(goal.goal_id).active_since is None, "SessionEnd's child stops the clock")
    detached = load(goal.goal_id)
    assert (detached.state, detached.session_id, detached.active_since) == ("active", "s-1", None)
    answer = run_hook("session-start", {"session_id": "s-1", "cwd": str(project), "source": "resume"})
    assert load(goal.goal_id).active_since is not None
    assert answer["systemMessage"] == f"goal-convergence: {goal.goal_id} continues in this session (iteration 0/10, $0.00 spent)"
    assert "bound to this session" in answer["hookSpecificOutput"]["additionalContext"]


def test_session_start_lists_this_projects_open_goals_only(project, tmp_path):
    mine = make_goal(project, session="s-old")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "check.py").write_text("")
    make_goal(elsewhere, session="s-x")
    answer = run_hook("session-start", {"session_id": "s-new", "cwd": str(project),
                                        "source": "startup"})
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert f"{mine.goal_id} (active in another session): “create fixed.txt”" in context
    assert f"/goal-convergence:goal resume {mine.goal_id}" in context
    assert str(elsewhere) not in context
    assert answer["systemMessage"] == ("goal-convergence: 1 open goal in this project (1 active); "
                                       "/goal-convergence:goal list")
    assert run_hook("session-start", {"session_id": "s-new", "cwd": str(tmp_path), "source": "startup"}) is None


def test_a_maker_that_only_talks_ends_stuck_before_claude_codes_block_cap(project):
    goal = make_goal(project, stuck_after=10, max_iterations=50)  # the user's settings would allow more
    blocks = 0
    while (answer := run_hook("stop", stop_input(project, message="All done!"))) and hooks.feedback(answer):
        blocks += 1
    assert blocks < 8  # Claude Code ends the turn by itself after 8 blocks in a row
    ended = load(goal.goal_id)
    assert (ended.state, ended.stop_reason) == ("escalated", "stuck")
    assert f"triage item {ended.escalation.triage_id}" in answer["systemMessage"]
    assert f"after {ended.spent.iterations} iterations, $" in answer["systemMessage"]  # never "iteration(s)"
    shown = expand(project, "triage", f"show {ended.escalation.triage_id}")["hookSpecificOutput"]["additionalContext"]
    assert f"spent: {ended.spent.iterations} iterations," in shown
    assert Store().load(TriageItem, ended.escalation.triage_id).goal_id == goal.goal_id


def test_the_maker_running_the_oracles_model_is_refused_in_one_line(project, tmp_path):
    goal = make_goal(project, oracle_provider="anthropic", oracle_model="claude-haiku-5-5")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(assistant_line("msg_1", model="claude-haiku-5-5"))
    answer = run_hook("stop", stop_input(project, transcript=transcript))
    assert hooks.feedback(answer) is None
    assert "the oracle's own model" in answer["systemMessage"] and "\n" not in answer["systemMessage"]
    assert load(goal.goal_id).spent.iterations == 0


@pytest.mark.parametrize("garbage_bytes", [b"{ this is not json", b"[" * 100_000, b"\xff\xfe"])
def test_a_broken_goal_file_is_quarantined_and_reported_while_other_sessions_run(project, gc_home, garbage_bytes):
    make_goal(project, session="s-owner")
    garbage = gc_home / "goals" / "goal-zzzzzzzz.json"
    garbage.write_bytes(garbage_bytes)
    # A Stop of a session with no goal looks at its binding file only; the next look at the index finds it.
    assert run_hook("stop", stop_input(project, session="s-unrelated")) is None
    answer = run_hook("session-start", {**stop_input(project, session="s-unrelated"), "source": "startup"})
    assert "moved a broken file aside" in answer["systemMessage"] and "goal-zzzzzzzz.json" in answer["systemMessage"]
    assert not garbage.exists()
    assert list((gc_home / "quarantine").glob("goal-zzzzzzzz.json.*"))
    again = run_hook("session-start", {**stop_input(project, session="s-unrelated"), "source": "startup"})
    assert "moved a broken file aside" not in again["systemMessage"]  # reported once
    assert hooks.feedback(run_hook("stop", stop_input(project, session="s-owner")))  # its goal carries on


@pytest.mark.parametrize("payload", [b"not json", b"[]", json.dumps({"session_id": 5}).encode()])
def test_bad_input_is_one_line_and_exit_0(payload):
    answer = run_hook("stop", payload)
    assert answer is None or "\n" not in answer["systemMessage"]


def test_a_failure_inside_a_hook_is_logged_and_reported_in_one_line(project, gc_home):
    goal = make_goal(project)
    (gc_home / "prices.json").write_text("not a price table")  # every price lookup now fails
    transcript = project / "t.jsonl"
    transcript.write_text(assistant_line("msg_1") + assistant_line("msg_2"))
    answer = run_hook("stop", stop_input(project, transcript=transcript))
    assert answer["systemMessage"].startswith("goal-convergence: ") and "prices.json" in answer["systemMessage"]
    assert "prices.json" in (gc_home / "logs" / "goal-convergence.log").read_text()
    assert load(goal.goal_id).spent.iterations == 0


def test_an_unknown_event_is_one_line():
    answer = run_hook("bogus", {"session_id": "s"})
    assert "unknown hook 'bogus'" in answer["systemMessage"]


def test_the_fast_path_loads_the_standard_library_only(project):
    mine = make_goal(project, session="s-old")
    code = ("import json, sys\n"
            f"sys.path.insert(0, {str(REPO)!r})\n"
            "from goal_convergence.agents.claude_code import fast\n"
            "answer = fast.answer('session-start', sys.stdin.buffer.read())\n"
            "print(json.dumps({'answer': answer, 'modules': sorted(sys.modules)}))\n")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, timeout=60, check=True,
                          input=json.dumps({"session_id": "s-new", "cwd": str(project), "source": "startup"}).encode())
    seen = json.loads(done.stdout)
    assert mine.goal_id in seen["answer"]["hookSpecificOutput"]["additionalContext"]
    assert {m.split(".")[0] for m in seen["modules"]} & {"pydantic", "click", "anthropic", "jsonschema"} == set()


class CountingStore(Store):
    """A real store that counts its reads of the goal index."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def summaries(self, refresh: bool = False) -> list[dict]:
        self.reads += 1
        return super().summaries(refresh)


@pytest.mark.parametrize("event, payload", [
    ("stop", {"message": "I think it is done."}),
    ("session-start", {"source": "resume"}),
    ("session-end", {"reason": "other"}),
])
def test_the_slow_path_reads_the_index_once_per_hook(project, event, payload):
    goal = make_goal(project)
    store = CountingStore()
    answer = hooks.run(event, json.dumps({**stop_input(project), **payload}).encode(), store)
    assert store.reads == 1
    if event == "stop":
        assert hooks.feedback(answer) and load(goal.goal_id).spent.iterations == 1
    if event == "session-start":
        assert answer["systemMessage"].startswith(f"goal-convergence: {goal.goal_id} continues in this session")
    if event == "session-end":
        assert load(goal.goal_id).active_since is None


def test_the_goals_bound_to_a_session():
    summaries = [{"goalId": "goal-a", "sessionId": "s-1", "state": "paused"},
                 {"goalId": "goal-b", "sessionId": "s-1", "state": "active"},
                 {"goalId": "goal-c", "sessionId": "s-2", "state": "active"},
                 {"goalId": "goal-d", "sessionId": None, "state": "active"}]
    assert [s["goalId"] for s in index.bound_to_session(summaries, "s-1")] == ["goal-b"]
    assert [s["goalId"] for s in index.bound_to_session(summaries, "s-1", ("active", "paused"))] == ["goal-a", "goal-b"]
    assert index.bound_to_session(summaries, "s-3") == []
    assert index.bound_to_session(summaries, None) == [] and index.bound_to_session(summaries, "") == []


def test_the_project_root_is_the_nearest_folder_with_git(tmp_path):
    worktree = tmp_path / "repo" / "worktree"
    (worktree / "src").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (worktree / ".git").write_text("gitdir: ../.git/worktrees/worktree\n")  # a worktree's .git is a file
    assert index.project_root(worktree / "src") == worktree
    assert index.project_root(tmp_path / "repo") == tmp_path / "repo"
    assert index.project_root(tmp_path) == tmp_path


# ---- the launcher (scripts/goal-launch.py), as hooks/hooks.json starts it ----------------------

def launcher_env(tmp_path: Path, path: str) -> dict:
    return {**os.environ, "PATH": path, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data")}


def launch(event: str) -> list[str]:
    return [sys.executable, "-S", str(LAUNCHER), "hook", event]


def test_the_launcher_answers_the_no_goal_case_itself_without_the_cli(project, tmp_path):
    env = launcher_env(tmp_path, "/nonexistent")  # no `goal` anywhere: the fast path needs none
    assert run_hook("stop", stop_input(project), cmd=launch("stop"), env=env) is None


def test_the_launcher_runs_the_cli_when_there_is_work(project):
    make_goal(project)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    assert run_hook("stop", stop_input(project), cmd=launch("stop"), env=env)["hookSpecificOutput"]["hookEventName"] == "Stop"


def counting_goal(tmp_path: Path) -> tuple[Path, Path]:
    """A `goal` that counts the fast path's looks at the goals into a log: its read of the index
    (index.scan lists the goals folder) or of the session's binding file (an os.open, whose audit
    event has no mode; the store reads binding files with open(), which has one)."""
    log, goal = tmp_path / "index-reads.log", tmp_path / "bin" / "goal"
    goal.parent.mkdir()
    goal.write_text(f"""#!{sys.executable}
import atexit, os, sys
goals_dir = os.path.join(os.environ["GOAL_CONVERGENCE_HOME"], "goals")
reads = []
def count(event, args):
    if event == "os.scandir" and str(args[0]) == goals_dir:
        reads.append(event)
    elif event == "open" and args[1] is None and str(args[0]).startswith(os.path.join(goals_dir, "sessions")):
        reads.append(event)
sys.addaudithook(count)
atexit.register(lambda: open({str(log)!r}, "a").write(f"{{len(reads)}}\\n"))
from goal_convergence.entry import main
main()
""")
    goal.chmod(0o755)
    return goal, log


def test_a_stop_through_the_launcher_runs_the_fast_path_once(project, tmp_path):
    goal, log = counting_goal(tmp_path)
    make_goal(project)
    env = {**os.environ, "PATH": f"{goal.parent}{os.pathsep}{os.environ['PATH']}"}
    answer = run_hook("stop", stop_input(project), cmd=launch("stop"), env=env)
    assert hooks.feedback(answer), answer
    assert log.read_text() == "1\n"  # the slow path's read: the launcher's fast path has run already
    assert run_hook("stop", stop_input(project), cmd=[str(goal), "hook", "stop"])["hookSpecificOutput"]
    assert log.read_text() == "1\n2\n"  # run directly, `goal hook` runs the fast path first


def test_with_no_cli_a_hook_with_work_says_how_to_install_in_one_line(project, tmp_path):
    make_goal(project)
    answer = run_hook("stop", stop_input(project), cmd=launch("stop"), env=launcher_env(tmp_path, "/nonexistent"))
    assert answer["systemMessage"].startswith("goal-convergence: the `goal` CLI is not installed; install it with "
                                              "`pipx install")
    assert "\n" not in answer["systemMessage"]


def test_the_launcher_uses_the_private_venv_and_reports_its_crash_in_one_line(project, tmp_path):
    make_goal(project)
    venv_bin = tmp_path / "plugin-data" / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "goal").write_text("#!/bin/sh\necho 'ImportError: no module named click' >&2\nexit 1\n")
    (venv_bin / "goal").chmod(0o755)
    (venv_bin.parent / ".installed").write_text(str(REPO) + "\n")
    answer = run_hook("stop", stop_input(project), cmd=launch("stop"), env=launcher_env(tmp_path, "/nonexistent"))
    assert answer == {"systemMessage": f"goal-convergence: `{venv_bin / 'goal'} hook stop` failed (exit 1): "
                                       f"ImportError: no module named click"}


def test_session_start_with_a_failed_install_says_how_to_install(project, tmp_path):
    make_goal(project, session="s-old")
    data = tmp_path / "plugin-data"
    data.mkdir()
    (data / "install-failed.txt").write_text("pip could not reach the index\n")
    answer = run_hook("session-start", {"session_id": "s-new", "cwd": str(project), "source": "startup"},
                      cmd=launch("session-start"), env=launcher_env(tmp_path, "/nonexistent"))
    first, second = answer["systemMessage"].split("\n")
    assert first.startswith("goal-convergence: the `goal` CLI is not installed (the plugin's own install failed: see")
    assert second.startswith("goal-convergence: 1 open goal in this project")


def test_session_start_says_nothing_of_an_install_another_session_is_running(project, tmp_path):
    data = tmp_path / "plugin-data"
    data.mkdir()
    (data / "installing").touch()
    assert run_hook("session-start", {"session_id": "s-new", "cwd": str(project), "source": "startup"},
                    cmd=launch("session-start"), env=launcher_env(tmp_path, "/nonexistent")) is None


def test_the_plugin_data_folder_and_install_files_are_private(project, tmp_path):
    data = tmp_path / "plugin-data"
    data.mkdir(mode=0o755)
    (data / "venvs").write_text("not a folder: the install fails at once")
    answer = run_hook("session-start", {"session_id": "s-new", "cwd": str(project), "source": "startup"},
                      cmd=launch("session-start"), env=launcher_env(tmp_path, "/nonexistent"))
    assert "installing its Python package" in answer["systemMessage"]
    deadline = time.monotonic() + 60
    while (data / "installing").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (data, data / "install.log", data / "install-failed.txt")}
    assert modes == {"plugin-data": 0o700, "install.log": 0o600, "install-failed.txt": 0o600}


def test_with_no_cli_a_slash_command_tells_the_model_too(project, tmp_path):
    payload = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "UserPromptExpansion",
               "command_name": "goal-convergence:goal", "command_args": "status"}
    answer = run_hook("prompt-expansion", payload, cmd=launch("prompt-expansion"),
                      env=launcher_env(tmp_path, "/nonexistent"))
    assert "the `goal` CLI is not installed" in answer["hookSpecificOutput"]["additionalContext"]


def test_the_slash_command_hook_takes_the_raw_arguments_and_answers_model_and_user(project):
    objective = "don't touch $(the) `API`; ok"
    payload = {"session_id": "s-7", "cwd": str(project), "hook_event_name": "UserPromptExpansion",
               "expansion_type": "slash_command", "command_name": "goal-convergence:goal",
               "command_args": f"{objective} --check 'python3 check.py' --oracle conditions", "command_source": "plugin"}
    answer = run_hook("prompt-expansion", payload)
    [goal] = Store().iter_all(Goal)
    assert (goal.objective, goal.session_id) == (objective, "s-7")
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptExpansion"
    assert answer["hookSpecificOutput"]["additionalContext"].startswith(f"goal-convergence started goal {goal.goal_id}")
    assert answer["systemMessage"] == (f"goal-convergence: started {goal.goal_id}: checks `python3 check.py`; judge: "
                                       "the conditions alone (no oracle model)\nbudget: 15 iterations, 2h, $10.00")
    triage = run_hook("prompt-expansion", {**payload, "command_name": "goal-convergence:triage", "command_args": ""})
    assert "the triage inbox is empty" in triage["hookSpecificOutput"]["additionalContext"]


def test_a_resumed_session_is_not_charged_for_the_time_it_was_away(project):
    goal = make_goal(project)  # its clock runs: as if the session had ended without its SessionEnd hook
    Store().update(Goal, goal.goal_id, lambda g: setattr(g, "active_since", "2020-01-01T00:00:00.000Z"))
    run_hook("session-start", {"session_id": "s-1", "cwd": str(project), "source": "resume"})
    assert load(goal.goal_id).spent.active_seconds == 0
    Store().update(Goal, goal.goal_id, lambda g: setattr(g, "active_since", "2020-01-01T00:00:00.000Z"))
    run_hook("session-start", {"session_id": "s-1", "cwd": str(project), "source": "compact"})
    assert load(goal.goal_id).spent.active_seconds > 3600  # a compacted session never stopped: charged


# ---- control turns: a turn that only ran a goal-management command is not an iteration ------------

def user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"


def tool_line(mid: str) -> str:
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00Z", "message": {
        "id": mid, "model": SONNET, "role": "assistant", "usage": {"input_tokens": 10, "output_tokens": 5},
        "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "x"}}]}}) + "\n"


def control_turn(project: Path, transcript: Path, words: str, lines: list[str], name: str = "goal") -> dict | None:
    """The session types /goal-convergence:<name> <words>, the model writes ``lines``, then it stops."""
    run_hook("prompt-expansion", {"session_id": "s-1", "cwd": str(project), "transcript_path": str(transcript),
                                  "command_name": f"goal-convergence:{name}", "command_args": words})
    with transcript.open("a") as fh:
        fh.writelines(lines)
    return run_hook("stop", stop_input(project, transcript=transcript))


@pytest.mark.parametrize("name, words", [("goal", "status"), ("goal", "list"), ("goal", "check"), ("goal", "help"),
                                         ("triage", "list")])
def test_a_turn_that_only_ran_a_control_command_is_not_an_iteration(project, tmp_path, name, words):
    goal = make_goal(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(user_line("earlier"))
    said = [user_line(f"/goal-convergence:{name} {words}"), assistant_line("msg_1")]
    assert control_turn(project, transcript, words, said, name) is None  # not blocked
    assert load(goal.goal_id).spent.iterations == 0  # not counted, not checked


def test_a_working_turn_after_a_control_turn_is_still_an_iteration(project, tmp_path):
    goal = make_goal(project, stuck_after=10)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(user_line("earlier"))
    assert control_turn(project, transcript, "status", [assistant_line("msg_1")]) is None
    # the next turn (a plain prompt: no mark) talks only, and is an iteration all the same
    with transcript.open("a") as fh:
        fh.write(assistant_line("msg_2"))
    assert hooks.feedback(run_hook("stop", stop_input(project, transcript=transcript)))
    assert load(goal.goal_id).spent.iterations == 1
    # a control command whose turn went on to use a tool did work: an iteration
    answer = control_turn(project, transcript, "status", [tool_line("msg_3"), assistant_line("msg_4")])
    assert hooks.feedback(answer) and load(goal.goal_id).spent.iterations == 2
    # a command that sets work going (resume) is not a control command
    answer = control_turn(project, transcript, "resume", [assistant_line("msg_5")])
    assert hooks.feedback(answer) and load(goal.goal_id).spent.iterations == 3


def expand(project: Path, name: str, words: str) -> dict:
    payload = {"session_id": "s-1", "cwd": str(project), "command_name": f"goal-convergence:{name}",
               "command_args": words}
    return hooks.run("prompt-expansion", json.dumps(payload).encode())


def test_inside_a_session_messages_name_the_slash_commands_not_the_cli(project):
    told = expand(project, "goal", "status")
    said = told["hookSpecificOutput"]["additionalContext"] + told["systemMessage"]
    assert "start one with `/goal-convergence:goal OBJECTIVE`" in said and "`goal new" not in said
    assert "`/goal-convergence:goal list --all`" in said
    usage = expand(project, "triage", "act")["hookSpecificOutput"]["additionalContext"]  # click's usage error
    assert "Try '/goal-convergence:triage act --help'" in usage and "'goal triage" not in usage


def test_session_start_shows_an_unheld_goal_as_such_and_the_objective_as_typed(project):
    goal = make_goal(project, session=None, objective="don't break the \"API\"\nsecond line")
    answer = run_hook("session-start", {"session_id": "s-new", "cwd": str(project), "source": "startup"})
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert f"{goal.goal_id} (active, held by no session): “don't break the \"API\" second line”" in context
    assert f"To work on it here: /goal-convergence:goal resume {goal.goal_id}" in context
    assert "another session" not in context and "\\'" not in context


def test_the_first_feedback_shows_the_makers_spend_so_far(project, tmp_path):
    goal = make_goal(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(user_line("go") + assistant_line("msg_1", inp=20000, out=2000))  # the turn's one message
    reason = hooks.feedback(run_hook("stop", stop_input(project, transcript=transcript)))
    run_hook("session-end", stop_input(project, transcript=transcript))  # the last read charges every message
    wait_until(lambda: load(goal.goal_id).transcript_offsets.get(str(transcript)) == transcript.stat().st_size,
               "SessionEnd's child charges the transcript")
    spent = load(goal.goal_id).spent
    assert spent.maker_dollars > 0.05
    assert f"spend {money(spent.dollars)}/" in reason
