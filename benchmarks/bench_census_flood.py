"""The test census on output in which every test id is different, beside a plain Python pipe reader.

    python benchmarks/bench_census_flood.py [--quick] [--json]

Writes `pytest -v`-like output to a file first (printed by ``cat``, so the producer costs both sides
the same): 1 GB holding 10 million distinct test ids, one line each (``--quick``: 100 MB, 1 million),
then pytest's summary line. One test of the start run is left out, past the ids the census keeps by
name (checks/census.py, MAX_IDS). Rows, each side a fresh process timed once it is ready to read (the plain
reader the median of three):

1. the condition runner reading it (census included), beside a plain reader of the same pipe: ≤ 3×; beside
   it, the plain reader that also takes each line's test name with the census's regular expression
   (checks/flood.py), the least the census can do past its bound while its count stays exact;
2. the runner's peak RSS (getrusage), the start run's kept ids and the comparison included: ≤ 100 MB;
3. the integrity guard's comparison with a start census that named 50,000 tests (every 200th, and the
   missing one), as a goal's baseline keeps them: it names the missing test, and no other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, report  # noqa: E402

_MEASURE = textwrap.dedent("""
    import json, os, resource, subprocess, sys, time
    from pathlib import Path

    command, how, count, missing = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if how == "names":  # each line's test name, as the census takes them past its bound: nothing else
        from goal_convergence.checks.flood import names
    if how == "runner":
        from goal_convergence.checks.census import _pytest_id
        from goal_convergence.checks.conditions import run_condition
        from goal_convergence.guard.integrity import compare
        from goal_convergence.models import Census, StoppingCondition
        sys.path.insert(0, sys.argv[5])
        from bench_census_flood import test_id
    start = time.perf_counter()
    if how in ("plain", "names"):
        proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        total, left = 0, b"\\n"
        while chunk := os.read(proc.stdout.fileno(), 1 << 20):
            total += len(chunk)
            if how == "names":
                cut = chunk.rfind(b"\\n")
                if cut >= 0:
                    names(left + chunk[:cut])
                left = b"\\n" + chunk[cut + 1:] if cut >= 0 else left + chunk
        proc.wait()
        found = {"bytes": total}
    else:
        # The start run's ids as a goal's baseline keeps them: the first of its tests, by name (every 200th
        # here, so that they lie all along the run), asked for only once the run names more than the bound.
        kept = {_pytest_id(test_id(i)): "passed" for i in [*range(0, count, 200), missing]}
        e = run_condition(StoppingCondition(type="test_pass", command=command), 0, Path.cwd(), expected=kept.keys)
        found = {"bytes": e.output_bytes, "census": e.census.summary if e.census else None,
                 "ids": e.census.ids if e.census else 0}
    took = time.perf_counter() - start
    if how == "runner":
        began = Census(runner="pytest", ran=count, passed=count, ids=count)
        issues = compare(0, command, began, kept, e.census)
        found["gone"] = [i.subject for i in issues if i.kind == "test-gone"]
        found["missing"] = _pytest_id(test_id(missing))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": took, "rss_mb": rss, **found}))
""")


def test_id(i: int) -> str:
    return f"tests/unit/test_module_{i % 1000:03d}.py::TestBehaviour{i % 7}::test_case_{i:08d}[param-{i % 13}]"


def write_output(path: Path, count: int, missing: int) -> None:
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as fh:
        for start in range(0, count, 100_000):
            fh.write("".join(f"{test_id(i)} PASSED{' ' * 9}[{i * 100 // count:3d}%]\n"
                             for i in range(start, min(count, start + 100_000)) if i != missing))
        fh.write(f"{'=' * 30} {count - 1} passed in 1234.56s {'=' * 30}\n")


def measure(command: str, how: str, count: int, missing: int, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _MEASURE, command, how, str(count), str(missing), str(HERE)],
                          capture_output=True, text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(HERE.parent)},
                          timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"measuring {how} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    count = 1_000_000 if "--quick" in argv else 10_000_000
    missing = count * 3 // 4 + 1  # far past the ids kept by name
    with tempfile.TemporaryDirectory(prefix="bench-census-") as tmp:
        log = Path(tmp) / "pytest.log"
        write_output(log, count, missing)
        size = log.stat().st_size
        command = f"cat {log}"
        measure(command, "plain", count, missing, Path(tmp))  # the file into the page cache, for both sides
        # The median of three: a plain read takes about a second, and one slowed by the machine would flatter the
        # ratio (0.92 s in one run, 2.18 s in the next, on the same file).
        plain = sorted((measure(command, "plain", count, missing, Path(tmp)) for _ in range(3)),
                       key=lambda found: found["seconds"])[1]
        ours = measure(command, "runner", count, missing, Path(tmp))
        floor = measure(command, "names", count, missing, Path(tmp))
    ratio = ours["seconds"] / plain["seconds"]
    what = f"{size / 1e9:.2g} GB of `pytest -v` output, {count:,} distinct test ids"
    return report([
        Row(f"the condition runner reading {what}", f"{ours['seconds']:.2f} s ({ours['census']})",
            f"plain Python pipe reader: {plain['seconds']:.2f} s (the same, taking each line's test name and "
            f"nothing else: {floor['seconds'] / plain['seconds']:.1f}×)", "≤ 3× the plain reader", ratio <= 3,
            ratio),
        Row(f"peak RSS reading it and comparing it with the start ({what})", f"{ours['rss_mb']:.0f} MB",
            f"plain reader: {plain['rss_mb']:.0f} MB", "≤ 100 MB", ours["rss_mb"] <= 100),
        Row(f"start tests named missing ({what}; one left out, past the ids kept by name)",
            ", ".join(ours["gone"]) or "none", f"left out: {ours['missing']}", "that one, and no other",
            ours["gone"] == [ours["missing"]]),
    ], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
