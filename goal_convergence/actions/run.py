"""The action's run step: `goal new` from the inputs, then `goal run` to the end, then what a runner
needs from it: the outputs, the ledger as the job summary, and a folder of files for the artifact
(the goal file with its evidence, the ledger, the HTML report when `goal report` can make one).

The goal lives in a home under ``RUNNER_TEMP`` (or the ``home`` input), outside the checkout, so a
pull request made from the work tree never carries it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import MakerError
from ..goals import creation
from ..loop import makers, runner
from ..models import Goal
from ..report import render
from ..storage import evidence_files
from ..storage.store import Store
from ..system import printmode, process
from . import envfiles, ledger
from .inputs import Inputs

ARTIFACTS = "goal-convergence-artifacts"
REPORT_FILE = "report.html"
_INSTALL_TIMEOUT = 600.0
_REPORT_TIMEOUT = 300.0


@dataclass
class StepResult:
    run: runner.RunResult
    folder: Path  # what the artifact uploads

    @property
    def exit_code(self) -> int:
        return self.run.exit_code


def runner_temp() -> Path:
    return Path(os.environ.get("RUNNER_TEMP") or os.environ.get("TMPDIR") or "/tmp")


def _settle_environment(inputs: Inputs) -> None:
    """The goal home, and no empty API key: an unset secret arrives as an empty input, which would read as
    a key that is set (the oracle's `auto` then picks the API and fails on it)."""
    if not os.environ.get("GOAL_CONVERGENCE_HOME"):
        os.environ["GOAL_CONVERGENCE_HOME"] = inputs.get("home") or str(runner_temp() / "goal-convergence")
    if not os.environ.get("ANTHROPIC_API_KEY", "").strip():
        os.environ.pop("ANTHROPIC_API_KEY", None)


def ensure_claude_code(version: str, echo: Callable[[str], None]) -> None:
    """The claude maker needs Claude Code: install it from npm under RUNNER_TEMP when it is not here. The
    per-platform package holds the binary (npm may skip the wrapper's postinstall), so CLAUDE_BIN names it."""
    if printmode.binary():
        return
    prefix = runner_temp() / "claude-code"
    package = "@anthropic-ai/claude-code" + (f"@{version}" if version else "")
    echo(f"installing {package} from npm into {prefix}")
    try:
        done = process.run_read(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(prefix),
                                 package], runner_temp(), timeout=_INSTALL_TIMEOUT)
    except OSError as exc:
        raise MakerError(f"the claude maker needs Claude Code and npm could not start ({exc}); set up Node first "
                         "(actions/setup-node), or give maker-cmd") from None
    found = sorted((prefix / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
    if done.exit.code != 0 or not found:
        raise MakerError(f"npm could not install {package} (exit {done.exit.code}): {done.stderr.strip()[-400:]}; "
                         "check claude-code-version, or give maker-cmd")
    os.environ["CLAUDE_BIN"] = str(found[0])
    envfiles.set_env({"CLAUDE_BIN": found[0]})


def _report(goal_id: str, folder: Path, echo: Callable[[str], None]) -> str | None:
    """The HTML report, when this version of the package has `goal report`; a run never fails for want of it."""
    target = folder / REPORT_FILE
    try:
        done = process.run_read([sys.executable, "-m", "goal_convergence", "report", goal_id, "--output", str(target)],
                                folder, timeout=_REPORT_TIMEOUT)
    except OSError as exc:
        done = None
        echo(f"no HTML report: {exc}")
    if done is not None and (done.exit.code != 0 or not target.is_file()):
        echo(f"no HTML report (`goal report` exited {done.exit.code}: {done.stderr.strip()[-300:]})")
    return str(target) if target.is_file() else None


def _stage(store: Store, result: runner.RunResult, record: dict, echo: Callable[[str], None]) -> Path:
    """The artifact's folder: the goal file and its evidence, the ledger, the report."""
    goal_id = result.goal.goal_id
    folder = runner_temp() / ARTIFACTS / goal_id
    folder.mkdir(parents=True, exist_ok=True)
    goal_path = store.path_for(Goal, goal_id)
    shutil.copy2(goal_path, folder / goal_path.name)
    evidence = evidence_files.folder(goal_path)
    if evidence.is_dir():
        shutil.copytree(evidence, folder / evidence.name, dirs_exist_ok=True)
    (folder / ledger.LEDGER_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _report(goal_id, folder, echo)
    return folder


def run_step(echo: Callable[[str], None] = print) -> StepResult:
    """Create the goal the inputs describe and run it to its end; write outputs, summary and artifact files."""
    inputs = Inputs.from_env()
    _settle_environment(inputs)
    store = Store()
    spec = inputs.spec(Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd()))
    maker = inputs.maker()
    if isinstance(maker, makers.ClaudeMaker):
        ensure_claude_code(inputs.get("claude-code-version"), echo)
    goal = creation.new_goal(store, spec)
    echo(render.created(goal))
    # Before the run: a run that dies still leaves the id of the goal it was working on.
    envfiles.set_outputs({"goal-id": goal.goal_id, "goal-file": store.path_for(Goal, goal.goal_id)})
    result = runner.run_goal(store, goal.goal_id, maker, on_iteration=lambda o: echo(render.iteration_line(o)))
    record = {**result.ledger(), "objective": result.goal.objective, "exitCode": result.exit_code,
              "maxDollars": result.goal.budget.max_dollars or 0}
    folder = _stage(store, result, record, echo)
    markdown = ledger.goal_markdown(result.goal, record, sorted([*(p.name for p in folder.iterdir()),
                                                                  ledger.MARKDOWN_FILE]))
    (folder / ledger.MARKDOWN_FILE).write_text(markdown + "\n", encoding="utf-8")
    envfiles.add_summary(markdown)
    report = folder / REPORT_FILE
    envfiles.set_outputs({"met": "true" if record["met"] else "false", "stop": result.stop,
                          "exit-code": result.exit_code, "artifact-name": inputs.get("artifact-prefix") + goal.goal_id,
                          "artifact-path": folder, "report": report if report.is_file() else ""})
    echo(render.run_summary(result.goal, result.stop))
    return StepResult(result, folder)
