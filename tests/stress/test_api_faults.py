"""Every way the oracle's Messages API can fail, met by a real `goal run` (in-process) whose checks all
pass, so only the oracle stands between the run and convergence. Each fault must end as judge errors
charged what the replies cost: never a convergence, never exit 70. The faulty replies carry a
`converged: true` verdict wherever they carry anything, so a reply taken at its word would converge."""

from __future__ import annotations

import json

import pytest

from goal_convergence.rules.decide import JUDGE_ERRORS_TO_STOP
from tests.conftest import run_goal

from . import invariants as inv
from .faultapi import CLOSE, RESET, FaultAPI, Hang, Raw, error, message, ok
from .report import assert_clean
from .scale import SCALE

pytestmark = pytest.mark.stress

CONVERGED = json.dumps({"converged": True, "conditionResults": [], "reasons": ["looks done"], "nextHint": "",
                        "confidence": 0.99})
WHOLE = json.dumps(message([{"type": "text", "text": CONVERGED}])).encode()
SSE = (b"event: message_start\ndata: " + json.dumps({"type": "message_start", "message": message([])}).encode()
       + b"\n\nevent: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": 0, \"content_block\": "
       + json.dumps({"type": "text", "text": CONVERGED}).encode() + b"}\n\n")
# Full: enough iterations for the judge-error stop (exit 7). Short: one iteration, which ends at the ceiling.
ITERATIONS = JUDGE_ERRORS_TO_STOP if SCALE == "full" else 1
EXIT = 7 if SCALE == "full" else 4

# name: (fault, settings, whether every reply's usage is readable, so the charge must be exact)
FAULTS = {
    "HTTP 500 api_error": (lambda b: error(500, "api_error"), {}, True),
    "HTTP 529 overloaded": (lambda b: error(529, "overloaded_error"), {}, True),
    "HTTP 429 with retry-after": (lambda b: error(429, "rate_limit_error", {"retry-after": "1"}),
                                  {"GOAL_CONVERGENCE_ORACLE_RETRIES": "1"}, True),
    "HTTP 503 with retry-after-ms": (lambda b: error(503, "api_error", {"retry-after-ms": "5"}),
                                     {"GOAL_CONVERGENCE_ORACLE_RETRIES": "2"}, True),
    "HTTP 400 invalid request": (lambda b: error(400, "invalid_request_error"), {}, True),
    "HTTP 401 bad credentials": (lambda b: error(401, "authentication_error"), {}, True),
    "HTTP 404 unknown model": (lambda b: error(404, "not_found_error"), {}, True),
    "HTTP 413 request too large": (lambda b: error(413, "request_too_large"), {}, True),
    "timeout": (lambda b: Hang(8), {"GOAL_CONVERGENCE_ORACLE_TIMEOUT": "2"}, True),
    "connection reset": (lambda b: RESET, {}, True),
    "connection closed, no reply": (lambda b: CLOSE, {}, True),
    "empty 200 body": (lambda b: Raw(200, b""), {}, False),
    "truncated JSON": (lambda b: Raw(200, WHOLE[: len(WHOLE) // 2]), {}, False),
    "body shorter than its Content-Length": (lambda b: Raw(200, WHOLE[:40], length=len(WHOLE)), {}, False),
    "usage missing": (lambda b: ok(message([{"type": "text", "text": CONVERGED}], usage=False)), {}, False),
    "usage null": (lambda b: ok(message([{"type": "text", "text": CONVERGED}], usage=None)), {}, False),
    "usage of the wrong types": (lambda b: ok(message([{"type": "text", "text": CONVERGED}],
                                                      usage={"input_tokens": "many", "output_tokens": None})),
                                 {}, False),
    "wrong content type (HTML)": (lambda b: Raw(200, b"<html><body>" + CONVERGED.encode() + b"</body></html>",
                                                "text/html"), {}, False),
    "event stream to a plain request": (lambda b: Raw(200, SSE, "text/event-stream"), {}, False),
    "200 JSON that is not a message": (lambda b: Raw(200, json.dumps({"converged": True}).encode()), {}, False),
    "content not a list": (lambda b: ok(message(CONVERGED)), {}, False),  # type: ignore[arg-type]
    "bytes that are not text": (lambda b: Raw(200, b"\xff\xfe\x00\x9c" * 64), {}, False),
    "unknown content block": (lambda b: ok(message([{"type": "mystery", "text": CONVERGED}])), {}, True),
    "no verdict, ever": (lambda b: ok(message([{"type": "text", "text": "It looks fine to me."}])), {}, True),
    "refusal": (lambda b: ok(message([{"type": "text", "text": CONVERGED}], stop_reason="refusal")), {}, True),
    "tool calls forever": (lambda b: ok(message([{"type": "tool_use", "id": "toolu_loop", "name": "read_file",
                                                  "input": {"path": "README.md"}}], stop_reason="tool_use")), {}, True),
}


@pytest.fixture
def project(git_repo, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_RETRIES", "0")
    monkeypatch.setenv("GOAL_CONVERGENCE_ORACLE_TIMEOUT", "30")
    return git_repo


@pytest.mark.parametrize("name", FAULTS)
def test_an_api_fault_is_a_judge_error_charged_what_it_cost(name, project, gc_home, monkeypatch, tally):
    fault, settings, exact = FAULTS[name]
    row = tally("API fault modes")
    api = FaultAPI(fault)
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        for var, value in settings.items():
            monkeypatch.setenv(var, value)
        with row.attempt(name):
            made = run_goal(project, "new", "judge me", "--check", "true", "--oracle", "anthropic",
                            "--max-iterations", str(ITERATIONS), "--max-dollars", "100", "--json")
            assert made.returncode == 0, made.stderr
            goal_id = json.loads(made.stdout)["goalId"]
            ran = run_goal(project, "run", goal_id, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
            doc = inv.goal_doc(gc_home, goal_id)
            assert doc["state"] != "converged", f"{name}: a false convergence"
            assert ran.returncode != 70, f"exit 70: {ran.stderr[-400:]}"
            assert ran.returncode == EXIT, f"exit {ran.returncode}, not {EXIT}: {ran.stderr[-400:]}"
            inv.check_ledger(doc)
            assert doc["pending"] is None
            not_judge_errors = [it["number"] for it in doc["history"] if not it.get("judgeError") or it.get("verdict")]
            assert not not_judge_errors, f"iterations {not_judge_errors} are not judge errors"
            charged = sum(it["oracleCost"]["tokens"] for it in doc["history"])
            if charged != doc["spent"]["oracleTokens"]:
                raise inv.Lost(f"history charges {charged} oracle tokens, spent says {doc['spent']['oracleTokens']}")
            if exact and charged != api.billed:
                raise inv.Lost(f"the API billed {api.billed} tokens in {api.requests} requests; {charged} charged")
    finally:
        api.close()
    assert_clean(row)
