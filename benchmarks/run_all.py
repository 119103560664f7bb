"""Run every benchmark and print one table (the one in the README).

    python benchmarks/run_all.py [--quick]

Each ``bench_*.py`` runs in its own process (so one's memory does not count against another)
with ``--json``; ``--quick`` is passed on for smaller inputs. Exits 1 when any target is missed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, rows_from_json, table  # noqa: E402


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    extra = ["--quick"] if "--quick" in argv else []
    rows: list[Row] = []
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, str(script), "--json", *extra], capture_output=True, text=True)
        try:
            rows += rows_from_json(done.stdout)
        except (ValueError, TypeError, IndexError):
            failed.append(script.name)
            print(f"{script.name} printed no figures (exit {done.returncode}):\n{done.stderr[-2000:]}", file=sys.stderr)
    print(table(rows))
    return 1 if failed or not all(r.met for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
