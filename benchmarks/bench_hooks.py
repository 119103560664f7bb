"""How fast the Claude Code hooks answer, run exactly as hooks/hooks.json starts them (the launcher,
``python3 -S``, this interpreter), beside ``python -c pass`` measured in the same run.

    python benchmarks/bench_hooks.py [--quick] [--json]

- Stop with no goal for the session, in a home of 0 and of 10,000 goal files (15 iterations of real
  evidence each): flat in goal count (<= 1.3x the 0-goal time) and <= 3x bare Python.
- PreToolUse (before every tool call) with no goal for the session, at 10,000 goal files: <= 1.2x the
  Stop above, measured beside it; and for the session that owns a goal (a Bash call parsed, checked
  and let through, the session's process recorded): <= 3x bare Python.
- Any hook right after the index went stale (one goal file rewritten behind the store's back), at
  10,000 goals: <= 1 s.
- SessionEnd with a goal bound, at 10,000 goals: <= 10x bare Python. The hook hands its work to a
  detached child and returns; each child is waited for (outside the timing: this process adopts the
  orphans) before the next run, and the work is checked to have landed.
- Stop with the goal active (``--test true``, conditions oracle) at 15 and at 1,000 iterations of
  history: the 1,000 case <= 1.5x the 15 case. The same with the check failing (``--test false``),
  the stop that repeats all along a goal's life: the loop carries on.

``--quick`` uses 1,000 goals and 200 iterations, and fewer runs.
"""

from __future__ import annotations

import ctypes
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
from goal_convergence.storage.store import Store  # noqa: E402
from goal_convergence.system import index  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


