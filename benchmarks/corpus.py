"""Realistic inputs for the store and hook benchmarks: goal homes with history and real evidence.

The evidence is what a real run of a condition leaves: a script prints the output of a failing
pytest suite (2,000 tests, 40 failures with 70-line tracebacks and a warning each, about 150 KB) and ``conditions.run_condition`` keeps its head, tail, failure lines and census, as a
Stop hook would. Each iteration carries it, with a verdict and a decision, and is saved through
the store, so the goal file has the shape this checkout writes. Copies of one goal under new ids
(sessions, states and projects varied) make the 10,000 goals; the copies share no side files of
evidence, which only loading that one goal would read.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from goal_convergence.checks import conditions  # noqa: E402
from goal_convergence.goals import creation, specs  # noqa: E402
from goal_convergence.models import (  # noqa: E402
    ConditionEvidence,
    Decision,
    Goal,
    Iteration,
    StoppingCondition,
    Verdict,
    new_id,
    now_iso,
)
from goal_convergence.storage.store import Store  # noqa: E402
from tests.conftest import fresh_index  # noqa: E402

PYTEST_RUN = r'''
import sys
out = ["============================= test session starts ==============================",
       "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0", "rootdir: /work/project", "collected 2000 items", ""]
for m in range(100):
    out.append(f"tests/test_module_{m:03d}.py " + "".join("F" if (m * 20 + t) % 50 == 7 else "." for t in range(20)))
out += ["", "=================================== FAILURES ==================================="]
for f in range(40):
    out += [f"_________________________ test_case_{f:04d} _________________________", "",
            f"    def test_case_{f:04d}():", "        result = compute(7)", ">       assert result == 42",
            "E       assert 41 == 42", "E        +  where 41 = compute(7)", "",
            f"tests/test_module_{f:03d}.py:{10 + f}: AssertionError"] + [f"    frame line {i}" for i in range(60)]
    out.append(f"tests/test_module_{f:03d}.py:3: DeprecationWarning: the old API is deprecated")
out += ["=========================== short test summary info ============================"]
out += [f"FAILED tests/test_module_{f:03d}.py::test_case_{f:04d} - assert 41 == 42" for f in range(40)]
out.append("================= 40 failed, 1960 passed, 40 warnings in 12.34s =================")
sys.stdout.write("\n".join(out) + "\n")
sys.exit(1)
'''


def project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_tests.py").write_text(PYTEST_RUN, encoding="utf-8")
    if not (folder / ".git").exists():
        os.system(f"git -C '{folder}' init -q")  # noqa: S605 - a fixed command on our own temp folder
    return folder


def real_evidence(root: Path) -> ConditionEvidence:
    condition = StoppingCondition(type="test_pass", command=f"{sys.executable} run_tests.py")
    found = conditions.run_condition(condition, 0, root)
    assert not found.passed and found.failure_lines, found
    return found


def iterations(evidence: ConditionEvidence, count: int, start: int = 1) -> list[Iteration]:
    stamp = now_iso()
    hint = "test_case_0007 expects compute(7) == 42: look at the off-by-one in compute()"
    return [Iteration(number=n, started_at=stamp, ended_at=stamp, maker_summary="Fixed the parser; tests next.",
                      conditions=[evidence], tree_fingerprint=f"{n:064x}",
                      verdict=Verdict(converged=False, reasons=["40 tests still fail in tests/test_module_*.py"],
                                      next_hint=hint, confidence=0.8),
                      decision=Decision(action="continue", hint=hint))
            for n in range(start, start + count)]


def goal_with_history(home: Path, root: Path, evidence: ConditionEvidence, count: int, *, session: str | None,
                      test: str = "true") -> Goal:
    """A goal of ``root`` (checks: ``test``, the conditions oracle) with ``count`` iterations of history."""
    store = Store(home)
    spec = specs.GoalSpec(objective="make every test in tests/ pass without weakening any of them", project=root,
                          checks=[test], oracle_provider="conditions", session_id=session,
                          max_iterations=100_000, max_duration=None, max_dollars=None)
    goal = creation.new_goal(store, spec)

    def grow(g: Goal) -> None:
        g.history = iterations(evidence, count)
        g.spent.iterations = count

    return store.update(Goal, goal.goal_id, grow)


def many_goals(home: Path, root: Path, evidence: ConditionEvidence, total: int, history: int) -> str:
    """``total`` goal files like one with ``history`` iterations; a few open in ``root``, the rest
    elsewhere and finished. Returns the id of the one active goal, bound to session "bench-bound"."""
    model = goal_with_history(home, root, evidence, history, session="bench-bound")
    doc = json.loads((home / "goals" / f"{model.goal_id}.json").read_text(encoding="utf-8"))
    folder = home / "goals"
    for i in range(total - 1):
        gid = new_id("goal-")
        mine = i < 3
        copy = {**doc, "goalId": gid, "sessionId": f"session-{i:05d}", "state": "paused" if mine else "converged",
                "projectRoot": str(root) if mine else f"/elsewhere/project-{i}", "activeSince": None}
        (folder / f"{gid}.json").write_text(json.dumps(copy, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    Store(home).summaries()  # the index as the first hook after these writes leaves it
    assert fresh_index(home) is not None
    return model.goal_id
