"""The SessionStart hook over many goals on disk, run as hooks/hooks.json starts it, beside bare Python.

    python benchmarks/bench_session_start.py [--quick] [--json]

A home of 1,001 goal files (15 iterations of real evidence each; a few open in the project, the rest
elsewhere and finished) with its index fresh, and a new session starting in the project: the hook
names the project's open goals. Timed interleaved with ``python -c pass`` (median of 15 each; 5 with
``--quick``): ≤ 3× bare Python.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hooks import environment, hook_command, payload, timed  # noqa: E402
from common import Row, report  # noqa: E402
from corpus import many_goals, project, real_evidence  # noqa: E402

GOALS = 1_001


def main(argv: list[str]) -> int:
    runs = 5 if "--quick" in argv else 15
    work = Path(tempfile.mkdtemp(prefix="bench-session-start-"))
    try:
        root = project(work / "project")
        os.environ["GOAL_CONVERGENCE_HOME"] = str(work / "scratch-home")  # the evidence run's census, kept apart
        home = work / "home"
        many_goals(home, root, real_evidence(root), GOALS, 15)
        start, env = hook_command("session-start"), environment(home, work)
        new_session = payload("SessionStart", "s-new", root, source="startup")
        timed(start, new_session, env)  # the index written fresh, as every later start finds it
        pairs = [(timed(start, new_session, env), timed([sys.executable, "-c", "pass"], b"", os.environ.copy()))
                 for _ in range(runs)]
        hook, bare = statistics.median(h[0] for h, _ in pairs), statistics.median(b[0] for _, b in pairs)
        out = pairs[-1][0][1]
        assert b"open goal" in out, out
        rows = [Row(f"SessionStart hook, a new session in a project with open goals, {GOALS:,} goal files",
                    f"{hook:.0f} ms", f"python -c pass: {bare:.0f} ms", "≤ 3× bare Python", hook <= 3 * bare,
                    round(hook / bare, 2))]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(rows, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
