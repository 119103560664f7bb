"""Every git call: commands that run nothing but git, in a repository that is the project's.

A work tree can plant programs that git runs on its own: a ``.gitattributes`` filter whose clean
command is set in ``.git/config``, ``core.fsmonitor``, a textconv or external diff driver, hooks,
a pager, signature checks. Each call here overrides them on the command line (which wins over
every config file): fsmonitor off, hooks pointed at /dev/null, pager ``cat``, no signature checks,
no external diff or textconv (``--no-ext-diff --no-textconv`` are the caller's, on diff, log and
show), submodules not entered. Filters cannot be switched off by a wildcard, so the drivers the
repository's config names (``git config --get-regexp`` reads config and runs nothing) are each
emptied by name, and the system config and attributes are not read at all. Aliases need nothing:
git never lets an alias replace a built-in command, and only built-ins are called here.

The repository must be the project's own: a ``.git`` directory at the top of its work tree, or a
``.git`` file whose ``gitdir:`` leads inside that work tree or to a linked worktree or submodule
registered for it (its record points back). A ``.git`` file pointing at another repository, or a
``core.worktree`` moving the work tree elsewhere, is refused. Variables that redirect git
(GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_*, ...) are dropped from the environment.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import EXIT_UNAVAILABLE, GoalConvergenceError
from ..system import process

TIMEOUT = 120.0
T = TypeVar("T")
# The stat checks our own index leans on (snapshot.py) are forced on: a repository's config could say to trust
# a file whose mtime was set back (core.trustctime, core.checkStat) or not to look at all (core.ignoreStat).
_SAFE = ("-c", "core.trustctime=true", "-c", "core.checkStat=default", "-c", "core.ignoreStat=false",
         "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
         "-c", "diff.external=", "-c", "log.showSignature=false", "-c", "core.attributesFile=/dev/null",
         "-c", "diff.ignoreSubmodules=all", "-c", "status.submoduleSummary=false", "-c", "submodule.recurse=false",
         "-c", "core.askPass=", "-c", "credential.helper=", "--no-pager")
# Variables that point git at another repository, work tree, index or config, or run a program.
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_ASKPASS", "GIT_SSH", "GIT_SSH_COMMAND",
            "GIT_EXEC_PATH", "GIT_ATTR_SOURCE")


class GitUnavailable(GoalConvergenceError):
    """git is missing, or could not make the repository asked for."""

    exit_code = EXIT_UNAVAILABLE


class UnsafeRepository(GoalConvergenceError):
    """The repository's git directory or work tree is not the project's; git is not run there."""


@dataclass(frozen=True)
class Result:
    code: int | None  # None: git could not start, or timed out and was killed
    out: bytes
    err: str
    truncated: bool = False  # more output than the caller's limit

    @property
    def ok(self) -> bool:
        return self.code == 0


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED and not k.startswith("GIT_CONFIG_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_ATTR_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0",
               GIT_PAGER="cat", PAGER="cat", GIT_NO_REPLACE_OBJECTS="1", LC_ALL="C")
    return env


def _raw(root: Path, args: list[str], timeout: float, limit: int | None, env: dict[str, str] | None = None,
         input: bytes | None = None) -> Result:
    err = process.Capture(head=2048, tail=2048)
    with tempfile.TemporaryFile() as out:
        try:
            done = process.run(["git", *args], root, out, err=err, timeout=timeout,
                               env={**environment(), **(env or {})}, input=input)
        except OSError as exc:
            return Result(None, b"", f"git could not start: {exc}")
        out.seek(0)
        data = out.read() if limit is None else out.read(limit + 1)
    code = None if done.timed_out else done.code
    text = f"git timed out after {timeout:g} s and was stopped" if done.timed_out else err.last_text()
    if limit is not None and len(data) > limit:
        return Result(code, data[:limit], text, truncated=True)
    return Result(code, data, text)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _registered(root: Path, dotgit: Path, gitdir: Path) -> bool:
    """A linked worktree's or a submodule's git directory that names this work tree as its own."""
    back = gitdir / "gitdir"  # a linked worktree records the path of its .git file
    if back.is_file():
        try:
            return Path(back.read_text().strip()).resolve() == dotgit.resolve()
        except OSError:
            return False
    if (gitdir / "config").is_file():  # a submodule's records its work tree as core.worktree
        done = _raw(root, [*_SAFE, "config", "--file", str(gitdir / "config"), "--get", "core.worktree"], 10, 4096)
        if done.ok:
            worktree = done.out.decode("utf-8", "surrogateescape").strip()
            return (gitdir / worktree).resolve() == root
    return False


class Repo:
    """A checked repository: its work tree's top and the arguments that keep git from running programs."""

    def __init__(self, top: Path, safe: list[str]) -> None:
        self.top = top
        self._safe = safe

    def run(self, cwd: Path, *args: str, timeout: float = TIMEOUT, limit: int | None = None,
            env: dict[str, str] | None = None, input: bytes | None = None) -> Result:
        """``git ARGS`` in ``cwd``, stdout cut at ``limit`` bytes (None: whole). ``env`` adds variables the
        caller chose (checkpoint.py: a scratch ``GIT_INDEX_FILE``, a committer); ``input`` is git's stdin."""
        return _raw(Path(cwd), [*self._safe, *args], timeout, limit, env, input)


