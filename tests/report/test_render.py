"""Text a person reads, from real models: money, durations, the budget line, status pages and tables."""

from __future__ import annotations

import io
import os
import select
from datetime import UTC, datetime, timedelta

import pytest

from goal_convergence.models import (Baseline, Budget, Census, ConditionEvidence, Decision, Escalation,
                                     FailingCondition, Iteration, StoppingCondition, TriageItem, now_iso)
from goal_convergence.report import render

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("dollars", "text"), [(0, "$0.00"), (0.01234, "$0.01"), (0.99994, "$1.00"),
                                               (1, "$1.00"), (12.345, "$12.35"), (1234.5, "$1234.50")])
def test_money(dollars, text):
    assert render.money(dollars) == text


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.9, "59s"), (60, "1m00s"), (3599, "59m59s"),
                                               (3600, "1h00m"), (3661, "1h01m"), (90000, "25h00m")])
def test_duration(seconds, text):
    assert render.duration(seconds) == text


def test_the_budget_line_counts_the_running_clock_and_shows_no_limit_as_infinity(make_goal):
    goal = make_goal(budget=Budget(max_iterations=None, max_duration="2h", max_dollars=None, max_tokens=5000))
    goal.spent.iterations, goal.spent.active_seconds, goal.spent.maker_dollars, goal.spent.maker_tokens = 4, 30, 2.5, 70
    assert render.budget_line(goal, T0) == "iterations 4/∞, time 30s/2h, spend $2.50/∞, tokens 70/5000"
    goal.active_since = now_iso(T0)
    assert render.budget_line(goal, T0 + timedelta(seconds=90)).startswith("iterations 4/∞, time 2m00s/2h")
    assert "time 30s/2h" in render.budget_line(goal, T0 - timedelta(seconds=5))  # a clock behind adds nothing


def test_the_status_page(make_goal):
    goal = make_goal(objective="ship it", session_id="s-1", state="escalated", stop_reason="stuck",
                     stopping_conditions=[StoppingCondition(type="test_pass", command="pytest -q"),
                                          StoppingCondition(type="coverage_threshold", command="cov", threshold=85)],
                     escalation=Escalation(stop_reason="stuck", blocker="needs_user_input", detail="same failure",
                                           triage_id="tri-abcdefgh", at=now_iso(T0)),
                     baseline=Baseline(files=3, census=[Census(runner="pytest", ran=8, passed=8), None]))
    goal.history.append(Iteration(number=1, started_at=now_iso(T0), ended_at=now_iso(T0 + timedelta(minutes=1)),
                                  decision=Decision(action="continue", hint="look at parse()")))
    lines = render.status(goal, now=T0 + timedelta(minutes=11)).splitlines()
    assert lines[:9] == [f"{goal.goal_id}: ship it", "state: escalated (stuck)", f"project: {goal.project_root}",
                         "session: s-1", "conditions:", "  [0] test_pass: pytest -q",
                         "  [1] coverage_threshold (>= 85%): cov", "budget: iterations 0/15, time 0s/2h, spend $0.00/$10.00",
                         "oracle: auto (claude-haiku-5-5)"]
    assert "integrity: enforced: a green run converges only if the original tests still run and pass" in lines
    assert "  baseline: 3 check-defining files kept" in lines
    assert "  tests [0] at start: pytest: 8 ran (8 passed)" in lines
    assert "  tests [1] at start: unknown (no census from this runner)" in lines
    assert "  #1 continue 0/0 passing, 10m00s ago" in lines and lines[-1] == "last hint: look at parse()"


def test_an_escalation_reads_as_a_stop_reason_a_triage_item_and_a_sentence(make_goal):
    goal = make_goal(state="escalated", stop_reason="ceiling", oracle={"provider": "conditions", "model": "m"},
                     escalation=Escalation(stop_reason="ceiling", triage_id="tri-abcdefgh", at=now_iso(T0),
                                           detail="no independent judge: the verdict is the conditions alone"))
    lines = render.status(goal, T0).splitlines()
    at = lines.index("escalated: stop reason ceiling; triage item tri-abcdefgh (`goal triage show tri-abcdefgh`)")
    assert lines[at + 1] == "  No independent judge: the verdict is the conditions alone."
    blocked = goal.model_copy(update={"escalation": goal.escalation.model_copy(update={"blocker": "needs_user_input",
                                                                                       "detail": ""})})
    assert "escalated: stop reason ceiling (blocker: needs user input); triage item tri-abcdefgh" in render.status(
        blocked, T0)


def test_a_status_without_a_judge_or_a_baseline_says_so_and_names_no_model(make_goal):
    goal = make_goal(oracle={"provider": "conditions", "model": "claude-haiku-5-5"}, baseline=None)
    text = render.status(goal, T0)
    assert "session: (none)" in text and "oracle: conditions (no independent judge: the conditions alone decide)" in text
    assert "claude-haiku-5-5" not in text
    assert "integrity: no baseline" in text and "last hint" not in text


