"""The condition runner on a flood of realistic pytest output, beside a plain Python pipe reader.

    python benchmarks/bench_conditions.py [--quick] [--json]

The output (``pytest_output.py``: ``pytest -v -s`` of 20,000 tests, 2,000 failing, among captured
logs that say "error" and "failed" in passing, a warning every 50 lines) is written to a file
first and printed by ``cat``, so the producer costs both sides the same and little. Rows:

1. a condition printing 1 GB of it (100 MB with ``--quick``): the runner's wall time beside a plain
   Python reader of the same command's pipe (1 MB ``os.read`` calls, nothing else), ≤ 3×; each side a
   fresh process, timed once it is ready to read (the runner's import, once per process, shown apart);
2. the runner's peak RSS (a fresh process, getrusage) ≤ 100 MB, beside the plain reader's;
3. the runner's evidence names every failing test of the run;
4. four conditions of ``sleep 1`` take ≤ 1.25× one alone (the conditions run at once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, report  # noqa: E402

from goal_convergence.checks.conditions import run_conditions  # noqa: E402
from goal_convergence.models import StoppingCondition  # noqa: E402

FAILURES = 2000

# Both sides are a fresh process, timed (wall and CPU) from when it is ready to read the command's output to
# when it has read all of it: the plain reader once it has imported subprocess, the runner once it has imported
# the runner's modules. That import (pydantic, the models) is paid once per process, not per condition: it is
# measured apart and shown beside the figure.
_MEASURE = textwrap.dedent("""
    import json, os, resource, subprocess, sys, time
    from pathlib import Path

    def cpu():
        me = resource.getrusage(resource.RUSAGE_SELF)
        return me.ru_utime + me.ru_stime

    command, how = sys.argv[1], sys.argv[2]
    start = time.perf_counter()
    if how != "plain":
        from goal_convergence.checks.conditions import run_condition
        from goal_convergence.models import StoppingCondition
    imported = time.perf_counter() - start
    start, cpu_start = time.perf_counter(), cpu()
    if how == "plain":
        proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        total = 0
        while chunk := os.read(proc.stdout.fileno(), 1 << 20):
            total += len(chunk)
        proc.wait()
        found = {"bytes": total}
    else:
        e = run_condition(StoppingCondition(type="test_pass", command=command), 0, Path.cwd())
        found = {"bytes": e.output_bytes, "failure_lines": e.failure_lines,
                 "census": e.census.summary if e.census else None}
    took, used = time.perf_counter() - start, cpu() - cpu_start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": took, "cpu": used, "import": imported, "rss_mb": rss, **found}))
""")


def measure(command: str, how: str, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _MEASURE, command, how], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent)}, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"measuring {how} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def flood(root: Path, size: int) -> list[Row]:
    log = root / "pytest.log"
    with open(log, "wb") as fh:
        subprocess.run([sys.executable, str(HERE / "pytest_output.py"), str(size), str(FAILURES)], stdout=fh, check=True)
    command = f"cat {log}; exit 1"
    measure(command, "plain", root)  # the file into the page cache, for both sides alike
    plain = measure(command, "plain", root)
    ours = measure(command, "runner", root)
    ratio = ours["seconds"] / plain["seconds"]
    mb = f"{size / 1e9:g} GB" if size >= 1e9 else f"{size / 1e6:g} MB"
    failing = {line.split(" ")[1] for line in ours["failure_lines"] if line.startswith("FAILED ")}
    return [
        Row(f"a condition printing {mb} of pytest output (warning every 50 lines, {FAILURES:,} failures)",
            f"{ours['seconds']:.2f} s ({ours['bytes'] / ours['seconds'] / 1e6:.0f} MB/s; CPU {ours['cpu']:.2f} s; "
            f"the runner's import before it, once per process: {ours['import']:.2f} s)",
            f"plain Python pipe reader: {plain['seconds']:.2f} s (CPU {plain['cpu']:.2f} s)", "≤ 3× the plain reader",
            ratio <= 3, ratio),
        Row(f"peak RSS reading it ({mb})", f"{ours['rss_mb']:.0f} MB", f"plain reader: {plain['rss_mb']:.0f} MB",
            "≤ 100 MB", ours["rss_mb"] <= 100),
        Row(f"failing tests named in the evidence ({mb})", f"{len(failing):,}", f"failing in the run: {FAILURES:,}",
            "all of them", len(failing) == FAILURES),
    ]


def parallel_sleeps(root: Path) -> Row:
    def wall(n: int) -> float:
        start = time.monotonic()
        run_conditions([StoppingCondition(type="test_pass", command="sleep 1")] * n, root)
        return time.monotonic() - start

    one, four = wall(1), wall(4)
    return Row("four conditions of `sleep 1`", f"{four:.2f} s", f"one alone: {one:.2f} s", "≤ 1.25× one alone",
               four <= 1.25 * one, four / one)


def main(argv: list[str]) -> int:
    size = 100_000_000 if "--quick" in argv else 1_000_000_000
    with tempfile.TemporaryDirectory(prefix="bench-conditions-") as tmp:
        rows = flood(Path(tmp), size) + [parallel_sleeps(Path(tmp))]
    return report(rows, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
