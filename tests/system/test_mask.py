"""Secrets a project's commands print are masked wherever output is kept or sent: the goal file,
the oracle's request, the triage item, `goal triage list`, the Stop hook's reason, notifications."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.system import mask
from tests.agents.claude_code.test_hooks import make_goal as hook_goal
from tests.agents.claude_code.test_hooks import project as hook_project  # noqa: F401 (fixture)
from tests.agents.claude_code.test_hooks import run_hook, stop_input
from tests.cli.test_run import env, goal, load, project, verdict  # noqa: F401 (fixtures)

# Built from pieces, so this file holds no whole token for a scanner to flag.
SECRETS = {"anthropic key": "sk-" + "ant-api03-" + "Zx9" * 12,
           "aws access key": "AKIA" + "IOSFODNN7" + "EXAMPL9",
           "aws secret key": "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
           "github token": "ghp" + "_" + "aB3" * 12,
           "environment secret": "hunter2-" + "correct-horse"}
# The check prints them without holding them: its command is kept as given, and is not output.
LEAK = ("import os, sys\n"
        f"s = {json.dumps({k: v[::-1] for k, v in SECRETS.items()})}\n"
        "s = {k: v[::-1] for k, v in s.items()}\n"
        "print('anthropic=' + s['anthropic key'], 'id ' + s['aws access key'])\n"
        "print('aws_secret_access_key = ' + s['aws secret key'])\n"
        "print('FAILED token ' + s['github token'])\n"
        "print('pw', os.environ['MY_SERVICE_PASSWORD'])\n"
        "sys.exit(1)\n")
PRINTS = "python3 leak.py"


def assert_masked(where: str, text: str) -> None:
    for kind, value in SECRETS.items():
        assert value not in text, f"the {kind} is in the {where}"


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_masked(monkeypatch, kind):
    monkeypatch.setenv("MY_SERVICE_PASSWORD", SECRETS["environment secret"])
    shown = f"aws_secret_access_key = {SECRETS[kind]}" if kind == "aws secret key" else SECRETS[kind]
    masked = mask.text(f"before {shown} after")
    assert masked.endswith(f"[masked {kind}] after") and SECRETS[kind] not in masked
    assert mask.text("an ordinary line: skip-ahead 12345, task-runner ok") == "an ordinary line: skip-ahead 12345, task-runner ok"


def test_no_secret_reaches_the_goal_file_the_oracle_or_the_triage_item(project, env, fake_api, monkeypatch,  # noqa: F811
                                                                         gc_home):
    monkeypatch.setenv("MY_SERVICE_PASSWORD", SECRETS["environment secret"])
    (project / "leak.py").write_text(LEAK)
    fake_api.set_responder(lambda body: verdict(False, "keep on"))
    made = goal("new", "make the check pass", "--check", PRINTS, "--max-iterations", "1", "--json")
    gid = json.loads(made.stdout)["goalId"]
    run = goal("run", gid, "--maker-cmd", "echo done", "--json")
    assert run.returncode == 4, run.stdout + run.stderr
    doc = load(gid)
    assert "[masked github token]" in json.dumps(doc)  # the output was kept, masked
    assert_masked("goal file", (gc_home / "goals" / f"{gid}.json").read_text())
    assert fake_api.messages and "[masked anthropic key]" in json.dumps([m.body for m in fake_api.messages])
    assert_masked("oracle request", json.dumps([m.body for m in fake_api.messages]))
    [item] = (gc_home / "triage").glob("*.json")
    assert "[masked github token]" in item.read_text()
    assert_masked("triage item", item.read_text())
    assert_masked("goal triage list", goal("triage", "list").stdout + goal("triage", "list", "--json").stdout)


def test_no_secret_reaches_the_stop_hooks_reason(hook_project, gc_home):  # noqa: F811
    (hook_project / "leak.py").write_text(LEAK)
    made = hook_goal(hook_project, checks=[PRINTS])
    said = f"Done; I logged in with {SECRETS['anthropic key']}."
    answer = run_hook("stop", stop_input(hook_project, message=said),
                      env={**os.environ, "MY_SERVICE_PASSWORD": SECRETS["environment secret"]})
    reason = hooks.feedback(answer)
    assert reason and "[masked" in reason
    assert_masked("Stop hook's reason", reason)
    kept = (gc_home / "goals" / f"{made.goal_id}.json").read_text()
    assert "[masked anthropic key]" in kept  # Claude's last message, kept as the maker's summary
    assert_masked("goal file", kept)


def test_an_oracle_tool_result_is_masked(tmp_path: Path):
    from goal_convergence.oracle.tools import Toolbox

    (tmp_path / "log.txt").write_text(f"token {SECRETS['github token']}\n")
    text, error = Toolbox(tmp_path).run("read_file", {"path": "log.txt"})
    assert not error and "[masked github token]" in text
    assert_masked("tool result", text)


def test_a_notification_is_masked(make_goal, store):
    from goal_convergence.goals import notify

    goal_ = make_goal(objective=f"rotate {SECRETS['aws access key']}", state="converged", stop_reason="converged")
    assert_masked("notification", json.dumps(notify.event(goal_)))
