"""The oracle, run for real: the anthropic SDK against the scripted Messages API, real commands,
and the real Claude Code binary for the claude-cli provider."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from goal_convergence.checks.extract import FailureScanner
from goal_convergence.errors import InvalidInput, OracleError, OracleUnavailable, PriceUnknown
from goal_convergence.models import (Baseline, Census, ConditionEvidence, Decision, Goal, Integrity, IntegrityIssue,
                                     Iteration, OracleConfig, StoppingCondition, Verdict, new_id, now_iso)
from goal_convergence.oracle import OracleInput, build_input, get_oracle
from goal_convergence.oracle.claude_cli import ClaudeCliOracle
from goal_convergence.oracle.input import BRACES, MAX_INPUT_TOKENS
from goal_convergence.oracle.prompt import (MAX_OUTPUT_TOKENS, MAX_TOOL_ROUNDS, cost_upper_bound, token_estimate,
                                            user_message)
from goal_convergence.oracle.verdict import NO_REASON, JudgeError
from goal_convergence.storage import cost
from tests.conftest import git
from tests.fakeapi import FAST_RETRY, delay, error, text, tool_use

MODEL = "claude-haiku-5-5"
RED = ConditionEvidence(index=0, type="test_pass", command="pytest -q", passed=False, exit_code=1,
                        failure_lines=["FAILED tests/test_calc.py::test_add - assert 2 == 3"],
                        output_tail="1 failed, 3 passed in 0.1s", fingerprint="ab" * 32)
GREEN = ConditionEvidence(index=0, type="test_pass", command="pytest -q", passed=True, exit_code=0,
                          output_tail="4 passed in 0.1s", fingerprint="pass")
VERDICT = {"converged": False, "reasons": ["test_add fails"], "nextHint": "fix add() in src/calc.py", "confidence": 0.8}


def make_goal(root, provider="anthropic", **oracle_args) -> Goal:
    return Goal(goal_id=new_id("goal-"), objective="make the tests pass",
                stopping_conditions=[StoppingCondition(type="test_pass", command="pytest -q")],
                budget={"maxIterations": 5}, oracle=OracleConfig(provider=provider, model=MODEL, **oracle_args),
                project_root=str(root), created_at=now_iso(), updated_at=now_iso())


@pytest.fixture
def project(git_repo):
    (git_repo / "src").mkdir()
    (git_repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_calc.py").write_text("from src.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "code")
    return git_repo


@pytest.fixture
def api_env(fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "5")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "2")
    return fake_api


def judge(project, evidence=RED, summary="I fixed add().", rerun=None):
    goal = make_goal(project)
    return get_oracle(goal.oracle, goal, rerun=rerun).judge(build_input(goal, [evidence], summary))


def last_user_content(request) -> list:
    return request.body["messages"][-1]["content"]


# ---- anthropic --------------------------------------------------------------------------------


def test_verdict_after_tool_rounds(api_env, project):
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 2000}
    api_env.enqueue(
        text("Let me read the code.", usage=usage) + tool_use("read_file", {"path": "src/calc.py"}),
        tool_use("grep", {"pattern": "def add"}, usage=usage) + tool_use("git", {"command": "status"}),
        text("```json\n" + json.dumps(VERDICT) + "\n```", usage=usage),
    )
    judgement = judge(project)
    assert judgement.verdict == Verdict.model_validate(VERDICT)
    assert judgement.model == MODEL and "2 tool round(s)" in judgement.notes
    per_call = (1000 * 0.10 + 100 * 0.50 + 2000 * 0.01) / 1e6
    assert judgement.cost.dollars == pytest.approx(3 * per_call)
    assert judgement.cost.tokens == 3 * 3100

    first, second, third = api_env.messages
    assert first.body["model"] == MODEL
    assert first.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "weakening, skipping or deleting" in first.body["system"][0]["text"]
    assert not {"temperature", "top_p", "top_k"} & set(first.body)
    assert [t["name"] for t in first.body["tools"]] == ["read_file", "list_files", "grep", "git"]
    assert "make the tests pass" in first.body["messages"][0]["content"]
    [result] = last_user_content(second)
    assert result["type"] == "tool_result" and "return a - b" in result["content"] and "is_error" not in result
    grep_result, status_result = last_user_content(third)
    assert "src/calc.py:1: def add(a, b):" in grep_result["content"]
    assert status_result["content"] == "(no output)"


def test_rerun_tool_runs_the_goals_condition(api_env, project):
    api_env.enqueue(tool_use("rerun_condition", {"index": 0}), text(json.dumps(VERDICT)))
    ran = []
    judgement = judge(project, rerun=lambda i: ran.append(i) or RED)
    assert ran == [0] and not judgement.verdict.converged
    [result] = last_user_content(api_env.messages[1])
    assert "FAILED tests/test_calc.py::test_add" in result["content"]


def test_a_path_escape_through_the_api_is_a_refused_tool_call(api_env, project, tmp_path):
    (tmp_path / "secret.txt").write_text("TOPSECRET")
    api_env.enqueue(tool_use("read_file", {"path": "../secret.txt"}), text(json.dumps(VERDICT)))
    judge(project)
    [result] = last_user_content(api_env.messages[1])
    assert result["is_error"] is True and "refused" in result["content"] and "TOPSECRET" not in result["content"]


def test_tool_rounds_stop_at_eight(api_env, project):
    api_env.enqueue(*[tool_use("list_files", {"pattern": "*"}) for _ in range(MAX_TOOL_ROUNDS)],
                    text(json.dumps(VERDICT)))
    judgement = judge(project)
    assert judgement.verdict.next_hint == VERDICT["nextHint"]
    requests = api_env.messages
    assert len(requests) == MAX_TOOL_ROUNDS + 1
    assert "tool_choice" not in requests[-2].body
    assert requests[-1].body["tool_choice"] == {"type": "none"}
    assert "last tool round" in last_user_content(requests[-1])[-1]["text"]


def test_tools_past_the_last_round_are_a_judge_error(api_env, project):
    api_env.enqueue(*[tool_use("list_files", {"pattern": "*"}) for _ in range(MAX_TOOL_ROUNDS + 1)])
    with pytest.raises(JudgeError, match="8 rounds") as exc:
        judge(project)
    assert exc.value.cost.dollars > 0  # what was spent still counts


def test_malformed_answer_then_a_repair(api_env, project):
    api_env.enqueue(text("The tests still fail, so not converged."), text(json.dumps(VERDICT)))
    judgement = judge(project)
    assert judgement.verdict.reasons == ["test_add fails"]
    assert any("not a valid verdict" in n for n in judgement.notes)
    repair = api_env.messages[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": [{"type": "text", "text": "The tests still fail, so not converged."}]}
    assert "no JSON object found" in repair[-1]["content"]


def test_schema_errors_are_repaired_too(api_env, project):
    api_env.enqueue(text('{"converged": "yes", "next_hint": "x"}'), text('Here it is: {"converged": true} as asked'))
    assert judge(project).verdict.converged is True
    assert "verdict schema" in api_env.messages[1].body["messages"][-1]["content"]


def test_malformed_twice_is_a_judge_error(api_env, project):
    api_env.enqueue(text("not json"), text("```json\n{broken\n```"))
    with pytest.raises(OracleError, match="not a valid verdict, twice") as exc:
        judge(project)
    assert exc.value.cost.tokens > 0


def test_rate_limit_then_success(api_env, project):
    api_env.enqueue(error(429, "rate_limit_error", "slow down", headers=FAST_RETRY), text(json.dumps(VERDICT)))
    assert judge(project).verdict.next_hint == VERDICT["nextHint"]
    assert len(api_env.messages) == 2


@pytest.mark.parametrize("status, kind", [(529, "overloaded_error"), (500, "api_error")])
def test_server_errors_until_the_retries_run_out(api_env, project, status, kind):
    api_env.enqueue(*[error(status, kind, "try later", headers=FAST_RETRY) for _ in range(3)], text(json.dumps(VERDICT)))
    with pytest.raises(JudgeError, match=f"answered {status} after 2 retries \\({kind}: try later\\)") as exc:
        judge(project)
    assert exc.value.cost.dollars == 0
    assert len(api_env.messages) == 3 and api_env.pending == 1


def test_a_client_error_is_not_retried(api_env, project):
    api_env.enqueue(error(404, "not_found_error", "model: claude-haiku-5-5"))
    with pytest.raises(JudgeError, match=r"answered 404 \(not_found_error: model: claude-haiku-5-5\); check --oracle-model"):
        judge(project)
    assert len(api_env.messages) == 1


def test_a_slow_server_past_the_timeout(api_env, project, monkeypatch):
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "0.3")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "0")
    api_env.enqueue(delay(10, text(json.dumps(VERDICT))))
    with pytest.raises(JudgeError, match=r"did not answer within 0.3 s"):
        judge(project)


def test_verdicts_come_back_as_the_oracle_gave_them(api_env, project):
    # The decision step, not the oracle, overrides a "converged" over a red condition and honours
    # the veto of a green one: both must reach it unchanged.
    api_env.enqueue(text(json.dumps({"converged": True, "reasons": ["looks done"]})),
                    text(json.dumps({"converged": False, "reasons": ["test_add was deleted"],
                                     "nextHint": "restore tests/test_calc.py::test_add"})))
    assert judge(project, evidence=RED).verdict.converged is True
    vetoed = judge(project, evidence=GREEN).verdict
    assert vetoed.converged is False and vetoed.reasons == ["test_add was deleted"]


def test_the_worst_case_bound_holds_for_a_call_that_uses_every_round(api_env, project):
    # The cap a claude-cli judge is given: every tool round used, each answering MAX_OUTPUT_TOKENS.
    (project / "big.txt").write_text(("y" * 150 + "\n") * 2000)
    usage_out = {"output_tokens": MAX_OUTPUT_TOKENS}
    big_reads = [tool_use("read_file", {"path": "big.txt"}, usage=usage_out) + tool_use("grep", {"pattern": "y"})
                 for _ in range(MAX_TOOL_ROUNDS)]
    api_env.enqueue(*big_reads, text("oops", usage=usage_out), text(json.dumps(VERDICT), usage=usage_out))
    goal = make_goal(project)
    judge_ = get_oracle(goal.oracle, goal)
    oracle_input = build_input(goal, [RED], "done")
    judgement = judge_.judge(oracle_input)
    base = sum(map(token_estimate, (judge_.system[0]["text"], json.dumps(judge_.toolbox.definitions),
                                    user_message(oracle_input))))
    assert judge_.estimate_cost(oracle_input) < judgement.cost.dollars <= cost_upper_bound(judge_.price, base)


def test_the_estimate_is_what_a_call_that_answers_really_costs(api_env, project):
    # The figure a budget is checked against is a real call's, not the worst case (about $0.09 on Haiku 5.5):
    # a few-cent budget can pay for the calls it really can.
    api_env.enqueue(text(json.dumps(VERDICT)))
    goal = make_goal(project)
    judge_ = get_oracle(goal.oracle, goal)
    oracle_input = build_input(goal, [RED], "done")
    estimate = judge_.estimate_cost(oracle_input)
    real = judge_.judge(oracle_input).cost.dollars
    assert real <= estimate <= 5 * real and estimate < 0.005, (real, estimate)


# ---- the input --------------------------------------------------------------------------------


def test_input_carries_the_contract(project):
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "tests" / "test_calc.py").write_text("def test_add():\n    pass\n")
    goal = make_goal(project)
    goal.base_commit = git(project, "rev-parse", "HEAD").strip()
    goal.baseline = Baseline(files=1, census=[Census(runner="pytest", ran=3, passed=1, failed=2)])
    for n in range(1, 5):
        goal.history.append(Iteration(number=n, started_at=now_iso(), ended_at=now_iso(), conditions=[RED],
                                      tree_fingerprint="f" * 64, decision=Decision(action="continue", hint=f"hint {n}"),
                                      verdict=Verdict(converged=False, reasons=[f"reason {n}"], next_hint=f"next {n}")))
    guard = Integrity(changed=["tests/test_calc.py"], pristine_note="the pristine re-run waits until every "
                      "condition passes", issues=[IntegrityIssue(kind="test-gone", subject="tests/test_calc.py::test_sub",
                                                                 detail="test_sub ran at the start and is gone now")])
    red = RED.model_copy(update={"census": Census(runner="pytest", ran=1, passed=1, failed=0)})
    built = build_input(goal, [red], "I changed add().", guard)
    doc = json.loads(built.to_json())
    assert doc["objective"] == "make the tests pass" and doc["makerSummary"] == "I changed add()."
    assert doc["conditions"] == [{"index": 0, "type": "test_pass", "command": "pytest -q", "passed": False,
                                  "exitCode": 1, "timedOut": False, "threshold": None, "coverage": None,
                                  "error": None, "failures": RED.failure_lines, "messagesLeftOut": 0,
                                  "tail": RED.output_tail}]
    assert [it["number"] for it in doc["recentIterations"]] == [2, 3, 4]
    assert doc["recentIterations"][-1] == {"number": 4, "converged": False, "reasons": ["reason 4"],
                                           "nextHint": "next 4", "judgeError": None, "action": "continue",
                                           "conditionFingerprints": ["ab" * 6], "treeFingerprint": "f" * 12}
    assert "src/calc.py" in doc["diffStat"] and "tests/test_calc.py" in doc["diffStat"]
    assert doc["integrity"] == {
        "enforced": True, "changed": ["tests/test_calc.py"], "deleted": [], "added": [],
        "census": ["[0] now pytest: 1 ran (1 passed, 0 failed); at the start pytest: 3 ran (1 passed, 2 failed)"],
        "pristine": "the pristine re-run waits until every condition passes",
        "issues": ["test-gone: tests/test_calc.py::test_sub: test_sub ran at the start and is gone now"]}


def test_a_huge_failing_run_stays_small_and_names_every_failing_test(project):
    names = [f"tests/test_m{i % 13}.py::test_case_{i:04d}[p{i % 3}]" for i in range(500)]
    log = "\n".join([*(f"E       assert {i} == {i + 1}" for i in range(500)), "x" * 10_000,
                     *(f"FAILED {n} - AssertionError: assert {i} == {i + 1}" for i, n in enumerate(names)),
                     "===== 500 failed, 20 passed in 9.1s ====="])
    # The failure lines as the runner's scanner finds them, all of them: its own cap is its business.
    lines = [line for line in log.splitlines() if line.startswith(("FAILED", "E ", "====="))]
    scanner = FailureScanner()
    scanner.feed(log.encode())
    scanner.close()
    assert scanner.lines
    evidence = RED.model_copy(update={"failure_lines": lines + lines, "output_tail": log[-8192:],
                                      "output_head": log[:4096]})
    built = build_input(make_goal(project), [evidence, GREEN.model_copy(update={"index": 1})], "x" * 100_000)
    assert built.estimated_tokens() <= MAX_INPUT_TOKENS
    text_ = built.to_json()
    assert set(names) <= named_tests(built.conditions[0].failures)
    assert "500 failed, 20 passed" in text_
    assert len(built.maker_summary) <= 4_000


def expand(pattern: str) -> list[str]:
    """A shell brace pattern's names, as bash expands it."""
    depth, start = 0, pattern.find("{")
    if start < 0:
        return [pattern]
    parts, last = [], start + 1
    for i in range(start + 1, len(pattern)):
        if pattern[i] == "{":
            depth += 1
        elif pattern[i] == "}" and depth:
            depth -= 1
        elif pattern[i] in ",}" and not depth:
            parts.append(pattern[last:i])
            last = i + 1
            if pattern[i] == "}":
                return [pattern[:start] + a + b for p in parts for a in expand(p) for b in expand(pattern[i + 1:])]
    raise AssertionError(f"unbalanced pattern {pattern!r}")


