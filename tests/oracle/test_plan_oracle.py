"""Verdicts that carry plan changes, from every judge: the anthropic SDK against the scripted Messages API, a
command judge (our shape and the two foreign ones), and the real Claude Code as the claude-cli judge. A malformed
tasks field loses only itself, never the verdict."""

from __future__ import annotations

import json

import pytest

from goal_convergence.models import TaskChanges
from goal_convergence.oracle import build_input, get_oracle
from goal_convergence.oracle.claude_cli import ClaudeCliOracle
from goal_convergence.rules.plan import seed
from tests.oracle import test_oracle as base
from tests.fakeapi import text, tool_use
from tests.oracle.test_oracle import GREEN, MODEL, RED, command_printing, make_goal

api_env, project = base.api_env, base.project  # the fixtures of the oracle's own tests

WITH_TASKS = {"converged": False, "reasons": ["the parser has no test"], "nextHint": "add tests/test_parse.py",
              "confidence": 0.7, "tasks": {"add": ["add a test for empty input"], "complete": ["t1"]}}


def planned_goal(root, provider="anthropic", **oracle_args):
    goal = make_goal(root, provider, **oracle_args)
    goal.tasks = seed(["write the parser", "document the flag"])
    return goal


def judge(goal, evidence=GREEN):
    return get_oracle(goal.oracle, goal).judge(build_input(goal, [evidence], "I wrote the parser."))


def test_the_judge_is_shown_the_plan_and_told_how_to_change_it(api_env, project):
    api_env.enqueue(text(json.dumps(WITH_TASKS)))
    judgement = judge(planned_goal(project))
    assert judgement.verdict.tasks == TaskChanges(add=["add a test for empty input"], complete=["t1"])
    [request] = api_env.messages
    assert "tasks.complete: the ids" in request.body["system"][0]["text"]
    assert '"plan":[{"id":"t1","title":"write the parser","state":"open"},{"id":"t2","title":"document the flag",' \
           '"state":"open"}]' in request.body["messages"][0]["content"]


def test_a_goal_without_a_plan_sends_no_plan(api_env, project):
    api_env.enqueue(text(json.dumps({"converged": True, "reasons": ["ok"], "confidence": 0.9})))
    judgement = judge(make_goal(project))
    assert judgement.verdict.tasks is None and '"plan"' not in api_env.messages[0].body["messages"][0]["content"]


@pytest.mark.parametrize("tasks, kept, noted", [
    ("t1", None, "not an object"),
    (["t1"], None, "not an object"),
    ({"add": ["ok", 3, ""], "complete": "t1"}, TaskChanges(add=["ok"]), "partly malformed"),
    ({"add": ["ok"], "done": ["t1"]}, TaskChanges(add=["ok"]), "partly malformed"),
    ({"complete": [None, {"id": "t1"}]}, None, "partly malformed"),
    (None, None, None),
    ({}, None, None),
])
def test_a_malformed_tasks_field_never_breaks_the_verdict(api_env, project, tasks, kept, noted):
    api_env.enqueue(text(json.dumps({**WITH_TASKS, "tasks": tasks})))
    judgement = judge(planned_goal(project))
    assert len(api_env.messages) == 1  # no repair round: the verdict on the work stands as given
    v = judgement.verdict
    assert (v.converged, v.next_hint, v.confidence, v.tasks) == (False, "add tests/test_parse.py", 0.7, kept)
    about_tasks = [n for n in judgement.notes if "tasks field" in n]
    assert len(about_tasks) == (1 if noted else 0) and all(noted in n for n in about_tasks)


def test_a_verdict_refused_for_another_reason_leaves_no_tasks_note_behind(api_env, project):
    bad = {**WITH_TASKS, "tasks": "t1", "confidence": 7}
    api_env.enqueue(text(json.dumps(bad)), text(json.dumps(WITH_TASKS)))
    judgement = judge(planned_goal(project))
    assert len(api_env.messages) == 2 and judgement.verdict.tasks is not None
    assert not [n for n in judgement.notes if "tasks field" in n]


