"""How every benchmark reports: one row per figure, beside a baseline measured in the same run.

A benchmark script builds ``Row``s and ends with ``sys.exit(report(rows))``. Run alone it prints
its own table; ``run_all.py`` runs every ``bench_*.py`` with ``--json`` and prints one table, which
it writes into docs/performance.md. Targets are ratios to the baseline (or bounds on size), never absolute milliseconds,
so a loaded machine slows both sides alike.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass


@dataclass
class Row:
    what: str  # the scenario, with its realistic input ("Stop hook, no goal, 10,000 goal files")
    figure: str  # what was measured, with its unit ("41 ms")
    baseline: str  # what it is compared with, measured in the same run ("python3 -c pass: 19 ms")
    target: str  # the target ("≤ 3× bare Python")
    met: bool
    ratio: float | None = None  # figure / baseline, when that is the target's measure


def table(rows: list[Row]) -> str:
    lines = ["| what | figure | baseline | ratio | target | met |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r.ratio:.2f}×" if r.ratio is not None else ""
        lines.append(f"| {r.what} | {r.figure} | {r.baseline} | {ratio} | {r.target} | {'yes' if r.met else '**no**'} |")
    return "\n".join(lines)


def report(rows: list[Row], argv: list[str] | None = None) -> int:
    """Print the rows (a table, or JSON with ``--json``); the exit code is 1 when a target is missed."""
    argv = sys.argv[1:] if argv is None else argv
    if "--json" in argv:
        print(json.dumps([asdict(r) for r in rows]))
    else:
        print(table(rows))
    return 0 if all(r.met for r in rows) else 1


def rows_from_json(text: str) -> list[Row]:
    return [Row(**r) for r in json.loads(text.strip().splitlines()[-1])]