def named_tests(failures: list[str]) -> set[str]:
    """Every test id the oracle's failure lines name, brace patterns expanded."""
    named = set()
    for line in failures:
        if line.startswith("FAILED "):
            named.update(expand(line.removeprefix("FAILED ").split(" - ")[0]))
    return named


def test_two_thousand_failing_tests_are_all_named_within_the_token_budget(project):
    names = [f"tests/test_module_{i % 37:02d}.py::TestBehaviour::test_behaviour_{i:05d}[case-{i % 5}]"
             for i in range(3, 20_000, 10)]
    lines = [f"FAILED {n} - AssertionError: assert {i} == {i + 1}" for i, n in enumerate(names)]
    evidence = RED.model_copy(update={"failure_lines": lines, "output_tail": "\n".join(lines)[-8192:]})
    built = build_input(make_goal(project), [evidence], "I fixed them.")
    assert built.estimated_tokens() <= MAX_INPUT_TOKENS
    condition = built.conditions[0]
    assert named_tests(condition.failures) == set(names)
    assert condition.failures[0] == BRACES
    kept = sum(" - AssertionError" in f for f in condition.failures)
    assert condition.messages_left_out == len(names) - kept > 0


# ---- command ----------------------------------------------------------------------------------


def command_printing(tmp_path, output: str, code: int = 0) -> str:
    script = tmp_path / "judge.py"
    script.write_text("import json, sys\n"
                      "doc = json.load(sys.stdin)\n"
                      "assert doc['objective'] == 'make the tests pass', doc\n"
                      f"sys.stdout.write({output!r})\n"
                      f"sys.exit({code})\n")
    return f"{sys.executable} {script}"