def hook_command(event: str) -> list[str]:
    """The command hooks/hooks.json runs for ``event``, with this interpreter as python3."""
    config = json.loads((REPO / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    for groups in config.values():
        for hook in (h for g in groups for h in g["hooks"]):
            if hook["args"][-1] == event:
                return [sys.executable, *(a.replace("${CLAUDE_PLUGIN_ROOT}", str(REPO)) for a in hook["args"])]
    raise SystemExit(f"hooks/hooks.json has no hook for {event}")


def environment(home: Path, workdir: Path) -> dict[str, str]:
    return {**os.environ, "GOAL_CONVERGENCE_HOME": str(home), "CLAUDE_PLUGIN_DATA": str(workdir / "data"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def timed(cmd: list[str], stdin: bytes, env: dict[str, str], before=None) -> tuple[float, bytes]:
    if before:
        before()
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000, done.stdout


def median(cmd: list[str], stdin: bytes, env: dict[str, str], runs: int, before=None) -> tuple[float, bytes]:
    results = [timed(cmd, stdin, env, before) for _ in range(runs)]
    return statistics.median(t for t, _ in results), results[-1][1]


def payload(event: str, session: str, root: Path, **extra: object) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(root / "no-transcript.jsonl"), "cwd": str(root),
                       "hook_event_name": event, **extra}).encode()


def adopt_orphans() -> None:
    """Become the parent of orphaned descendants (Linux), so that a detached child can be waited for."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans() -> None:
    """Wait for every child left (the runs' own were waited for: what is left are adopted orphans)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    total, long_history, runs = (1_000, 200, 5) if quick else (10_000, 1_000, 15)
    work = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    try:
        return report(measure(work, total, long_history, runs), argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(work: Path, total: int, long_history: int, runs: int) -> list[Row]:
    root = project(work / "project")
    os.environ["GOAL_CONVERGENCE_HOME"] = str(work / "scratch-home")  # the evidence run's census, kept apart
    evidence = real_evidence(root)
    empty, full = work / "empty", work / "full"
    empty.mkdir()
    bound = many_goals(full, root, evidence, total, 15)
    bare, _ = median([sys.executable, "-c", "pass"], b"", os.environ.copy(), runs)
    rows = []
    stop = hook_command("stop")
    no_goal = payload("Stop", "a-session-with-no-goal", root, stop_hook_active=False)
    # interleaved, so that a change in the machine's load falls on both alike
    pairs = [(timed(stop, no_goal, environment(empty, work)), timed(stop, no_goal, environment(full, work)))
             for _ in range(2 * runs)]
    at_zero, at_full = statistics.median(z[0] for z, _ in pairs), statistics.median(f[0] for _, f in pairs)
    out = pairs[-1][1][1]
    assert out == b"", out
    rows.append(Row(f"Stop hook, no goal for the session, {total:,} goal files", f"{at_full:.0f} ms",
                    f"same at 0 goal files: {at_zero:.0f} ms", "≤ 1.3× the 0-goal time", at_full <= 1.3 * at_zero,
                    round(at_full / at_zero, 2)))
    rows.append(Row(f"Stop hook, no goal for the session, {total:,} goal files", f"{at_full:.0f} ms",
                    f"python -c pass: {bare:.0f} ms", "≤ 3× bare Python", at_full <= 3 * bare, round(at_full / bare, 2)))
    rows += pre_tool_use(stop, no_goal, environment(full, work), root, bound, bare, total, runs)

    files = sorted((full / "goals").glob("goal-*.json"))
    victims = iter(files[1:])

    def make_stale() -> None:  # an edit behind the store's back: new size and stamp, the same goal
        path = next(victims)
        path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")

    start = hook_command("session-start")
    fresh, _ = median(start, payload("SessionStart", "s-new", root, source="startup"), environment(full, work), runs)
    stale, out = median(start, payload("SessionStart", "s-new", root, source="startup"), environment(full, work), runs,
                        before=make_stale)
    assert b"open goal" in out, out
    rows.append(Row(f"SessionStart right after the index went stale, {total:,} goal files", f"{stale:.0f} ms",
                    f"with the index fresh: {fresh:.0f} ms", "≤ 1 s", stale <= 1000, round(stale / fresh, 2)))

    adopt_orphans()
    end, _ = median(hook_command("session-end"), payload("SessionEnd", "bench-bound", root, reason="other"),
                    environment(full, work), runs, before=reap_orphans)
    reap_orphans()
    assert index.binding(full, "bench-bound"), "the bound goal must still be bound after SessionEnd"
    assert Store(full).load(Goal, bound).active_since is None, "SessionEnd's detached child must have done its work"
    rows.append(Row(f"SessionEnd with a goal bound, {total:,} goal files", f"{end:.0f} ms", f"python -c pass: {bare:.0f} ms",
                    "≤ 10× bare Python", end <= 10 * bare, round(end / bare, 2)))
    del bound

    for test, ending in (("true", "the loop ends"), ("false", "the loop carries on")):
        stops = [active_stop(work / f"history-{test}-{n}", root, evidence, n, test) for n in (15, long_history)]
        pairs = [(stops[0](), stops[1]()) for _ in range(runs)]  # interleaved, as above
        short, long = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        rows.append(Row(f"Stop hook, goal active (--test {test}, conditions oracle: {ending}), "
                        f"{long_history:,} iterations", f"{long:.0f} ms", f"same at 15 iterations: {short:.0f} ms",
                        "≤ 1.5× the 15-iteration time", long <= 1.5 * short, round(long / short, 2)))
    return rows


def pre_tool_use(stop: list[str], no_goal: bytes, env: dict[str, str], root: Path, bound: str, bare: float, total: int,
                 runs: int) -> list[Row]:
    """PreToolUse beside the no-goal Stop (interleaved), and for the session that owns ``bound``."""
    hook = hook_command("pre-tool-use")
    call = {"tool_name": "Bash", "tool_input": {"command": "cd src && python -m pytest -q tests/ | tail -5"}}
    none = payload("PreToolUse", "a-session-with-no-goal", root, **call)
    pairs = [(timed(hook, none, env), timed(stop, no_goal, env)) for _ in range(2 * runs)]
    pre, stopped = statistics.median(p[0] for p, _ in pairs), statistics.median(s[0] for _, s in pairs)
    assert pairs[-1][0][1] == b"", pairs[-1][0][1]
    # Each owner's call beside a bare start (interleaved, as above): the two see the machine alike.
    owned = [(timed(hook, payload("PreToolUse", "bench-bound", root, **call), env),
              timed([sys.executable, "-c", "pass"], b"", os.environ.copy())) for _ in range(2 * runs)]
    owner, bare = statistics.median(o[0] for o, _ in owned), statistics.median(b[0] for _, b in owned)
    out = owned[-1][0][1]
    assert out == b"", out
    assert any(p.read_text() == bound for p in (Path(env["GOAL_CONVERGENCE_HOME"]) / "makers").iterdir())
    return [Row(f"PreToolUse hook, no goal for the session, {total:,} goal files", f"{pre:.0f} ms",
                f"Stop hook, no goal: {stopped:.0f} ms", "≤ 1.2× the no-goal Stop", pre <= 1.2 * stopped,
                round(pre / stopped, 2)),
            Row("PreToolUse hook, the session owns a goal (Bash checked, let through)", f"{owner:.0f} ms",
                f"python -c pass: {bare:.0f} ms", "≤ 3× bare Python", owner <= 3 * bare, round(owner / bare, 2))]


def active_stop(home: Path, root: Path, evidence, count: int, test: str):
    """A Stop hook that runs one iteration of a goal with ``count`` iterations of history and the check
    ``test``, as a function giving its time in ms; the goal file is put back as it was before each run
    (outside the timing)."""
    goal = goal_with_history(home, root, evidence, count, session="bench-active", test=test)
    path = Store(home).path_for(type(goal), goal.goal_id)
    snapshot = path.read_bytes()
    side = path.with_name(f"{goal.goal_id}.d")

    def restore() -> None:
        path.write_bytes(snapshot)
        for extra in side.glob(f"iteration-{count + 1}.json"):
            extra.unlink()
        Store(home).summaries()

    def run() -> float:
        t, out = timed(hook_command("stop"), payload("Stop", "bench-active", root, stop_hook_active=False,
                                                      last_assistant_message="Done."), environment(home, home.parent),
                       before=restore)
        assert (b"converged" if test == "true" else b"carries on") in out, out
        return t

    return run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