def test_a_converged_goal_shows_no_last_hint(make_goal):
    goal = make_goal(state="converged", stop_reason="converged")
    goal.history.append(Iteration(number=1, started_at=now_iso(T0), ended_at=now_iso(T0),
                                  decision=Decision(action="continue", hint="look at parse()")))
    assert "last hint" not in render.status(goal, T0)
    assert "last hint: look at parse()" in render.status(goal.model_copy(update={"state": "active"}), T0)


def test_the_triage_table_and_item():
    assert render.triage_table([]) == "the triage inbox is empty"
    stamp = now_iso(T0)
    escalated = TriageItem(triage_id="tri-aaaaaaaa", goal_id="goal-aaaaaaaa", objective="fix it\nnow",
                           project_root="/p", stop_reason="stuck", blocker="needs_user_input", created_at=stamp,
                           updated_at=stamp, reasons=["same failure 3 times"],
                           failing_conditions=[FailingCondition(type="test_pass", command="pytest",
                                                                first_failure="FAILED test_a")])
    beat = TriageItem(triage_id="tri-bbbbbbbb", source="heartbeat", objective="y" * 80, project_root="/p",
                      created_at=stamp, updated_at=stamp)
    header, first, second = render.triage_table([escalated, beat]).splitlines()
    assert header.split() == ["ID", "STATUS", "REASON", "GOAL", "OBJECTIVE"]
    assert first.split() == ["tri-aaaaaaaa", "open", "stuck", "goal-aaaaaaaa", "fix", "it", "now"]
    assert second.split() == ["tri-bbbbbbbb", "open", "heartbeat", "-", "y" * 60]
    assert first.index("fix") == second.index("y") == header.index("OBJECTIVE")
    text = render.triage_item(escalated)
    assert text.splitlines()[:3] == ["tri-aaaaaaaa (open, from escalation): fix it", "now", "project: /p"]
    assert "goal: goal-aaaaaaaa, stopped: stuck, blocker: needs_user_input" in text
    assert "failing: pytest: FAILED test_a" in text and "reason: same failure 3 times" in text


def test_evidence_table():
    evidence = [
        ConditionEvidence(index=0, type="test_pass", command="pytest -q", passed=True, duration_seconds=1.234),
        ConditionEvidence(index=1, type="lint_clean", command="ruff check .", passed=False, exit_code=1,
                          failure_lines=["a.py:1:8: F401 `os` imported but unused", "Found 1 error."]),
        ConditionEvidence(index=2, type="test_pass", command="sleep 99", passed=False, timed_out=True,
                          duration_seconds=2.0, error="timed out after 1s"),
        ConditionEvidence(index=3, type="coverage_threshold", command="pytest --cov", passed=False, exit_code=0,
                          coverage=72.456, error="coverage 72.456% is below the threshold 80%"),
        ConditionEvidence(index=4, type="metric", command="python3 count.py", passed=False, exit_code=0, metric=12.0,
                          error="the metric is 12, and the target is <= 0"),
    ]
    table = render.evidence_table(evidence).splitlines()
    assert table[0].split() == ["#", "condition", "result", "duration", "measure", "first", "failure"]
    assert table[5].split()[:6] == ["4", "metric:", "python3", "count.py", "FAIL", "0.00s"] and " 12 " in table[5]
    assert table[1].split()[:5] == ["0", "test_pass:", "pytest", "-q", "PASS"]
    assert "1.23s" in table[1]
    assert "FAIL" in table[2] and table[2].endswith("a.py:1:8: F401 `os` imported but unused")
    assert "TIMEOUT" in table[3] and table[3].endswith("timed out after 1s")
    assert "72.5%" in table[4] and table[4].endswith("below the threshold 80%")
    assert table[-1] == "1/5 conditions pass"


def test_live_progress_draws_on_a_terminal_only_once_a_condition_runs_a_second(tmp_path):
    plain = io.StringIO()
    render.LiveProgress(plain)([(0, "pytest", 1.0, None)])
    assert plain.getvalue() == ""

    leader, follower = os.openpty()
    with os.fdopen(follower, "w", encoding="utf-8") as tty:
        progress = render.LiveProgress(tty)
        assert progress.enabled
        progress([(0, "pytest -q", 0.1, None), (1, "ruff check .", 0.1, None)])  # quick so far: nothing drawn
        progress([(0, "pytest -q", 1.2, None), (1, "ruff check .", 0.2, False)])
        progress([(0, "pytest -q", 1.5, True), (1, "ruff check .", 0.2, False)])
        progress([(0, "pytest -q", 1.1, None)])  # the next run draws below the last, not over it
    drawn = b""
    while drawn.count(b"\n") < 5 and select.select([leader], [], [], 2)[0]:
        drawn += os.read(leader, 65536)
    os.close(leader)
    text = drawn.decode()
    assert "0.1s" not in text
    assert f"{render.LiveProgress._SPIN[0]} [0]    1.2s  pytest -q" in text
    assert text.count("\x1b[2F") == 1  # back up over the two lines drawn before, once
    assert "✓ [0]    1.5s  pytest -q" in text and "✗ [1]    0.2s  ruff check ." in text
    assert text.endswith(f"\x1b[2K{render.LiveProgress._SPIN[2]} [0]    1.1s  pytest -q\r\n")  # a step a frame
