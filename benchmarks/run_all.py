"""Run every benchmark, print one table, and write it into the documentation (docs/performance.md).

    python benchmarks/run_all.py [--quick]

Each ``bench_*.py`` runs in its own process (so one's memory does not count against another)
with ``--json``; ``--quick`` is passed on for smaller inputs and leaves the page alone. A full run
whose every benchmark printed its figures writes the page (page.py) from its table, with the machine
and the date. Exits 1 when any target is missed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import page  # noqa: E402
from common import Row, rows_from_json, table  # noqa: E402


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    quick = "--quick" in argv
    started, load_before = time.time(), os.getloadavg()[0]
    rows: list[Row] = []
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, str(script), "--json", *(["--quick"] if quick else [])],
                              capture_output=True, text=True)
        try:
            rows += rows_from_json(done.stdout)
        except (ValueError, TypeError, IndexError):
            failed.append(script.name)
            print(f"{script.name} printed no figures (exit {done.returncode}):\n{done.stderr[-2000:]}", file=sys.stderr)
    print(table(rows))
    if failed or quick:
        print("docs/performance.md left as it was: " + (f"{', '.join(failed)} printed no figures" if failed
                                                          else "--quick figures are not the page's"), file=sys.stderr)
    else:
        page.write(table(rows), started, load_before)
    return 1 if failed or not all(r.met for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
