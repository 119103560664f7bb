"""`goal demo`: the real loop on a bundled sample project, on a machine with no API key and no Claude Code.

The sample project (``loop/sample/project``: a small module with two bugs and the unittest tests that
catch them) is copied to a folder of its own and committed to a new git repository. A real goal is made
there with the conditions as its judge, and ``runner.run_goal`` drives it with the command maker running
``loop/sample/maker.py``, a script that plays a coding agent: it fixes one bug, then skips the other bug's
test (a cheat the integrity guard refuses), then puts the test back and fixes the bug, and the goal
converges. Nothing is simulated but the agent: engine, checks, census, pristine re-run and goal file are
the ones every goal has.

The goal lives in a home under the demo folder (``home/``), so it is gone with the folder and never
shows in the user's own `goal list`; ``keep`` records it in the user's home instead.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..checks import conditions
from ..errors import GoalConvergenceError, InvalidInput
from ..goals import creation, specs
from ..models import Goal
from ..report import render, story
from ..storage.store import Store
from ..system import index
from ..vcs import git
from . import makers, runner

DATA = Path(__file__).resolve().with_name("sample")
OBJECTIVE = "make all tests pass"
_GIT_ID = ["-c", "user.name=goal demo", "-c", "user.email=demo@goal-convergence.invalid", "-c", "commit.gpgsign=false"]


@dataclass
class DemoResult:
    folder: Path
    project: Path
    home: Path
    goal_file: Path
    run: runner.RunResult

    @property
    def exit_code(self) -> int:
        return self.run.exit_code


def test_command(test_runner: str | None = None) -> str:
    """pytest when this Python has it (a census through its JUnit report), else the standard library's
    unittest: `pip install .` alone brings no pytest, and the demo must run right after it."""
    test_runner = test_runner or ("pytest" if importlib.util.find_spec("pytest") else "unittest")
    return f"{shlex.quote(sys.executable)} -m {test_runner} {'-q' if test_runner == 'pytest' else '-v'}"


def run(folder: Path | None = None, *, keep: bool = False, echo: Callable[[str], None] = print,
        on_progress: conditions.ProgressCallback | None = None, test_runner: str | None = None) -> DemoResult:
    """Copy the sample project into ``folder`` (default: a new temp folder), make a goal there and run it
    to its end with the scripted maker, telling ``echo`` each step as it happens. ``test_runner`` is
    pytest or unittest (default: pytest when it is installed)."""
    folder = _fresh_folder(folder)
    project = folder / "project"
    shutil.copytree(DATA / "project", project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    _commit_all(git.init_repo(project, "the demo's sample project"))
    home = index.home() if keep else folder / "home"
    echo(f"goal demo: a sample project with two bugs, a scripted maker, the conditions as judge\n"
         f"  project: {project} (a new git repository: `git diff` there shows what the maker changed)\n"
         f"  goal home: {home}" + ("" if keep else " (the demo's own; your goal list is untouched)"))
    with _home(home):
        store = Store(home)
        spec = specs.GoalSpec(objective=OBJECTIVE, project=project, test=test_command(test_runner),
                              oracle_provider="conditions", max_iterations=6, max_duration="10m", max_dollars=1.0)
        goal = creation.new_goal(store, spec, on_progress=on_progress)
        echo(f"\ncreated {goal.goal_id}\n" + "\n".join(story.opening(goal)[1:] + render.integrity_lines(goal)))
        maker = makers.CommandMaker(f"{shlex.quote(sys.executable)} {shlex.quote(str(DATA / 'maker.py'))}")
        echo("\nrunning it, as `goal run` does:")
        result = runner.run_goal(store, goal.goal_id, maker, on_progress=on_progress,
                                 on_iteration=lambda o: echo(story.iteration(o)))
        goal_file = store.path_for(Goal, goal.goal_id)
        echo("\n" + _ending(result, goal_file, home, keep))
    return DemoResult(folder, project, home, goal_file, result)


def _fresh_folder(folder: Path | None) -> Path:
    if folder is None:
        return Path(tempfile.mkdtemp(prefix="goal-demo-"))
    folder = folder.expanduser().resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(f"{folder} is not an empty folder; give --dir a new or empty one (the demo copies a "
                           f"project into it)")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _commit_all(repo: git.Repo) -> None:
    for step, args in (("add", ["add", "-A"]),
                       ("commit", [*_GIT_ID, "commit", "-q", "-m", "the sample project, before the demo"])):
        done = repo.run(repo.top, *args)
        if not done.ok:
            raise GoalConvergenceError(f"`git {step}` in {repo.top} failed ({done.err.strip()}); run `goal demo` again")


@contextmanager
def _home(home: Path) -> Iterator[None]:
    """Everything the run reads from or writes to the home (logs, prices, notify settings, events) is the
    demo's: the home is an environment setting, so it is set for the run and put back after it."""
    before = os.environ.get("GOAL_CONVERGENCE_HOME")
    os.environ["GOAL_CONVERGENCE_HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            del os.environ["GOAL_CONVERGENCE_HOME"]
        else:
            os.environ["GOAL_CONVERGENCE_HOME"] = before


def _ending(result: runner.RunResult, goal_file: Path, home: Path, keep: bool) -> str:
    """`goal run`'s ending, the goal file, and the two ways to put a goal on a project of your own."""
    return "\n".join([*story.ending(result, "" if keep else story.home_prefix(str(home))), f"goal file: {goal_file}",
                      "on a project of your own:",
                      f'  {f"goal run {OBJECTIVE!r}":<44}(headless; the maker is `claude -p`, or --maker-cmd CMD)',
                      f"  {f'/goal-convergence:goal {OBJECTIVE}':<44}(in Claude Code, with the plugin installed)"])
