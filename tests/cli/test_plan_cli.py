"""The plan and the confidence threshold from the command line, in-process: `goal new --task/--min-confidence`,
`goal run` with a command maker and the scripted Messages API as the oracle, `goal status`, the slash command,
the heartbeat's settings, and what the maker reads (the Stop hook's feedback, the headless prompts)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import hooks
from goal_convergence.agents.claude_code.slash import run_command
from goal_convergence.loop import makers
from goal_convergence.loop.heartbeat import beat
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store
from tests.conftest import run_goal
from tests.fakeapi import text
from tests.cli.test_run import CALC, CHECK

# Iteration 1 fixes both bugs; later ones write NOTES.md, one line each (the tree changes, so never stuck). Each
# logs what it was told: its iteration, the hint and the open tasks.
MAKER = """
import os, pathlib
with pathlib.Path(os.environ["MAKER_LOG"]).open("a") as fh:
    fh.write(repr((os.environ["GOAL_ITERATION"], os.environ["GOAL_HINT"], os.environ["GOAL_TASKS"])) + "\\n")
src = pathlib.Path("calc.py")
if "# BUG" in src.read_text():
    src.write_text("def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n")
else:
    with pathlib.Path("NOTES.md").open("a") as fh:
        fh.write("add() and mul() are fixed\\n")
