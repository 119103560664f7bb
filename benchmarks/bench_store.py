"""How long `goal list --all` takes over 1,000 goal files (a full read: every file parsed and validated).

    python benchmarks/bench_store.py [--runs 5] [--history 6]

Each goal file is a copy of one real goal under a new id, with ``--history`` iterations of evidence
(a failing test condition, a verdict, a decision): the size a goal reaches after a short run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from goal_convergence import goals  # noqa: E402
from goal_convergence.models import ConditionEvidence, Decision, Iteration, Verdict, new_id, now_iso  # noqa: E402
from goal_convergence.store import Store  # noqa: E402

GOALS = 1000


def make_goals(home: Path, project: Path, history: int) -> None:
    store = Store(home)
    spec = goals.GoalSpec(objective="make the tests pass", project=project, checks=["python -m pytest -q"],
                          oracle_provider="conditions")
    goal = goals.new_goal(store, spec)
    stamp = now_iso()
    evidence = ConditionEvidence(index=0, type="test_pass", command="python -m pytest -q", passed=False, exit_code=1,
                                 duration_seconds=1.5, output_tail="F" * 2000, output_bytes=4000,
                                 failure_lines=[f"FAILED tests/test_{i}.py::test_x - assert 1 == 2" for i in range(5)])
    goal.history = [Iteration(number=n, started_at=stamp, ended_at=stamp, conditions=[evidence],
                              verdict=Verdict(converged=False, reasons=["test_x fails"], next_hint="fix x"),
                              decision=Decision(action="continue", hint="fix x")) for n in range(1, history + 1)]
    first = goal.dump()
    folder = home / "goals"
    for i in range(GOALS):
        doc = {**first, "goalId": new_id("goal-"), "state": "converged" if i % 2 else "paused"}
        (folder / f"{doc['goalId']}.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (folder / f"{goal.goal_id}.json").unlink()


def _child_cpu() -> float:
    # CPU time, beside wall time: on a shared machine it moves much less with the load.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--history", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        make_goals(home, project, args.history)
        size = sum(p.stat().st_size for p in (home / "goals").glob("goal-*.json")) // GOALS
        env = {**os.environ, "GOAL_CONVERGENCE_HOME": str(home), "PYTHONPATH": str(REPO)}  # this checkout's code
        command = [sys.executable, "-m", "goal_convergence", "list", "--all", "--json"]
        times, cpu = [], []
        for _ in range(args.runs):
            start, used = time.perf_counter(), _child_cpu()
            out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            times.append(time.perf_counter() - start)
            cpu.append(_child_cpu() - used)
            assert len(json.loads(out)) == GOALS
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import goal_convergence.cli"], env=env, check=True)
        startup = time.perf_counter() - start
        print(f"goal list --all over {GOALS} goal files ({args.history} iterations, {size:,} bytes each): "
              f"median {statistics.median(times):.2f} s wall, {statistics.median(cpu):.2f} s CPU, "
              f"min {min(times):.2f} s wall over {args.runs} runs "
              f"(importing the CLI alone: {startup:.2f} s)")


if __name__ == "__main__":
    main()
