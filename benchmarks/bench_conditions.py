"""The condition runner's figures: parallelism, memory under a flood of output, and kill time.

    python benchmarks/bench_conditions.py

Targets (issue 3):
1. four conditions of `sleep 1` take <= 1.25 s of wall time (one `sleep 1` alone is measured in
   the same run as the baseline);
2. a condition printing 200 MB keeps the runner's peak RSS <= 100 MB (measured in a fresh Python
   process with getrusage, beside its RSS before the run) and its stored evidence small;
3. a condition whose grandchild ignores SIGTERM and sleeps, with a 1 s timeout, is gone, all of
   it, within timeout + 2 s.
Exits 1 if a target is missed.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from goal_convergence.conditions import run_condition, run_conditions  # noqa: E402
from goal_convergence.models import StoppingCondition  # noqa: E402

FLOOD_BYTES = 200_000_000


def parallel_sleeps(root: Path) -> bool:
    def wall(n: int) -> float:
        start = time.monotonic()
        run_conditions([StoppingCondition(type="test_pass", command="sleep 1")] * n, root)
        return time.monotonic() - start

    one = wall(1)
    four = wall(4)
    print(f"1. four `sleep 1` conditions: {four:.3f} s wall (one alone: {one:.3f} s, ratio {four / one:.2f}); "
          f"target <= 1.25 s")
    return four <= 1.25


def flood(root: Path) -> bool:
    script = textwrap.dedent(f"""
        import json, resource, sys, time
        from pathlib import Path
        from goal_convergence.conditions import run_condition
        from goal_convergence.models import StoppingCondition
        line = "tests/test_module.py::test_case_with_a_fairly_long_name[param-7] PASSED          [ 42%]"
        command = f"yes '{{line}}' | head -c {FLOOD_BYTES}; echo; echo 'FAILED tests/test_end.py::test_last'; exit 1"
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.monotonic()
        e = run_condition(StoppingCondition(type="test_pass", command=command), 0, Path(sys.argv[1]))
        took = time.monotonic() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({{"before_kb": before, "peak_kb": peak, "seconds": took, "evidence": e.dump()}}))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    if done.returncode != 0:
        print("2. flood: the measuring process failed:\n" + done.stderr)
        return False
    report = json.loads(done.stdout)
    e = report["evidence"]
    peak_mb, before_mb = report["peak_kb"] / 1024, report["before_kb"] / 1024
    stored = len(json.dumps(e))
    print(f"2. 200 MB of output ({e['outputBytes']:,} bytes read in {report['seconds']:.2f} s, "
          f"{e['outputBytes'] / report['seconds'] / 1e6:.0f} MB/s): runner peak RSS {peak_mb:.1f} MB "
          f"(before the run {before_mb:.1f} MB, grew {peak_mb - before_mb:.1f} MB); target <= 100 MB. "
          f"Stored evidence {stored:,} bytes as JSON ({len(e['outputHead'])} + {len(e['outputTail'])} chars of "
          f"head + tail, {len(e['failureLines'])} failure line(s): {e['failureLines'][:1]})")
    return peak_mb <= 100 and e["outputBytes"] > FLOOD_BYTES and stored < 50_000


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie waiting for a reaper that never comes (PID 1 in some containers) has ended
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def stubborn_grandchild(root: Path) -> bool:
    timeout = 1.0
    command = "sh -c 'trap \"\" TERM; echo $$ > grandchild.pid; exec sleep 600' & wait"
    start = time.monotonic()
    e = run_condition(StoppingCondition(type="test_pass", command=command, timeout_seconds=timeout), 0, root)
    returned = time.monotonic() - start
    pid = int((root / "grandchild.pid").read_text())
    while not _gone(pid) and time.monotonic() - start < 10:
        time.sleep(0.005)
    gone_after = time.monotonic() - start
    print(f"3. grandchild ignoring SIGTERM, timeout {timeout:g} s: runner returned after {returned:.3f} s, "
          f"grandchild gone after {gone_after:.3f} s (timed out: {e.timed_out}); target <= {timeout + 2:g} s")
    return e.timed_out and _gone(pid) and gone_after <= timeout + 2


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = [parallel_sleeps(root), flood(root), stubborn_grandchild(root)]
    missed = results.count(False)
    print("all targets met" if not missed else f"{missed} target(s) missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