@pytest.mark.parametrize("output, converged, reasons, hint, unfixable", [
    (json.dumps(VERDICT), False, ["test_add fails"], "fix add() in src/calc.py", None),
    ('{"ok": true, "reason": "all good"}', True, ["all good"], "", None),
    ('{"ok": false, "reason": "add is wrong"}', False, ["add is wrong"], "add is wrong", None),
    ('{"ok": false, "reason": "needs a license key", "impossible": true}', False, ["needs a license key"],
     "needs a license key", "needs a license key"),
    ('{"ok": false}', False, [NO_REASON], NO_REASON, None),
    ('{"decision": "done", "reason": "finished", "score": 9}', True, ["finished"], "", None),
    ('{"decision": "continue", "reason": "test_add fails"}', False, ["test_add fails"], "test_add fails", None),
    ('{"decision": "replan"}', False, [NO_REASON], f"Step back and re-plan the approach: {NO_REASON}", None),
])
def test_command_oracle_maps_each_verdict_shape(project, tmp_path, output, converged, reasons, hint, unfixable):
    goal = make_goal(project, provider="command", command=command_printing(tmp_path, output))
    judge_ = get_oracle(goal.oracle, goal)
    judgement = judge_.judge(build_input(goal, [RED], None))
    v = judgement.verdict
    assert (v.converged, v.reasons, v.next_hint) == (converged, reasons, hint)
    assert (v.unfixable.reason if v.unfixable else None) == unfixable
    assert judgement.cost.dollars == 0 and judge_.estimate_cost(build_input(goal, [RED], None)) == 0


