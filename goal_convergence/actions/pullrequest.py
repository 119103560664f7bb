"""The action's pull-request step: when the goal converged and the ``pull-request`` input says so, the
work tree's changes go on a new branch, pushed to ``origin``, and `gh pr create` opens the pull request.

The token reaches git as an HTTP header set for this push only (a checkout that kept its own credentials
is overridden, an empty value first resetting the list) and `gh` in ``GH_TOKEN``: neither is written to
any config file.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import GoalConvergenceError, InvalidInput, MakerError
from ..system import process
from ..system.text import clip
from ..vcs import git
from . import envfiles, ledger
from .inputs import Inputs, flag

BOT = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
_GH_TIMEOUT = 120.0


class PullRequestFailed(GoalConvergenceError):
    """git or gh refused a step of making the pull request."""


@dataclass
class Opened:
    branch: str
    url: str


def _git(repo: git.Repo, *args: str) -> str:
    done = repo.run(repo.top, *args)
    if not done.ok:
        raise PullRequestFailed(f"`git {' '.join(a for a in args if 'AUTHORIZATION' not in a)}` failed: "
                                f"{done.err.strip()[-400:]}; the goal's changes are still in the work tree")
    return done.out.decode("utf-8", "replace").strip()


def _auth(token: str) -> list[str]:
    server = os.environ.get("GITHUB_SERVER_URL") or "https://github.com"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    key = f"http.{server}/.extraheader"
    return ["-c", f"{key}=", "-c", f"{key}=AUTHORIZATION: basic {basic}"]


def _base(repo: git.Repo, given: str) -> str:
    if given or os.environ.get("GITHUB_BASE_REF"):
        return given or os.environ["GITHUB_BASE_REF"]
    current = _git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    return current if current != "HEAD" else os.environ.get("GITHUB_REF_NAME", "")


def open_pull_request(project: Path, goal_id: str, objective: str, inputs: Inputs, body: str) -> Opened | None:
    """Commit the work tree on a new branch, push it, open the pull request; None when nothing changed."""
    repo = git.open_repo(project)
    if repo is None:
        raise InvalidInput(f"pull-request needs a git checkout, and {project} is not in one; run actions/checkout first")
    if not _git(repo, "status", "--porcelain"):
        return None
    base = _base(repo, inputs.get("base"))
    if not base:
        raise InvalidInput("no base branch for the pull request (detached HEAD and no GITHUB_REF_NAME); set input base")
    branch = inputs.get("branch") or f"goal-convergence/{goal_id}"
    token = os.environ.get("GH_TOKEN", "").strip()
    _git(repo, "checkout", "-b", branch)
    _git(repo, "add", "--all")
    _git(repo, "-c", f"user.name={BOT[0]}", "-c", f"user.email={BOT[1]}", "commit", "--quiet", "--no-verify",
         "-m", f"{clip(objective.splitlines()[0], 72)}\n\ngoal-convergence: {goal_id} converged.")
    _git(repo, *(_auth(token) if token else []), "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")
    with tempfile.NamedTemporaryFile("w", suffix=".md", encoding="utf-8", delete=False) as fh:
        fh.write(body)
    try:
        done = process.run_read(["gh", "pr", "create", "--base", base, "--head", branch, "--title",
                                 clip(objective.splitlines()[0], 120), "--body-file", fh.name], repo.top,
                                timeout=_GH_TIMEOUT, env={**os.environ, "GH_PROMPT_DISABLED": "1"})
    except OSError as exc:
        raise MakerError(f"the branch {branch} is pushed, but gh could not start ({exc}); install the GitHub CLI "
                         "to open the pull request") from None
    finally:
        os.unlink(fh.name)
    if done.exit.code != 0:
        raise PullRequestFailed(f"the branch {branch} is pushed, but `gh pr create` failed: "
                                f"{done.stderr.strip()[-400:]}; does the token have pull-requests: write?")
    return Opened(branch, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "")


def pull_request_step(echo: Callable[[str], None] = print) -> Opened | None:
    """The step after the run: acts only when asked (input pull-request) and when the goal converged. What
    the run step kept for the artifact (``GOAL_ARTIFACT_PATH``) says which goal and how it ended."""
    inputs = Inputs.from_env()
    if not flag(inputs.get("pull-request"), "pull-request"):
        return None
    folder = Path(os.environ.get("GOAL_ARTIFACT_PATH") or os.devnull)
    if not (folder / ledger.LEDGER_FILE).is_file():
        raise InvalidInput(f"no ledger in {folder} (GOAL_ARTIFACT_PATH): the run step did not finish; see its log")
    record = json.loads((folder / ledger.LEDGER_FILE).read_text(encoding="utf-8"))
    if not record["met"]:
        echo(f"no pull request: the goal {record['goalId']} did not converge ({record['stop']})")
        return None
    body = (folder / ledger.MARKDOWN_FILE).read_text(encoding="utf-8")
    workspace = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    opened = open_pull_request(inputs.project(workspace), record["goalId"], record["objective"], inputs, body)
    if opened is None:
        echo(f"no pull request: the goal {record['goalId']} converged with no change to the work tree")
        return None
    envfiles.set_outputs({"branch": opened.branch, "pull-request-url": opened.url})
    echo(f"pull request: {opened.url or opened.branch}")
    return opened
