"""Parallel attempts: the wall time of `goal run --attempts 4` beside one attempt, the same scripted maker.

    python benchmarks/bench_attempts.py [--quick] [--json]

A git project whose check (`sh check.sh`) fails until answer.txt says "right"; the maker is a shell script that
works for a while (a sleep: a maker's turn is mostly waiting for a model) and fixes the bug at its second turn,
in every attempt. Each run is the real `goal` command in a new Python, with the conditions as the judge, timed
from start to exit: the baseline is `--attempts 1` (two turns in the project itself), the figure `--attempts 4`
(four worktrees made and removed, the first iterations of four attempts checked one at a time, the winner's
changes applied, three makers killed). The issue's target: at most 1.3 times the single attempt. The median of
three runs of each, 5 s a turn (one run of 2 s turns with ``--quick``).

The attempts' iterations are checked one at a time (one pending iteration, one budget), so what the race adds
is about the checking of the others' iterations that the winner waits behind: small beside a model's turn, but
not beside a turn as short as the checks (measured on a loaded 2-CPU machine: 1.05x at 5 s turns, 1.38x at 2 s).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, report  # noqa: E402

TARGET = 1.3
MAKER = r"""
k=$(basename "$PWD")
n=$(( $(cat "$STATE/$k.turns" 2>/dev/null || echo 0) + 1 ))
echo $n > "$STATE/$k.turns"
sleep "$TURN_SECONDS"
if [ "$n" -ge 2 ]; then echo right > answer.txt; else echo "turn $n" >> notes.txt; fi
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
                        "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"})


def _run(root: Path, attempts: int, turn: float) -> float:
    """Seconds one `goal run --attempts N` takes on a fresh project and goal home, from start to exit."""
    project, home, state = root / f"p{attempts}", root / f"h{attempts}", root / f"s{attempts}"
    for d in (project, state):
        d.mkdir()
    (project / "answer.txt").write_text("wrong\n")
    (project / "check.sh").write_text("grep -qx right answer.txt\n")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "the bug")
    (root / "maker.sh").write_text(MAKER)
    env = {**os.environ, "GOAL_CONVERGENCE_HOME": str(home), "STATE": str(state), "TURN_SECONDS": str(turn),
           "PYTHONPATH": str(HERE.parent)}
    goal = [sys.executable, "-m", "goal_convergence"]
    made = subprocess.run([*goal, "new", "make answer.txt right", "--check", "sh check.sh", "--oracle", "conditions",
                           "--json"], cwd=project, env=env, check=True, capture_output=True, text=True)
    gid = json.loads(made.stdout)["goalId"]
    start = time.perf_counter()
    ran = subprocess.run([*goal, "run", gid, "--attempts", str(attempts), "--maker-cmd", f"sh {root / 'maker.sh'}"],
                         cwd=project, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if ran.returncode != 0 or (project / "answer.txt").read_text() != "right\n":
        raise SystemExit(f"--attempts {attempts} did not converge: {ran.stdout}{ran.stderr}")
    return seconds


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    runs, turn = (1, 2.0) if quick else (3, 5.0)
    one, four = [], []
    with tempfile.TemporaryDirectory(prefix="bench-attempts-") as tmp:
        for i in range(runs):  # alternated, so a machine that slows down slows both
            for n, into in ((1, one), (4, four)):
                root = Path(tmp) / f"{n}-{i}"
                root.mkdir()
                into.append(_run(root, n, turn))
    base, figure = statistics.median(one), statistics.median(four)
    ratio = figure / base
    rows = [Row(what=f"`goal run --attempts 4`, scripted maker ({turn:g} s a turn, fixes at its 2nd), conditions judge",
                figure=f"{figure:.2f} s", baseline=f"`--attempts 1`: {base:.2f} s", target=f"≤ {TARGET}× one attempt",
                met=ratio <= TARGET, ratio=ratio)]
    return report(rows, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
