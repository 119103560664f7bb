"""The oracle's input for a run with 2,000 failing tests: its size in tokens, and whether it names
every failing test.

    python benchmarks/bench_oracle_input.py [--quick] [--json]

Realistic pytest output (``pytest_output.py``: 20,000 tests, 2,000 failing, captured logs, a
warning every 50 lines; 200 MB, 20 MB with ``--quick``) goes through the real condition runner
(``conditions.run_condition``) and ``build_input``. Tokens are chars/4 of the input JSON (the
estimate the code uses; there is no offline tokenizer). The baseline, measured in the same run, is
the run's short test summary as pytest prints it (one FAILED line a test). A name counts as given
when the input's failure lines name it, brace patterns expanded as a shell would, or when the input
holds its name after the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, report  # noqa: E402
from pytest_output import failed, test_id  # noqa: E402

from goal_convergence import oracle  # noqa: E402
from goal_convergence.checks import conditions  # noqa: E402
from goal_convergence.models import Budget, Goal, OracleConfig, StoppingCondition, new_id, now_iso  # noqa: E402
from goal_convergence.oracle.input import MAX_INPUT_TOKENS  # noqa: E402

FAILURES = 2000


def expand(pattern: str) -> list[str]:
    """A shell brace pattern's names."""
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
    return [pattern]


def main(argv: list[str]) -> int:
    size = 20_000_000 if "--quick" in argv else 200_000_000
    with tempfile.TemporaryDirectory(prefix="bench-oracle-input-") as tmp:
        root = Path(tmp)
        with open(root / "pytest.log", "wb") as fh:
            subprocess.run([sys.executable, str(HERE / "pytest_output.py"), str(size), str(FAILURES)], stdout=fh,
                           check=True)
        condition = StoppingCondition(type="test_pass", command="cat pytest.log; exit 1")
        goal = Goal(goal_id=new_id("goal-"), objective="make every test pass", stopping_conditions=[condition],
                    budget=Budget(max_iterations=10), oracle=OracleConfig(provider="anthropic", model="claude-haiku-5-5"),
                    project_root=str(root), created_at=now_iso(), updated_at=now_iso())
        evidence = conditions.run_condition(condition, 0, root)
        built = oracle.build_input(goal, [evidence], "I fixed the tests.")
        summary = [line for line in (root / "pytest.log").read_text().splitlines() if line.startswith("FAILED ")]
    names = {test_id(i) for i in range(FAILURES * 10) if failed(i)}
    given = {n for line in built.conditions[0].failures if line.startswith("FAILED ")
             for n in expand(line.removeprefix("FAILED ").split(" - ")[0])}
    text = built.to_json()
    given |= {n for n in names if n.split("::", 1)[1] in text}  # named in full, in any other form
    tokens, summary_tokens = built.estimated_tokens(), -(-len("\n".join(summary)) // 4)
    mb = f"{size / 1e6:g} MB"
    return report([
        Row(f"oracle input, {FAILURES:,} failing tests ({mb} of pytest output)", f"{tokens:,} tokens",
            f"pytest's short summary alone: {summary_tokens:,} tokens", f"≤ {MAX_INPUT_TOKENS:,} tokens",
            tokens <= MAX_INPUT_TOKENS, tokens / summary_tokens),
        Row(f"failing tests named in the oracle input ({FAILURES:,} failing)", f"{len(names & given):,}",
            f"failing in the run: {len(names):,}", "every one", names <= given),
    ], argv)


if __name__ == "__main__":
    os.environ.setdefault("SHELL", "/bin/sh")
    sys.exit(main(sys.argv[1:]))