@pytest.mark.parametrize("output, code, problem", [
    ("yes", 0, "not a verdict: no JSON object"),
    ('{"decision": "maybe"}', 0, "decision"),
    ('{"ok": "true"}', 0, "ok"),
    ('{"verdict": "pass"}', 0, "expected"),
    (json.dumps(VERDICT), 3, "exited 3"),
])
def test_command_oracle_errors_are_judge_errors(project, tmp_path, output, code, problem):
    goal = make_goal(project, provider="command", command=command_printing(tmp_path, output, code))
    with pytest.raises(JudgeError, match=problem):
        get_oracle(goal.oracle, goal).judge(build_input(goal, [RED], None))


# ---- conditions -------------------------------------------------------------------------------


def test_conditions_oracle_is_the_conditions_alone(project):
    goal = make_goal(project, provider="conditions")
    judge_ = get_oracle(goal.oracle, goal)
    green = judge_.judge(build_input(goal, [GREEN], None))
    assert green.verdict.converged is True and green.cost.dollars == 0
    assert "no independent judge" in green.notes[0]
    red = judge_.judge(build_input(goal, [RED], None)).verdict
    assert red.converged is False
    assert "FAILED tests/test_calc.py::test_add" in red.next_hint and "[0] test_pass `pytest -q` failed (exit 1)" in red.reasons


