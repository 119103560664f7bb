"""The condition table and the live progress lines."""

from __future__ import annotations

import io
import os
import select

from goal_convergence.models import ConditionEvidence
from goal_convergence.render import LiveProgress, evidence_table


def test_evidence_table():
    evidence = [
        ConditionEvidence(index=0, type="test_pass", command="pytest -q", passed=True, duration_seconds=1.234),
        ConditionEvidence(index=1, type="lint_clean", command="ruff check .", passed=False, exit_code=1,
                          failure_lines=["a.py:1:8: F401 `os` imported but unused", "Found 1 error."]),
        ConditionEvidence(index=2, type="test_pass", command="sleep 99", passed=False, timed_out=True,
                          duration_seconds=2.0, error="timed out after 1s"),
        ConditionEvidence(index=3, type="coverage_threshold", command="pytest --cov", passed=False, exit_code=0,
                          coverage=72.456, error="coverage 72.456% is below the threshold 80%"),
    ]
    table = evidence_table(evidence).splitlines()
    assert table[0].split() == ["#", "condition", "result", "duration", "coverage", "first", "failure"]
    assert table[1].split()[:5] == ["0", "test_pass:", "pytest", "-q", "PASS"]
    assert "1.23s" in table[1]
    assert "FAIL" in table[2] and table[2].endswith("a.py:1:8: F401 `os` imported but unused")
    assert "TIMEOUT" in table[3] and table[3].endswith("timed out after 1s")
    assert "72.5%" in table[4] and table[4].endswith("below the threshold 80%")
    assert table[-1] == "1/4 conditions pass"


def test_live_progress_draws_on_a_terminal_only(tmp_path):
    plain = io.StringIO()
    LiveProgress(plain)([(0, "pytest", 1.0, None)])
    assert plain.getvalue() == ""

    leader, follower = os.openpty()
    with os.fdopen(follower, "w", encoding="utf-8") as tty:
        progress = LiveProgress(tty)
        assert progress.enabled
        progress([(0, "pytest -q", 0.1, None), (1, "ruff check .", 0.1, None)])
        progress([(0, "pytest -q", 1.5, True), (1, "ruff check .", 0.2, False)])
    drawn = b""
    while drawn.count(b"\n") < 4 and select.select([leader], [], [], 2)[0]:
        drawn += os.read(leader, 65536)
    os.close(leader)
    text = drawn.decode()
    assert "… [0]    0.1s  pytest -q" in text
    assert "\x1b[2F" in text  # back up over the two lines drawn before
    assert "✓ [0]    1.5s  pytest -q" in text and "✗ [1]    0.2s  ruff check ." in text
