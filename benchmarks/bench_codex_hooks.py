"""How fast the Codex CLI hooks answer, run exactly as plugins/codex/hooks/hooks.json starts them
(``goal hook codex EVENT``, the console script of this interpreter's environment), beside
``python -c pass`` and the Claude Code plugin's Stop hook measured in the same run.

    python benchmarks/bench_codex_hooks.py [--quick] [--json]

- Stop with no goal for the session, in a home of 10,000 goal files: <= 3x bare Python, the Claude
  Code hook's target.
- PreToolUse (before every shell command) with no goal for the session, at 10,000 goal files:
  <= 3x bare Python.
- The same Stop beside the Claude Code plugin's, run interleaved: <= 1.5x it (the console script
  starts Python with its site packages; the Claude Code launcher starts it with ``-S``).

``--quick`` uses 1,000 goals and fewer runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hooks import environment, hook_command, median, payload, timed  # noqa: E402
from common import Row, report  # noqa: E402
from corpus import REPO, many_goals, project, real_evidence  # noqa: E402


def codex_command(event: str) -> list[str]:
    """The command plugins/codex/hooks/hooks.json runs for ``event``, with this environment's `goal`."""
    config = json.loads((REPO / "plugins" / "codex" / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    for groups in config.values():
        for hook in (h for g in groups for h in g["hooks"]):
            words = shlex.split(hook["command"])
            if words[-1] == event:
                return [str(Path(sys.executable).parent / words[0]), *words[1:]]
    raise SystemExit(f"plugins/codex/hooks/hooks.json has no hook for {event}")


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    total, runs = (1_000, 5) if quick else (10_000, 15)
    work = Path(tempfile.mkdtemp(prefix="bench-codex-hooks-"))
    try:
        return report(measure(work, total, runs), argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(work: Path, total: int, runs: int) -> list[Row]:
    root = project(work / "project")
    os.environ["GOAL_CONVERGENCE_HOME"] = str(work / "scratch-home")
    full = work / "full"
    many_goals(full, root, real_evidence(root), total, 15)
    env = environment(full, work)
    bare, _ = median([sys.executable, "-c", "pass"], b"", os.environ.copy(), runs)
    stop = payload("Stop", "a-codex-session-with-no-goal", root, stop_hook_active=False, last_assistant_message="x",
                   model="gpt-5.5", turn_id="t1", permission_mode="default")
    shell = payload("PreToolUse", "a-codex-session-with-no-goal", root, tool_name="Bash",
                    tool_input={"command": "python -m pytest -q"}, tool_use_id="c1", model="gpt-5.5")
    pairs = [(timed(codex_command("stop"), stop, env), timed(hook_command("stop"), stop, env))
             for _ in range(2 * runs)]
    codex_stop = statistics.median(c[0] for c, _ in pairs)
    claude_stop = statistics.median(c[0] for _, c in pairs)
    if any(c[1].strip() for c, _ in pairs):
        raise SystemExit("the Codex Stop hook answered a session with no goal")
    pre, out = median(codex_command("pre-tool-use"), shell, env, runs)
    if out.strip():
        raise SystemExit("the Codex PreToolUse hook answered a session with no goal")
    return [
        Row(f"Codex Stop hook, no goal, {total:,} goal files", f"{codex_stop:.0f} ms", f"python -c pass: {bare:.0f} ms",
            "≤ 3× bare Python", codex_stop <= 3 * bare, codex_stop / bare),
        Row(f"Codex PreToolUse hook, no goal, {total:,} goal files", f"{pre:.0f} ms", f"python -c pass: {bare:.0f} ms",
            "≤ 3× bare Python", pre <= 3 * bare, pre / bare),
        Row(f"Codex Stop hook beside Claude Code's, no goal, {total:,} goal files", f"{codex_stop:.0f} ms",
            f"Claude Code Stop hook: {claude_stop:.0f} ms", "≤ 1.5× Claude Code's", codex_stop <= 1.5 * claude_stop,
            codex_stop / claude_stop),
    ]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