# ---- choosing ---------------------------------------------------------------------------------


def test_auto_prefers_an_api_key_then_claude_code(project, monkeypatch, tmp_path):
    goal = make_goal(project, provider="auto")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CLAUDE_BIN", raising=False)
    with pytest.raises(OracleUnavailable, match="ANTHROPIC_API_KEY.*claude-cli.*--oracle conditions"):
        get_oracle(goal.oracle, goal)
    monkeypatch.setenv("CLAUDE_BIN", sys.executable)
    assert get_oracle(goal.oracle, goal).name == "claude-cli"
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "t")
    assert get_oracle(goal.oracle, goal).name == "anthropic"


def test_providers_that_cannot_run_say_how_to_set_them_up(project, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CLAUDE_BIN", raising=False)
    for provider, message in (("anthropic", "needs an API key"), ("claude-cli", "needs Claude Code"),
                              ("command", "--oracle-cmd")):
        goal = make_goal(project, provider=provider)
        with pytest.raises(OracleUnavailable, match=message):
            get_oracle(goal.oracle, goal)


def test_an_oracle_model_without_a_price_fails_before_any_call(project, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    goal = make_goal(project)
    goal.oracle.model = "claude-unknown-9"
    with pytest.raises(PriceUnknown, match="claude-unknown-9"):
        get_oracle(goal.oracle, goal)


def test_bad_timeout_setting_is_reported(project, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "soon")
    goal = make_goal(project)
    with pytest.raises(InvalidInput, match="GOAL_CONVERGENCE_ORACLE_TIMEOUT"):
        get_oracle(goal.oracle, goal)


def test_importing_the_oracle_does_not_import_the_sdk():
    code = "import sys, goal_convergence.oracle; print('anthropic' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# ---- claude-cli, with the real Claude Code ----------------------------------------------------


def claude_code_judge(fake_api, project, claude_bin, answer):
    """Script Claude Code: read a file, then answer through its StructuredOutput tool."""
    seen = []

    def responder(body):
        seen.append(body)
        if len(seen) == 1:
            return tool_use("Read", {"file_path": str(project / "src" / "calc.py")},
                            usage={"input_tokens": 3000, "output_tokens": 50})
        return answer

    fake_api.set_responder(responder)
    goal = make_goal(project, provider="claude-cli")
    judge_ = ClaudeCliOracle(MODEL, project, claude_bin, timeout=30, max_retries=0)
    return judge_, build_input(goal, [RED], "I fixed add()."), seen


@pytest.mark.e2e
def test_claude_cli_oracle_with_the_real_claude_code(fake_api, project, claude_bin, monkeypatch):
    for k, v in fake_api.claude_env(project.parent / "home").items():
        monkeypatch.setenv(k, v)
    judge_, oracle_input, seen = claude_code_judge(
        fake_api, project, claude_bin, tool_use("StructuredOutput", VERDICT, usage={"input_tokens": 5000, "output_tokens": 200}))
    judgement = judge_.judge(oracle_input)
    assert judgement.verdict == Verdict.model_validate(VERDICT)
    assert judgement.model == MODEL
    # Claude Code's total_cost_usd, at its own prices, is what our price table gives for the same usage.
    assert judgement.cost.dollars == pytest.approx(cost.usage_cost(MODEL, {"input_tokens": 3000, "output_tokens": 50})
                                                   + cost.usage_cost(MODEL, {"input_tokens": 5000, "output_tokens": 200}))
    assert judgement.cost.tokens == 3000 + 50 + 5000 + 200
    first = seen[0]
    assert first["model"] == MODEL
    assert sorted(t["name"] for t in first["tools"] if t["name"] != "DeferredToolPlaceholder") == \
        ["Glob", "Grep", "Read", "StructuredOutput"]
    assert "weakening, skipping or deleting" in json.dumps(first["system"])
    assert "make the tests pass" in json.dumps(first["messages"])
    # The Read ran inside the project: its result is in the second request.
    assert "return a - b" in json.dumps(seen[1]["messages"])


@pytest.mark.e2e
def test_claude_cli_oracle_reports_an_api_failure(fake_api, project, claude_bin, monkeypatch):
    for k, v in fake_api.claude_env(project.parent / "home").items():
        monkeypatch.setenv(k, v)
    judge_, oracle_input, _ = claude_code_judge(fake_api, project, claude_bin,
                                                error(400, "invalid_request_error", "scripted refusal"))
    with pytest.raises(JudgeError, match="claude -p ended with an error: .*scripted refusal"):
        judge_.judge(oracle_input)


@pytest.mark.e2e
def test_claude_cli_oracle_without_a_verdict_is_a_judge_error(fake_api, project, claude_bin, monkeypatch):
    for k, v in fake_api.claude_env(project.parent / "home").items():
        monkeypatch.setenv(k, v)
    judge_, oracle_input, _ = claude_code_judge(fake_api, project, claude_bin, text("Looks fine to me."))
    with pytest.raises(JudgeError, match="no valid verdict") as exc:
        judge_.judge(oracle_input)
    assert exc.value.cost.dollars > 0


def test_oracle_input_round_trips():
    built = OracleInput(objective="o", conditions=[])
    assert OracleInput.model_validate_json(built.to_json()) == built


def test_a_command_oracle_past_its_timeout_leaves_no_grandchild(project, tmp_path):
    from goal_convergence.oracle.command import CommandOracle

    pidfile = tmp_path / "grandchild.pid"
    judge_ = CommandOracle(f"sleep 300 & echo $! > {pidfile}; wait", project, timeout=0.1)
    judge_.timeout = 1.0
    goal = make_goal(project, provider="command", command="x")
    with pytest.raises(JudgeError, match="no verdict within 1 s"):
        judge_.judge(build_input(goal, [RED], None))
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 3  # killed already; init reaps it a moment later
    while time.monotonic() < deadline and running(grandchild):
        time.sleep(0.05)
    assert not running(grandchild)


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.e2e
def test_claude_cli_oracle_cannot_read_a_secrets_file(fake_api, project, claude_bin, monkeypatch):
    for k, v in fake_api.claude_env(project.parent / "home").items():
        monkeypatch.setenv(k, v)
    (project / ".env").write_text("DB_PASSWORD=never-shown-to-the-judge\n")
    judge_, oracle_input, seen = claude_code_judge(fake_api, project, claude_bin, tool_use("StructuredOutput", VERDICT))
    fake_api.set_responder(lambda body: seen.append(body) or (
        tool_use("Read", {"file_path": str(project / ".env")}) if len(seen) == 1 else tool_use("StructuredOutput", VERDICT)))
    judge_.judge(oracle_input)
    assert len(seen) >= 2 and "never-shown-to-the-judge" not in json.dumps(seen[1]["messages"])

