"""What the Stop hook imports: it runs at every stop of every session, so modules only some goals or commands
use are imported where they are used."""

from __future__ import annotations

import json
import subprocess
import sys

# Each judge's modules (the Messages API's prompt and tools, the CLIs'), and making a goal (its thread pool).
NOT_AT_A_STOP = {f"goal_convergence.oracle.{m}" for m in ("api", "claude_cli", "codex_cli", "command", "gemini_cli",
                                                          "prompt", "tools", "cli_judge")} | {
    "goal_convergence.goals.creation", "concurrent.futures"}


def test_a_stop_imports_no_judge_but_the_one_that_judges_and_nothing_that_makes_goals():
    probe = ("import json, sys; from goal_convergence.agents.claude_code import hooks; "
             "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert NOT_AT_A_STOP & set(json.loads(out)) == set()
