"""The documentation's "What it prints" page (docs/screens.md), written from real runs of the commands.

    python scripts/screens.py            # run them and write the page
    python scripts/screens.py --check    # run them and exit 1 if the page differs

Each block on the page is what a command printed in this run: `goal demo`, `goal run`, `goal status`, `goal list`,
`goal report`, and the slash command's two halves (the line the user sees, the text the model reads). Only what
differs from one run to the next is made steady: the temp folder, the interpreter's path, goal and triage ids, and
durations. tests/test_docs.py runs the commands again and compares, so the page cannot drift from the output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TEMPLATE = HERE / "screens_page.md"
PAGE = REPO / "docs" / "screens.md"
SAMPLE = REPO / "goal_convergence" / "loop" / "sample"
BLANKS = ("demo", "run", "status", "list", "list_all", "report", "slash_notice", "slash_context", "slash_status")
GOAL_IDS = ["goal-7hq2m4xk", "goal-c3n8w1pz", "goal-r5t9b2ve", "goal-m2x6k0dw"]
TRIAGE_IDS = ["tri-k4d8s2qa", "tri-w9f3j7lc"]
GIT_ID = ["-c", "user.name=screens", "-c", "user.email=screens@goal-convergence.invalid", "-c", "commit.gpgsign=false"]
OBJECTIVE = "make all tests pass"


def _env(tmp: Path) -> dict[str, str]:
    # Without CI and BUILD_NUMBER: pytest then does not cut its summary lines, and the page would differ in CI.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE", "GOAL_CONVERGENCE")) and k not in ("CI", "BUILD_NUMBER")}
    return {**env, "HOME": str(tmp), "GOAL_CONVERGENCE_HOME": str(tmp / "home"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "COLUMNS": "100", "NO_COLOR": "1"}


def _goal(tmp: Path, cwd: Path, *args: str, stdin: str = "") -> str:
    done = subprocess.run([sys.executable, "-m", "goal_convergence", *args], cwd=cwd, env=_env(tmp), input=stdin,
                          capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


def _project(tmp: Path, name: str) -> Path:
    """The demo's sample project, committed to a new git repository."""
    project = tmp / name
    shutil.copytree(SAMPLE / "project", project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*GIT_ID, "commit", "-q", "-m", "the sample project"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    return project


def capture() -> dict[str, str]:
    """Run the commands in a temp folder (its own goal home) and return what each printed, made steady."""
    with tempfile.TemporaryDirectory(prefix="goal-screens-") as folder:
        tmp = Path(folder).resolve()
        py = sys.executable
        shown = {"demo": _goal(tmp, tmp, "demo", "--dir", str(tmp / "demo"))}
        shop = _project(tmp, "shop")
        shown["run"] = _goal(tmp, shop, "run", OBJECTIVE, "--test", f"{py} -m pytest -q", "--oracle", "conditions",
                             "--maker-cmd", f"{py} {SAMPLE / 'maker.py'}")
        shown["status"] = _goal(tmp, shop, "status")
        shown["list"] = _goal(tmp, shop, "list")
        shown["list_all"] = _goal(tmp, shop, "list", "--all")
        shown["report"] = _goal(tmp, shop, "report")
        other = _project(tmp, "webshop")
        hook = {"session_id": "s-1", "cwd": str(other), "hook_event_name": "UserPromptExpansion",
                "expansion_type": "slash_command", "command_name": "goal-convergence:goal", "command_source": "plugin",
                "command_args": f"{OBJECTIVE} --test '{py} -m pytest -q' --oracle conditions"}
        answer = json.loads(_goal(tmp, other, "hook", "prompt-expansion", stdin=json.dumps(hook)))
        shown["slash_notice"] = answer["systemMessage"]
        shown["slash_context"] = answer["hookSpecificOutput"]["additionalContext"]
        status = json.loads(_goal(tmp, other, "hook", "prompt-expansion",
                                  stdin=json.dumps({**hook, "command_args": "status"})))
        shown["slash_status"] = status["hookSpecificOutput"]["additionalContext"]
        ids: dict[str, dict[str, str]] = {"goal": {}, "tri": {}}  # one stand-in an id, across the whole page
        return {name: steady(text, tmp, ids) for name, text in shown.items()}


def steady(text: str, tmp: Path, ids: dict[str, dict[str, str]]) -> str:
    """``text`` with what changes from run to run replaced by fixed stand-ins (``ids``: those given so far)."""
    text = text.replace(str(tmp), "/tmp/goal-screens").replace(sys.executable, "python3")
    for kind, stand_ins in (("goal", GOAL_IDS), ("tri", TRIAGE_IDS)):
        seen = ids[kind]
        text = re.sub(rf"\b{kind}-[0-9a-z]{{8}}\b",
                      lambda m, s=seen, pick=stand_ins: s.setdefault(m.group(0), pick[len(s)]), text)
    text = re.sub(r"\b(?:\d+h\d\dm|\d+m\d\ds|\d+s)(?= active| ago)", "4s", text)
    text = re.sub(r"time (?:\d+h\d\dm|\d+m\d\ds|\d+s)/", "time 4s/", text)
    return re.sub(r"\bin \d+\.\d+s\b", "in 0.05s", text).rstrip("\n")


def render(shown: dict[str, str], template: str | None = None) -> str:
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template
    for blank in BLANKS:
        text = text.replace("{{" + blank + "}}", shown[blank])
    return text


def main(argv: list[str]) -> int:
    page = render(capture())
    if "--check" in argv:
        same = PAGE.read_text(encoding="utf-8") == page
        print("docs/screens.md is what the commands print" if same else
              "docs/screens.md differs from what the commands print: run `python scripts/screens.py`")
        return 0 if same else 1
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
