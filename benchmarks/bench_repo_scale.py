"""What an iteration and `goal new` cost as the repository grows, beside git's own work on the same tree.

    python benchmarks/bench_repo_scale.py [--runs 5] [--quick | --sizes 1000000] [--json]

Generates, once, in a temp folder, committed git repositories of 10, 50,000 and 200,000 small Python
files (``--quick``: 10 and 20,000; ``--sizes``: 10 and those, a monorepo's 1,000,000 takes about 4 GB of disk
and minutes to check out), a test file every 50, and an ignored build/ folder. On each:

1. `goal new` (`--check true --oracle conditions`), the console script as a person runs it;
2. a one-iteration `goal run` of that goal whose `--maker-cmd` appends a line to one tracked file (the
   goal's index of the tree is there from `goal new`, as it is for every iteration after the first);
3. beside them, measured in the same run: `git status --porcelain` after the same edit, and `git ls-files`.

It prints what grows with the repository: a run on the big repository less the same on the 10-file one
(the fixed cost of the process and one condition, quoted on its own), against `git status` (target: at
most 4x), and `goal new` less the small one's, against `git ls-files` (target: at most 10x; beside it, what
`git status` alone costs in ls-files, a floor for any `goal new` that records the tree as it is). Each figure
is the median of --runs, each on a goal of its own, the big and the small repository taken in turn; beside
the times, each process's peak RSS on the big repository (what a Stop hook holds in a monorepo).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, report  # noqa: E402

GOAL = [str(Path(sys.executable).parent / "goal")]
EDIT = "pkg00/mod00/f000001.py"
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@localhost"}


def generate(root: Path, count: int) -> None:
    """A committed repository of ``count`` small modules, 100 a folder, a test file every 50, written by
    ``git fast-import`` and checked out (so the index has the stat data a clone's has)."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    parts = [b"commit refs/heads/main\ncommitter bench <bench@localhost> 1700000000 +0000\ndata 4\ninit\n"]
    for i in range(count):
        folder = f"pkg{i // 5000:02d}/mod{(i // 100) % 50:02d}"
        name = f"test_f{i:06d}.py" if i % 50 == 0 else f"f{i:06d}.py"
        data = f"def f{i}():\n    return {i}\n".encode()
        parts.append(b"M 100644 inline %s/%s\ndata %d\n%s\n" % (folder.encode(), name.encode(), len(data), data))
    parts.append(b"M 100644 inline .gitignore\ndata 7\nbuild/\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(parts), check=True)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=root, check=True)
    subprocess.run(["git", "reset", "-q", "--hard"], cwd=root, check=True, env={**os.environ, **IDENTITY})
    (root / "build").mkdir()
    for i in range(100):
        (root / "build" / f"out{i}.o").write_bytes(b"\0" * 64)


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, bytes, float]:
    """Seconds, standard output and peak RSS (MB) of one process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not the children's maximum
        took = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        return took, out.read(), usage.ru_maxrss / 1024


def one_round(root: Path, env: dict[str, str], n: int) -> dict[str, float]:
    """Seconds of `goal new`, a one-iteration `goal run`, then `git status` and `git ls-files`, on ``root``; the
    peak RSS of the first two."""
    original = (root / EDIT).read_bytes()
    new, out, new_rss = timed([*GOAL, "new", f"bench {n}", "--check", "true", "--oracle", "conditions",
                               "--max-iterations", "1", "--json"], root, env)
    run, _, run_rss = timed([*GOAL, "run", json.loads(out)["goalId"], "--maker-cmd", f"echo '# {n}' >> {EDIT}"],
                            root, env)
    found = {"new": new, "run": run, "new_rss": new_rss, "run_rss": run_rss,
             "status": timed(["git", "status", "--porcelain"], root, env)[0],
             "ls": timed(["git", "ls-files"], root, env)[0]}
    (root / EDIT).write_bytes(original)  # not `git checkout`: the user's index stays as it was
    return found


def measure(big: Path, small: Path, env: dict[str, str], runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Medians of ``one_round`` on the big and the small repository, taken in turn, so that a change in the
    machine's load falls on both alike."""
    rounds = [(one_round(big, env, n), one_round(small, env, n)) for n in range(runs)]
    return tuple({key: statistics.median(r[i][key] for r in rounds) for key in rounds[0][i]}  # type: ignore[return-value]
                 for i in (0, 1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=lambda text: [int(size) for size in text.split(",")],
                        help="the big repositories' numbers of files, comma-separated (default 50000,200000)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([20_000] if args.quick else [50_000, 200_000])
    work = Path(tempfile.mkdtemp(prefix="bench-repo-scale-"))
    env = {**os.environ, "GOAL_CONVERGENCE_HOME": str(work / "home"), "HOME": str(work),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        generate(work / "small", 10)
        time.sleep(3)
        rows = []
        for size in sizes:
            started = time.perf_counter()
            generate(work / f"r{size}", size)
            print(f"{size:,} files generated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            time.sleep(3)  # a checkout of moments ago has every file hashed again (vcs/snapshot.py): not the case here
            rows += rows_for(size, *measure(work / f"r{size}", work / "small", env, args.runs))
            shutil.rmtree(work / f"r{size}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(rows, argv)


def rows_for(size: int, big: dict[str, float], small: dict[str, float]) -> list[Row]:
    grows = big["run"] - small["run"]
    made = big["new"] - small["new"]
    return [
        Row(f"one `goal run` iteration (condition `true`, one file edited), {size:,}-file repository, less the "
            f"same on 10 files ({small['run'] * 1000:.0f} ms, the fixed cost)",
            f"{grows * 1000:.0f} ms (whole run {big['run'] * 1000:.0f} ms, peak RSS {big['run_rss']:.0f} MB)",
            f"git status --porcelain after the edit: {big['status'] * 1000:.0f} ms", "≤ 4× git status",
            grows <= 4 * big["status"], grows / big["status"]),
        Row(f"`goal new`, {size:,}-file repository, less the same on 10 files ({small['new'] * 1000:.0f} ms)",
            f"{made * 1000:.0f} ms (whole {big['new'] * 1000:.0f} ms, peak RSS {big['new_rss']:.0f} MB)",
            f"git ls-files: {big['ls'] * 1000:.0f} ms "
            f"(git status alone, its stat pass and walk: {big['status'] / big['ls']:.1f}×)",
            "≤ 10× git ls-files", made <= 10 * big["ls"], made / big["ls"]),
    ]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