@pytest.mark.parametrize("output, converged, confidence", [
    (json.dumps(WITH_TASKS), False, 0.7),
    (json.dumps({"ok": True, "reason": "done", "confidence": 0.95,
                 "tasks": {"add": ["add a test for empty input"], "complete": ["t1"]}}), True, 0.95),
    (json.dumps({"decision": "replan", "reason": "split the work",
                 "tasks": {"add": ["add a test for empty input"], "complete": ["t1"]}}), False, 0.5),
])
def test_a_command_judge_gives_tasks_and_confidence_in_any_shape(project, tmp_path, output, converged, confidence):
    goal = planned_goal(project, provider="command", command=command_printing(tmp_path, output))
    v = judge(goal).verdict
    assert (v.converged, v.confidence) == (converged, confidence)
    assert v.tasks == TaskChanges(add=["add a test for empty input"], complete=["t1"])


def test_a_command_judges_malformed_tasks_are_noted_and_its_verdict_kept(project, tmp_path):
    output = json.dumps({"ok": False, "reason": "not yet", "tasks": {"add": "one big task"}})
    goal = planned_goal(project, provider="command", command=command_printing(tmp_path, output))
    judgement = judge(goal, RED)
    assert (judgement.verdict.converged, judgement.verdict.tasks) == (False, None)
    assert "the verdict's tasks field was partly malformed" in judgement.notes[-1]


def claude_cli_judges(answer: dict, fake_api, project, claude_bin, monkeypatch):
    """The real Claude Code judging a planned goal, the scripted API answering ``answer``; the judgement and
    the requests Claude Code made."""
    for k, v in fake_api.claude_env(project.parent / "home").items():
        monkeypatch.setenv(k, v)
    seen = []

    def responder(body):
        seen.append(body)
        return tool_use("StructuredOutput", answer, usage={"input_tokens": 5000, "output_tokens": 200})

    fake_api.set_responder(responder)
    goal = planned_goal(project, provider="claude-cli")
    judgement = ClaudeCliOracle(MODEL, project, claude_bin, timeout=30, max_retries=0).judge(
        build_input(goal, [GREEN], "I wrote the parser."))
    return judgement, seen


@pytest.mark.e2e
def test_the_claude_cli_judge_gives_tasks_through_structured_output(fake_api, project, claude_bin, monkeypatch):
    judgement, seen = claude_cli_judges(WITH_TASKS, fake_api, project, claude_bin, monkeypatch)
    assert judgement.verdict.tasks == TaskChanges(add=["add a test for empty input"], complete=["t1"])
    # Claude Code was given the schema with the tasks field for its StructuredOutput tool
    [schema] = [t["input_schema"] for t in seen[0]["tools"] if t["name"] == "StructuredOutput"]
    assert "tasks" in schema["properties"]
    assert '\\"plan\\":[{\\"id\\":\\"t1\\"' in json.dumps(seen[0]["messages"])


@pytest.mark.e2e
def test_the_claude_cli_judges_malformed_tasks_do_not_break_its_verdict(fake_api, project, claude_bin, monkeypatch):
    malformed = {**WITH_TASKS, "tasks": {"add": "one big task", "complete": ["t1"]}}
    judgement, seen = claude_cli_judges(malformed, fake_api, project, claude_bin, monkeypatch)
    assert len(seen) == 1  # Claude Code took the first answer: no retries over the plan change
    assert (judgement.verdict.converged, judgement.verdict.next_hint) == (False, "add tests/test_parse.py")
    assert judgement.verdict.tasks == TaskChanges(complete=["t1"])
    assert "the verdict's tasks field was partly malformed" in judgement.notes[-1]


def test_a_verdict_the_schema_passes_but_the_model_refuses_is_a_bad_answer_not_a_crash(api_env, project):
    # A lone surrogate is a string to JSON Schema but not to pydantic; the refusal used to call the list of
    # schema problems as a function (TypeError) instead of asking the model again.
    api_env.enqueue(text('{"converged": false, "reasons": ["\\ud800"]}'), text(json.dumps(WITH_TASKS)))
    judgement = judge(planned_goal(project))
    assert len(api_env.messages) == 2 and judgement.verdict.reasons == ["the parser has no test"]
    assert any("not a valid verdict" in n and "reasons.0" in n for n in judgement.notes)
