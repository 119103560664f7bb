"""The goal store at scale: `goal list` over 10,000 goal files, and one goal's file over 1,000 iterations.

    python benchmarks/bench_store.py [--quick] [--json]

- `goal list` and `goal list --all --json` (`python -m goal_convergence`) over 10,000 goal files of
  15 iterations of real evidence each (see corpus.py), the index fresh: <= 1 s and <= 150 MB peak
  RSS, beside `python3 -c pass` measured in the same run, interleaved.
- The seal (system/seal.py) on a goal of 1,000 iterations: a write (the store's `update`) and a
  read of the changed file by another process's store, each as a ratio to the same without the seal.
- One goal's file at 15, 100 and 1,000 iterations of the same real evidence: it grows by a small,
  bounded record per iteration (the bytes an iteration adds from 100 to 1,000 no more than from 15
  to 100, and under 4 KB), beside the evidence that iteration ran (kept in its side file).

``--quick`` uses 1,000 goals and 200 iterations.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, report  # noqa: E402
from corpus import REPO, goal_with_history, many_goals, project, real_evidence  # noqa: E402

from goal_convergence.models import Goal  # noqa: E402
from goal_convergence.storage import evidence_files  # noqa: E402
from goal_convergence.storage.store import Store  # noqa: E402
from goal_convergence.system import seal  # noqa: E402

# Runs a command and prints its wall time and peak RSS: a fresh parent, so RUSAGE_CHILDREN is that command's alone.
MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, check=True)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, len(done.stdout))
"""


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and bytes printed by ``cmd``."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], env=env, capture_output=True, text=True, check=True)
    wall, rss_kb, printed = out.stdout.split()
    return float(wall), int(rss_kb) / 1024, int(printed)


def goal_list(work: Path, total: int, runs: int) -> list[Row]:
    root = project(work / "project")
    evidence = real_evidence(root)
    home = work / "home"
    many_goals(home, root, evidence, total, 15)
    env = {**os.environ, "GOAL_CONVERGENCE_HOME": str(home), "PYTHONPATH": str(REPO)}
    goal = [sys.executable, "-m", "goal_convergence"]
    commands = {"bare": [sys.executable, "-c", "pass"], "list": [*goal, "list"],
                "json": [*goal, "list", "--all", "--json"]}
    # interleaved, so that a change in the machine's load falls on all alike
    timed = [{name: run(cmd, env) for name, cmd in commands.items()} for _ in range(runs)]
    out = subprocess.run(commands["json"], env=env, capture_output=True, text=True, check=True)
    assert len(json.loads(out.stdout)) == total
    wall = {name: statistics.median(t[name][0] for t in timed) for name in commands}
    rss = {name: max(t[name][1] for t in timed) for name in commands}
    size = sum(p.stat().st_size for p in (home / "goals").glob("goal-*.json")) // total
    files = f"{total:,} goal files ({size // 1024} KB each, 15 iterations)"
    bare = f"python3 -c pass: {wall['bare'] * 1000:.0f} ms"
    rows = []
    for name, what in (("list", f"`goal list`, {files}"), ("json", f"`goal list --all --json`, {files}")):
        rows.append(Row(what, f"{wall[name]:.2f} s", bare, "≤ 1 s", wall[name] <= 1.0,
                        round(wall[name] / wall["bare"], 2)))
        rows.append(Row(what + ", peak RSS", f"{rss[name]:.0f} MB", f"python3 -c pass: {rss['bare']:.0f} MB",
                        "≤ 150 MB", rss[name] <= 150, round(rss[name] / rss["bare"], 2)))
    return rows