print("done")
"""


def verdict(converged: bool, confidence: float = 0.9, hint: str = "", **tasks):
    return text(json.dumps({"converged": converged, "reasons": ["scripted"], "nextHint": hint,
                            "confidence": confidence, **({"tasks": tasks} if tasks else {})}))


@pytest.fixture
def project(git_repo: Path, fake_api, tmp_path, monkeypatch) -> Path:
    (git_repo / "calc.py").write_text(CALC)
    for name, value in {"ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "x",
                        "GOAL_CONVERGENCE_ORACLE_RETRIES": "0", "GOAL_CONVERGENCE_ORACLE_TIMEOUT": "20",
                        "MAKER_LOG": str(tmp_path / "maker.log")}.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "maker.py").write_text(MAKER)
    return git_repo


def new(project: Path, *flags: str) -> dict:
    done = run_goal(project, "new", "fix calc.py so its checks pass", "--check", CHECK, "--oracle", "anthropic",
                    *flags, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run(project: Path, goal_id: str, *flags: str):
    return run_goal(project, "run", goal_id, "--maker-cmd", f"{sys.executable} {project.parent / 'maker.py'}",
                    *flags, "--json")


def maker_log() -> list[tuple[str, str, str]]:
    from ast import literal_eval
    return [literal_eval(line) for line in Path(os.environ["MAKER_LOG"]).read_text().splitlines()]


def test_new_seeds_the_plan_and_the_threshold_and_status_shows_them(project):
    doc = new(project, "--task", "write NOTES.md", "--task", "  keep   the API ", "--min-confidence", "0.8")
    assert doc["tasks"] == [{"id": "t1", "title": "write NOTES.md", "state": "open", "addedBy": "user", "addedIn": 0},
                            {"id": "t2", "title": "keep the API", "state": "open", "addedBy": "user", "addedIn": 0}]
    assert doc["minConfidence"] == 0.8
    shown = run_goal(project, "status", doc["goalId"]).stdout
    assert "min confidence: 0.8 (a converged verdict less sure than that is a veto)" in shown
    assert "plan: 2 open, 0 done\n  [ ] t1 write NOTES.md\n  [ ] t2 keep the API" in shown


def test_a_goal_without_a_plan_keeps_its_file_as_before(project):
    doc = new(project)
    assert "tasks" not in doc and "minConfidence" not in doc
    assert "plan:" not in run_goal(project, "status", doc["goalId"]).stdout


@pytest.mark.parametrize("command", ["new", "run"])
@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "high"])
def test_a_confidence_outside_0_to_1_is_a_usage_error(project, command, value):
    done = run_goal(project, command, "fix it", "--check", CHECK, "--min-confidence", value)
    assert done.returncode == 64, done.stderr
    assert "--min-confidence" in done.stderr and ("from 0 to 1" in done.stderr or "is not a valid float" in done.stderr)
    assert not list(Store().iter_all(Goal))


def test_a_task_needs_a_judge_and_a_title(project):
    done = run_goal(project, "new", "fix it", "--check", CHECK, "--oracle", "conditions", "--task", "write docs")
    assert done.returncode == 64 and "--oracle conditions has no judge" in done.stderr
    done = run_goal(project, "new", "fix it", "--check", CHECK, "--task", " ")
    assert done.returncode == 64 and "--task needs a title" in done.stderr


def test_the_judge_adds_a_task_and_the_goal_converges_only_once_every_task_is_done(project, fake_api):
    fake_api.enqueue(verdict(False, hint="fix add() and mul()", add=["document the fix in NOTES.md"]),
                     verdict(True, complete=["t1"]),  # green and agreed, but t2 (the judge's) is open
                     verdict(True, complete=["t2", "t9"]))
    gid = new(project, "--task", "fix both bugs")["goalId"]
    done = run(project, gid)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turns"] == 3
    goal = Store().load(Goal, gid)
    assert [(t.id, t.state, t.added_by, t.added_in, t.done_in) for t in goal.tasks] == [
        ("t1", "done", "user", 0, 2), ("t2", "done", "oracle", 1, 3)]
    assert [it.decision.action for it in goal.history] == ["continue", "continue", "converge"]
    assert "1 task(s) of the plan are open: t2" in goal.history[1].decision.notes[-1]
    assert "the oracle completed task 't9', which the plan does not hold: ignored" in goal.history[2].decision.notes
    log = maker_log()
    assert log[0] == ("1", "", "t1 fix both bugs")
    assert log[1] == ("2", "fix add() and mul()", "t1 fix both bugs\nt2 document the fix in NOTES.md")
    assert log[2][0] == "3" and "open tasks: t2 document the fix in NOTES.md" in log[2][1]
    assert log[2][2] == "t2 document the fix in NOTES.md"
    # the judge saw the plan it had changed
    assert '{"id":"t2","title":"document the fix in NOTES.md","state":"open"}' in \
        fake_api.messages[1].body["messages"][0]["content"]


def test_a_converged_verdict_below_the_minimum_is_a_veto_until_the_judge_is_sure(project, fake_api):
    fake_api.enqueue(verdict(True, confidence=0.6), verdict(True, confidence=0.6), verdict(True, confidence=0.96))
    gid = new(project, "--min-confidence", "0.95")["goalId"]
    done = run(project, gid)
    assert done.returncode == 0, done.stderr
    goal = Store().load(Goal, gid)
    assert [it.decision.action for it in goal.history] == ["continue", "continue", "converge"]
    assert "confidence 0.6, below the goal's minimum 0.95: counted as a veto" in goal.history[1].decision.notes[-1]
    assert "only with confidence 0.6 (this goal needs 0.95)" in maker_log()[2][1]


def test_run_sets_the_threshold_of_an_existing_goal_and_refuses_a_task(project, fake_api):
    gid = new(project)["goalId"]
    refused = run(project, gid, "--task", "more")
    assert refused.returncode == 64 and "--task cannot change on an existing goal" in refused.stderr
    planned = new(project, "--task", "write NOTES.md")["goalId"]
    refused = run(project, planned, "--oracle", "conditions")
    assert refused.returncode == 64 and "the plan has open tasks (t1)" in refused.stderr
    assert Store().load(Goal, planned).oracle.provider == "anthropic"
    fake_api.enqueue(verdict(True, confidence=0.5), verdict(True, confidence=0.99))
    assert run(project, gid, "--min-confidence", "0.9").returncode == 0
    goal = Store().load(Goal, gid)
    assert goal.min_confidence == 0.9 and goal.spent.iterations == 2
    [change] = goal.settings_history
    assert [(c.setting, c.before, c.after) for c in change.changes] == [("minConfidence", None, 0.9)]


def test_the_slash_command_takes_tasks_and_a_threshold(project):
    reply = run_command("goal", "fix calc.py --check 'python3 -c pass' --task 'write NOTES.md' --min-confidence 0.7",
                        session_id="s-1", cwd=str(project))
    [goal] = Store().iter_all(Goal)
    assert [t.title for t in goal.tasks] == ["write NOTES.md"] and goal.min_confidence == 0.7
    assert "[ ] t1 write NOTES.md" in reply.text
    bad = run_command("goal", "fix it --check 'python3 -c pass' --min-confidence 2", session_id="s-2",
                      cwd=str(project))
    assert "could not do that" in bad.text and "from 0 to 1" in bad.text


@pytest.mark.parametrize("setting, made", [("min_confidence = 0.85", 0.85), ("", None)])
def test_the_heartbeats_setting_reaches_the_goals_it_makes(project, setting, made):
    (project / "check.sh").write_text("exit 1\n")
    (project / ".goal-convergence.toml").write_text(
        f'[heartbeat]\nchecks = [{{ type = "test_pass", command = "sh check.sh" }}]\n{setting}\n')
    [finding] = beat(Store(), project).findings
    assert Store().load(Goal, finding.tracked.item_id).min_confidence == made


def test_a_heartbeat_threshold_outside_0_to_1_is_refused_naming_the_key(project):
    (project / ".goal-convergence.toml").write_text("[heartbeat]\nmin_confidence = 1.5\n")
    done = run_goal(project, "heartbeat")
    assert done.returncode == 65 and "heartbeat.min_confidence" in done.stderr, done.stderr


def test_the_stop_hooks_feedback_and_the_first_headless_prompt_list_the_open_tasks(make_goal):
    from goal_convergence.rules.plan import seed

    goal = make_goal(tasks=seed(["write NOTES.md", "keep the API"]))
    goal.tasks[1].state, goal.tasks[1].done_in = "done", 1
    feedback = hooks.continue_reason(goal, None, "a hint")
    assert "Open tasks of the plan (the goal converges only once the oracle finds each one done):\n" \
           "  - t1 write NOTES.md\n" in feedback and "keep the API" not in feedback
    assert "  - t1 write NOTES.md" in makers.first_prompt(goal)
    assert "Open tasks" not in hooks.continue_reason(make_goal(), None, "a hint")


def test_a_goal_written_by_0_1_0_takes_a_plan_and_still_matches_the_schema(store, gc_home):
    from goal_convergence.models import TaskChanges, Verdict, schema
    from goal_convergence.rules import plan

    text = (Path(__file__).parents[1] / "samples" / "goal-0.1.0.json").read_text(encoding="utf-8")
    gid = json.loads(text)["goalId"]
    store.path_for(Goal, gid).write_text(text, encoding="utf-8")
    assert "plan:" not in run_goal(gc_home, "status", gid).stdout
    judged = Verdict(converged=False, tasks=TaskChanges(add=["document the fix"]))

    def judge(goal: Goal) -> Goal:
        plan.apply_verdict(goal, judged, goal.spent.iterations + 1)
        return goal

    store.update(Goal, gid, judge)
    doc = json.loads(store.path_for(Goal, gid).read_text(encoding="utf-8"))
    assert schema.errors(doc, "goal") == [] and doc["tasks"][0]["title"] == "document the fix"
    assert "plan: 1 open, 0 done" in run_goal(gc_home, "status", gid).stdout
