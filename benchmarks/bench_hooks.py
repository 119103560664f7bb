"""How fast the Claude Code hooks answer (the transcript meter has bench_transcript.py).

    python benchmarks/bench_hooks.py [--runs 30]

Targets (issue 6): the Stop hook with no goal for the session and 1,000 goal files on disk answers
in <= 60 ms median wall time, SessionStart in <= 80 ms, both measured beside `python -c pass` of
the same interpreter in the same run; that fast path imports neither anthropic, jsonschema nor
pydantic. The hooks run
exactly as hooks/hooks.json starts them (the launcher with python3 -S), with this interpreter. Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from goal_convergence import goals  # noqa: E402
from goal_convergence.models import Goal, new_id  # noqa: E402
from goal_convergence.store import Store  # noqa: E402

GOALS = 1000
HEAVY = ("anthropic", "jsonschema", "pydantic")


def make_goals(home: Path, project: Path) -> str:
    """1,000 goal files (copies of one real goal under new ids), three of them open in ``project``;
    returns the session id one active goal is bound to."""
    store = Store(home)
    spec = goals.GoalSpec(objective="make the tests pass", project=project, checks=["true"],
                          oracle_provider="conditions", session_id="bench-bound-session")
    first = goals.new_goal(store, spec).dump()
    folder = home / "goals"
    for i in range(GOALS - 1):
        doc = {**first, "goalId": new_id("goal-"), "sessionId": f"session-{i}",
               "state": "paused" if i < 2 else "converged",
               "projectRoot": str(project) if i < 2 else f"/elsewhere/p{i}"}
        (folder / f"{doc['goalId']}.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    store.iter_all(Goal)  # validates every file and writes the index, as the first hook would
    return "bench-bound-session"


def hook_command(event: str) -> list[str]:
    """The command hooks/hooks.json runs for ``event``, with this interpreter as python3."""
    config = json.loads((REPO / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    for groups in config.values():
        for hook in (h for g in groups for h in g["hooks"]):
            if hook["args"][-1] == event:
                return [sys.executable, *(a.replace("${CLAUDE_PLUGIN_ROOT}", str(REPO)) for a in hook["args"])]
    raise SystemExit(f"hooks/hooks.json has no hook for {event}")


def wall(cmd: list[str], stdin: bytes, env: dict[str, str], runs: int) -> tuple[float, bytes]:
    times, out = [], b""
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=True).stdout
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), out


def imported_modules(cmd: list[str], stdin: bytes, env: dict[str, str]) -> set[str]:
    done = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], input=stdin, env=env, capture_output=True, check=True)
    return {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line}


def hooks(workdir: Path, runs: int) -> list[tuple[str, float, float]]:
    home, project = workdir / "home", workdir / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    bound = make_goals(home, project)
    env = {**os.environ, "GOAL_CONVERGENCE_HOME": str(home), "CLAUDE_PLUGIN_DATA": str(workdir / "data"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    python = sys.executable
    baseline, _ = wall([python, "-c", "pass"], b"", env, runs)
    print(f"python -c pass ({python}): median {baseline:.1f} ms over {runs} runs")
    results = []
    for event, target, source in (("stop", 60, None), ("session-start", 80, "startup")):
        payload = {"session_id": "a-session-with-no-goal", "transcript_path": str(workdir / "t.jsonl"),
                   "cwd": str(project), "hook_event_name": event, **({"source": source} if source else {})}
        cmd = hook_command(event)
        median, out = wall(cmd, json.dumps(payload).encode(), env, runs)
        heavy = set(HEAVY) & imported_modules(cmd, json.dumps(payload).encode(), env)
        shown = f"; answer: {len(out)} bytes" if out else "; answer: nothing"
        print(f"{event} hook, no goal for the session, {GOALS} goal files: median {median:.1f} ms "
              f"(python -c pass {baseline:.1f} ms, difference {median - baseline:+.1f} ms; target <= {target} ms)"
              f"{shown}; heavy imports: {', '.join(sorted(heavy)) or 'none'}")
        results.append((f"{event} hook", median, target))
        results.append((f"{event} hook heavy imports", float(len(heavy)), 0))
    payload = {"session_id": bound, "transcript_path": str(workdir / "t.jsonl"), "cwd": str(project),
               "hook_event_name": "SessionEnd", "reason": "other"}
    median, _ = wall(hook_command("session-end"), json.dumps(payload).encode(), env,
                     max(3, runs // 5))
    print(f"session-end hook with a goal bound to the session (slow path, records spend): median {median:.1f} ms "
          f"(Claude Code gives all SessionEnd hooks 1500 ms)")
    results.append(("session-end hook, bound goal", median, 1000))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    workdir = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    try:
        results = hooks(workdir, runs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    missed = [f"{name}: {value:.1f} > {target}" for name, value, target in results if value > target]
    print("all targets met" if not missed else "MISSED: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
