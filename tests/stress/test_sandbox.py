"""Escapes from the oracle's read-only tools (oracle/tools.py) and from the engine's own git calls: paths out
of the project (`..`, absolute, /proc, symlinks, hard links), a `.git` file whose gitdir is elsewhere,
programs planted in the repository's config (filters, fsmonitor, textconv, external diff, pager, hooks),
secrets files, and regular expressions that backtrack for ever. Nothing outside the project is read, no
planted program runs, no call outlives its time bound."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from goal_convergence.oracle.tools import Toolbox
from goal_convergence.vcs import tree
from tests.conftest import REPO, git

from . import invariants as inv
from .report import assert_clean
from .scale import sized

pytestmark = pytest.mark.stress

# A tool call may take this long, however the regular expression backtracks (the issue saw > 30 s).
REGEX_BOUND = 35.0
PLANTED = ("filter-clean", "filter-smudge", "filter-process", "fsmonitor", "textconv", "external-diff", "pager",
           "log-pager", "hook-post-index-change", "hook-reference-transaction", "included-fsmonitor")
SECRET_FILES = {".env": "SECRET_ENV", ".env.local": "SECRET_ENV_LOCAL", "id_rsa": "SECRET_SSH_KEY",
                "deploy/server.pem": "SECRET_PEM", ".aws/credentials": "SECRET_AWS_CREDENTIALS",
                "credentials.json": "SECRET_CREDENTIALS_JSON"}


class Sandbox:
    def __init__(self, project: Path, tmp: Path) -> None:
        token = uuid.uuid4().hex[:12]
        self.project, self.ran = project, tmp / "ran"
        self.ran.mkdir()
        outside = tmp / "outside"
        outside.mkdir()
        self.outside_file = outside / "secret.txt"
        self.outside_file.write_text(f"OUTSIDE-{token}\n")
        self.secrets = [f"OUTSIDE-{token}", f"OTHER-REPO-{token}"]
        # the project: a committed file, then links out, secrets files, and (last, so that our own git calls
        # above run nothing) the planted config
        (project / "src").mkdir()
        (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", "code")
        os.symlink(self.outside_file, project / "link.txt")
        os.symlink(outside, project / "linkdir")
        os.link(self.outside_file, project / "hard.txt")
        for rel, word in SECRET_FILES.items():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text(f"{word}={token}\n")
            self.secrets.append(f"{word}={token}")
        scripts = tmp / "planted"
        scripts.mkdir()
        for kind in PLANTED:
            path = scripts / kind
            path.write_text(f"#!/bin/sh\ntouch {self.ran / kind}\ncat\n")
            path.chmod(0o755)
        (outside / "evil.config").write_text(f"[core]\n\tfsmonitor = {scripts / 'included-fsmonitor'}\n")
        with open(project / ".git" / "config", "a") as fh:
            fh.write(f"[filter \"evil\"]\n\tclean = {scripts / 'filter-clean'}\n\tsmudge = {scripts / 'filter-smudge'}\n"
                     f"\tprocess = {scripts / 'filter-process'}\n"
                     f"[diff \"evil\"]\n\ttextconv = {scripts / 'textconv'}\n"
                     f"[diff]\n\texternal = {scripts / 'external-diff'}\n"
                     f"[core]\n\tfsmonitor = {scripts / 'fsmonitor'}\n\tpager = {scripts / 'pager'}\n"
                     f"[pager]\n\tlog = {scripts / 'log-pager'}\n\tstatus = {scripts / 'pager'}\n"
                     f"[include]\n\tpath = {outside / 'evil.config'}\n")
        (project / ".gitattributes").write_text("* filter=evil diff=evil\n")
        for hook in ("post-index-change", "reference-transaction"):
            (project / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {self.ran / ('hook-' + hook)}\n")
            (project / ".git" / "hooks" / hook).chmod(0o755)
        (project / "src" / "calc.py").write_text("def add(a, b):\n    return b + a\n")  # a change to diff
        # a second project whose .git is a file pointing at a repository elsewhere
        other = outside / "other"
        other.mkdir()
        git(other, "init", "-q", "-b", "main")
        (other / "private.txt").write_text(f"OTHER-REPO-{token}\n")
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", f"OTHER-REPO-{token}")
        self.borrowed = tmp / "borrowed"
        self.borrowed.mkdir()
        (self.borrowed / ".git").write_text(f"gitdir: {other / '.git'}\n")
        (self.borrowed / "private.txt").write_text("mine\n")


ESCAPES = [
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "src/../../outside/secret.txt"}),
    ("read_file", {"path": "{outside}"}),
    ("read_file", {"path": "/proc/self/root{outside}"}),
    ("read_file", {"path": "link.txt"}),
    ("read_file", {"path": "linkdir/secret.txt"}),
    ("read_file", {"path": "hard.txt"}),
    ("list_files", {"pattern": "../*"}),
    ("list_files", {"pattern": "/**"}),
    ("grep", {"pattern": "OUTSIDE|OTHER-REPO|SECRET"}),
    ("grep", {"pattern": "OUTSIDE", "path": "linkdir"}),
    ("grep", {"pattern": "OUTSIDE", "path": "../outside"}),
    ("grep", {"pattern": "OUTSIDE", "path": "{outside}"}),
    ("grep", {"pattern": "OUTSIDE", "path": "hard.txt"}),
    ("git", {"command": "diff", "paths": ["../outside/secret.txt"]}),
    ("git", {"command": "show", "ref": "HEAD:../outside/secret.txt"}),
    ("git", {"command": "status"}),
    ("git", {"command": "diff"}),
    ("git", {"command": "diff", "stat": True}),
    ("git", {"command": "log", "stat": True}),
    ("git", {"command": "show"}),
    *[("read_file", {"path": rel}) for rel in SECRET_FILES],
]


def test_the_oracle_tools_and_the_engines_git_stay_in_the_project(git_repo, tmp_path, tally):
    box = Sandbox(git_repo, tmp_path)
    row = tally("sandbox escapes")
    tools = Toolbox(git_repo)
    for name, args in ESCAPES:
        args = {k: v.replace("{outside}", str(box.outside_file)) if isinstance(v, str) else v for k, v in args.items()}
        with row.attempt(f"{name} {args}"):
            answer, _ = tools.run(name, args)
            inv.check_no_leak(answer, box.secrets, box.ran)
    for command in ("status", "log", "show", "diff"):
        with row.attempt(f"git {command} where .git is a file naming another repository"):
            answer, _ = Toolbox(box.borrowed).run("git", {"command": command})
            inv.check_no_leak(answer, box.secrets, box.ran)
    for what, call in [("tree.diff_stat", lambda: tree.diff_stat(git_repo, None)),
                       ("tree.tree_fingerprint", lambda: tree.tree_fingerprint(git_repo)),
                       ("tree.ignored_entries", lambda: str(tree.ignored_entries(git_repo)))]:
        with row.attempt(f"the engine's {what} in the planted repository"):
            inv.check_no_leak(call(), box.secrets, box.ran)
    assert_clean(row)


REGEXES = [("(a|aa)*c", "a" * 5001), ("(x+x+)+y", "x" * 5001)][:sized(2, 1)]


@pytest.mark.parametrize("pattern,line", REGEXES)
def test_a_backtracking_regex_is_bounded_in_time(pattern, line, git_repo, tally):
    row = tally("sandbox escapes")
    (git_repo / "long.txt").write_text(line + "\n")
    probe = ("import sys; from goal_convergence.oracle.tools import Toolbox; "
             "print(Toolbox(sys.argv[1]).run('grep', {'pattern': sys.argv[2]})[0][:200])")
    with row.attempt(f"grep {pattern!r} on a {len(line)}-character line"):
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-c", probe, str(git_repo), pattern], capture_output=True,
                                  text=True, timeout=REGEX_BOUND, env={**os.environ, "PYTHONPATH": str(REPO)})
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the grep ran past {REGEX_BOUND:g} s") from None
        assert done.returncode == 0, done.stderr[-400:]
        assert time.monotonic() - started < REGEX_BOUND
    assert_clean(row)