def open_repo(root: Path, timeout: float = TIMEOUT) -> Repo | None:
    """The repository ``root`` is in, checked; None outside git. Raises UnsafeRepository."""
    root = Path(root).resolve()
    # One path a call: git ends each with a newline, and a folder's name may hold newlines of its own.
    found = [_raw(root, [*_SAFE, "rev-parse", flag], timeout, 65536) for flag in ("--show-toplevel", "--absolute-git-dir")]
    if not all(done.ok and done.out.endswith(b"\n") for done in found):
        return None
    top, gitdir = (Path(os.fsdecode(done.out[:-1])).resolve() for done in found)
    dotgit = top / ".git"
    if not _inside(root, top):
        raise UnsafeRepository(f"the git work tree of {root} is {top}, outside it (core.worktree?); git is not "
                               "used there: remove the setting, or run from the repository's own folder")
    if dotgit.is_dir() and not dotgit.is_symlink():
        ours = gitdir == dotgit.resolve()
    else:
        ours = dotgit.is_file() and (_inside(gitdir, top) or _registered(top, dotgit, gitdir))
    if not ours:
        raise UnsafeRepository(f"{dotgit} leads to the git directory {gitdir}, which is not this project's; git "
                               "is not used there: point it at the project's own repository or remove it")
    names = _raw(root, [*_SAFE, "config", "--null", "--get-regexp", r"^filter\."], timeout, 1 << 20)
    keys = (e.split(b"\n", 1)[0].decode("utf-8", "surrogateescape") for e in names.out.split(b"\0") if e)
    drivers = sorted({key[len("filter."):].rpartition(".")[0] for key in keys} - {""}) if names.ok else []
    safe = [*_SAFE[:-1]]
    for driver in drivers:
        safe += ["-c", f"filter.{driver}.clean=", "-c", f"filter.{driver}.smudge=",
                 "-c", f"filter.{driver}.process=", "-c", f"filter.{driver}.required=false"]
    return Repo(top, [*safe, _SAFE[-1]])


def init_repo(folder: Path, needed_by: str) -> Repo:
    """A new repository in ``folder``, checked as any other. ``needed_by`` names what asked for it, for the
    message when git is missing or fails."""
    done = _raw(Path(folder), [*_SAFE, "init", "-q"], TIMEOUT, 4096)
    repo = open_repo(folder) if done.ok else None
    if repo is None:
        raise GitUnavailable(f"{needed_by} needs git, and `git init` in {folder} failed ({done.err.strip()}): "
                                   "install git (e.g. apt install git) and try again")
    return repo


def at_once(*calls: Callable[[], T]) -> list[T]:
    """The calls run side by side, each a git process (a stat pass over an index, a walk of the folders: each
    waits on the file system), so on two cores they take about the time of the longest. The first error is
    raised."""
    got: list[tuple[bool, Any]] = [(False, None)] * len(calls)

    def one(i: int) -> None:
        try:
            got[i] = (True, calls[i]())
        except Exception as exc:  # re-raised in the caller's thread, below
            got[i] = (False, exc)

    threads = [threading.Thread(target=one, args=(i,), name="goal-git") for i in range(1, len(calls))]
    for thread in threads:
        thread.start()
    one(0)
    for thread in threads:
        thread.join()
    for ok, value in got:
        if not ok:
            raise value
    return [value for _, value in got]
