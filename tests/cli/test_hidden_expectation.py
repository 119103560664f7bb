"""`--expect` is a check of the maker's words that the maker never sees (seed "Kernel Goal Loop": "a regex the
maker prompt never sees"): not in a hint, not in the Stop hook's feedback, not in its environment, not in
what the commands it can run print. A maker that echoes everything it is shown never learns it, whatever the
judge; one whose account matches converges."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks, slash
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.agents.claude_code.test_hooks import make_goal as hook_goal, run_hook, stop_input
from tests.cli.test_run import env, goal, load, maker_script, project, verdict  # noqa: F401 (fixtures)

SECRET = "ZEBRA-[0-9]{4}-SHIPPED"
WORD = "ZEBRA"  # what any leak of the pattern would carry
# Echoes everything a maker can see back as its account of the work, and records it: every environment
# variable, the hint, and what the read commands a maker may run print about its goal.
ECHO = """
import contextlib, io, json, os
from goal_convergence.entry import run
seen = {"env": dict(os.environ), "hint": os.environ.get("GOAL_HINT", "")}
for args in (["status"], ["status", "--json"], ["list", "--json"], ["check", "--json"]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        run(args)
    seen[" ".join(args)] = out.getvalue()
with open(os.environ["MAKER_LOG"], "a") as fh:
    fh.write(json.dumps(seen) + "\\n")
print("Here is everything I was told: " + seen["hint"])
"""
APPROVE = f"{sys.executable} -c \"import sys, json; sys.stdin.read(); print(json.dumps({{'converged': True, " \
          f"'conditionResults': [], 'reasons': ['approved'], 'nextHint': '', 'confidence': 1.0}}))\""


@pytest.mark.parametrize("judge", ["conditions", "command", "anthropic"])
def test_a_maker_that_echoes_everything_it_sees_never_learns_the_expectation(project, env, fake_api, tmp_path, judge):
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    flags = {"conditions": ["--oracle", "conditions"], "command": ["--oracle", "command", "--oracle-cmd", APPROVE],
             "anthropic": ["--oracle", "anthropic"]}[judge]
    fake_api.set_responder(lambda body: verdict(True))
    created = goal("new", "ship the release", "--check", "python -c 'import calc'", "--expect", SECRET,
                   "--max-iterations", "3", "--stuck-after", "5", *flags, "--json")
    assert created.returncode == 0, created.stderr
    assert WORD not in created.stdout  # what `goal new --json` prints withholds it too
    gid = json.loads(created.stdout)["goalId"]
    run = goal("run", gid, "--maker-cmd", maker_script(tmp_path, ECHO), "--json")
    assert (run.returncode, json.loads(run.stdout)["stop"]) == (4, "ceiling"), run.stderr  # never converged
    seen = Path(env["MAKER_LOG"]).read_text()
    assert len(seen.splitlines()) == 3 and WORD not in seen
    assert "did not give an account of the work" not in seen.splitlines()[0]  # no hint before the first judging
    assert "expectation" in json.loads(seen.splitlines()[-1])["hint"]  # told there is one, not what it is
    doc = load(gid)
    assert doc["oracle"]["expect"] == SECRET  # the goal file keeps it
    assert all(WORD not in it["decision"]["hint"] + " ".join(it["decision"]["notes"]) for it in doc["history"])


def test_a_maker_whose_account_matches_converges_under_the_conditions(project, env, tmp_path):
    done = goal("run", "ship the release", "--check", "true", "--expect", SECRET, "--oracle", "conditions",
                "--maker-cmd", "echo 'release ZEBRA-2026-SHIPPED'", "--json")
    assert (done.returncode, json.loads(done.stdout)["stop"]) == (0, "converged"), done.stderr


def test_the_claude_code_stop_feedback_and_the_slash_replies_never_show_it(git_repo):
    (git_repo / "check.py").write_text("import os, sys\nsys.exit(0 if os.path.exists('fixed.txt') else 1)\n")
    made = hook_goal(git_repo, expect=SECRET)
    red = hooks.feedback(run_hook("stop", stop_input(git_repo, message="Done.")))
    (git_repo / "fixed.txt").write_text("ok\n")
    green = hooks.feedback(run_hook("stop", stop_input(git_repo, message="Done, I echo: say so in words that match")))
    assert "expectation" in green and WORD not in red + green
    for words in ("status", "help", f"resume {made.goal_id}", "list --all"):
        reply = slash.run_command("goal", words, session_id="s-1", cwd=str(git_repo))
        assert WORD not in reply.text + (reply.notice or ""), words
    assert Store().load(Goal, made.goal_id).state == "active"


def test_a_bad_expect_regex_is_refused_when_the_goal_is_made(project, env):
    done = goal("new", "ship it", "--check", "true", "--expect", "(unclosed", "--oracle", "conditions")
    assert done.returncode == 65 and "--expect '(unclosed' is not a valid regular expression" in done.stderr