def growth(work: Path, long: int) -> list[Row]:
    root = project(work / "project-growth")
    evidence = real_evidence(root)
    sizes = {}
    for count in (15, 100, long):
        home = work / f"growth-{count}"
        goal = goal_with_history(home, root, evidence, count, session=None)
        sizes[count] = Store(home).path_for(type(goal), goal.goal_id).stat().st_size
    early = (sizes[100] - sizes[15]) / 85
    late = (sizes[long] - sizes[100]) / (long - 100)
    side = len(json.dumps({k: getattr(evidence, k) for k in ("output_head", "output_tail", "failure_lines")}))
    ok = late <= 1.05 * early and late < 4096 and side > evidence_files.INLINE_CHARS
    return [Row(f"goal file, one goal at 15 / 100 / {long:,} iterations of real evidence",
                f"{sizes[15] // 1024} KB / {sizes[100] // 1024} KB / {sizes[long] // 1024} KB; "
                f"{late:.0f} B per iteration past 100",
                f"{early:.0f} B per iteration from 15 to 100; each iteration's evidence ({side // 1024} KB) beside it",
                "a small, bounded record per iteration (< 4 KB, not growing)", ok, round(late / early, 2))]


def _unsealed() -> dict:
    """seal.py's entry points as the store calls them, doing nothing: the store as it was before the seal."""
    return {"seal": lambda root, name, doc, with_key=None, extra=None: seal.dumps(doc),
            "write_terms": lambda root, goal_id, doc: None, "retire": lambda root, name: None,
            "goal_problem": lambda root, goal_id, text, doc: doc.pop(seal.FIELD, None) and None}


def seal_cost(work: Path, long: int, runs: int) -> list[Row]:
    root = project(work / "project-seal")
    evidence = real_evidence(root)
    real = {name: getattr(seal, name) for name in _unsealed()}
    homes = {True: work / "sealed-home", False: work / "unsealed-home"}  # the same goal, with and without

    def use(sealed: bool) -> None:
        for name, value in (real if sealed else _unsealed()).items():
            setattr(seal, name, value)

    goals = {}
    for sealed, home in homes.items():
        use(sealed)
        goals[sealed] = goal_with_history(home, root, evidence, long, session=None).goal_id
    stores = {sealed: Store(home) for sealed, home in homes.items()}

    def write(sealed: bool) -> float:
        use(sealed)
        gc.collect()  # each call from a collected heap: a collection's pause falls on neither side by turn
        started = time.perf_counter()
        stores[sealed].update(Goal, goals[sealed], lambda g: setattr(g.spent, "active_seconds", g.spent.active_seconds + 1))
        return time.perf_counter() - started

    def read(sealed: bool) -> float:
        use(sealed)
        stores[sealed].path_for(Goal, goals[sealed]).touch()  # changed since any store read it: checked again
        gc.collect()
        started = time.perf_counter()
        Store(homes[sealed]).load(Goal, goals[sealed])
        return time.perf_counter() - started

    timed: dict[str, list[float]] = {"write": [], "write0": [], "read": [], "read0": []}
    for _ in range(runs * 4):  # interleaved, so that a change in the machine's load falls on both alike
        for sealed in (True, False):
            timed["write" if sealed else "write0"].append(write(sealed))
            timed["read" if sealed else "read0"].append(read(sealed))
    use(True)
    assert Store(homes[True]).load(Goal, goals[True]).tampered is None
    med = {k: statistics.median(v) * 1000 for k, v in timed.items()}
    size = stores[True].path_for(Goal, goals[True]).stat().st_size // 1024
    return [Row(f"{what} of a goal of {long:,} iterations ({size} KB), sealed", f"{med[key]:.1f} ms",
                f"without the seal: {med[key + '0']:.1f} ms", "≤ 1.25× without the seal",
                med[key] <= 1.25 * med[key + "0"], round(med[key] / med[key + "0"], 2))
            for what, key in (("a write (store.update)", "write"), ("a read of the changed file", "read"))]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    total, long, runs = (1_000, 200, 3) if quick else (10_000, 1_000, 5)
    work = Path(tempfile.mkdtemp(prefix="bench-store-"))
    os.environ["GOAL_CONVERGENCE_HOME"] = str(work / "scratch-home")
    try:
        started = time.perf_counter()
        rows = goal_list(work, total, runs) + seal_cost(work, long, runs) + growth(work, long)
        print(f"bench_store: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return report(rows, argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
