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

Checking a repository takes two git calls (rev-parse, config), asked several times an iteration; the answer
is kept for the process while the stat data of every file it was read from holds (``_Watch`` says which).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
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


# Within this many seconds of its ctime a config file's stat data cannot vouch for it (vcs/filehash.py's rule).
RACY_SECONDS = 2
# The repositories opened in this process, by folder: what each answer was read from, and the answer.
_opened: dict[Path, tuple[_Watch, Repo]] = {}
_opened_lock = threading.Lock()


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
            # Not killed with us: a git call ends on its own in moments, and one killed halfway through a write
            # leaves its lock files (index.lock, a ref's) in the user's repository.
            done = process.run(["git", *args], root, out, err=err, timeout=timeout,
                               env={**environment(), **(env or {})}, input=input, with_us=False)
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
    """The repository ``root`` is in, checked; None outside git. Raises UnsafeRepository. The answer is kept
    for the process while the stat data of every file it was read from stays the same (``_Watch``)."""
    root = Path(root).resolve()
    with _opened_lock:
        known = _opened.get(root)
    if known is not None and known[0].still():
        return known[1]
    started = time.time_ns()
    repo, watch = _open(root, timeout)
    if repo is not None and watch is not None and watch.settled(started):
        with _opened_lock:
            _opened[root] = (watch, repo)
    return repo


def _open(root: Path, timeout: float) -> tuple[Repo | None, _Watch | None]:
    """open_repo's answer, and what it was read from (None: a git call failed, so nothing to keep)."""
    watch = _Watch()
    found = _raw(root, [*_SAFE, "rev-parse", "--show-toplevel", "--absolute-git-dir"], timeout, 65536)
    if found.ok and found.out.count(b"\n") == 2:  # git ends each path with a newline: two, so neither holds one
        paths = found.out[:-1].split(b"\n")
    else:  # one path a call: a folder's name may hold newlines of its own
        done = [_raw(root, [*_SAFE, "rev-parse", flag], timeout, 65536) for flag in ("--show-toplevel",
                                                                                   "--absolute-git-dir")]
        if not all(d.ok and d.out.endswith(b"\n") for d in done):
            return None, watch
        paths = [d.out[:-1] for d in done]
    top, gitdir = (Path(os.fsdecode(path)).resolve() for path in paths)
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
    watch.repository(root, top, gitdir)
    # The filters' names, and the includes and the files each came from: what a later call must watch. git
    # names a file from the top of the work tree (it moves there), whatever folder it was started in.
    names = _raw(root, [*_SAFE, "config", "--null", "--show-origin", "--get-regexp",
                        r"^(filter|include|includeif)\."], timeout, 1 << 20)
    if names.truncated:
        raise UnsafeRepository(f"the git config of {top} holds over a megabyte of filters and includes; git is not "
                               "used there: remove them from its config files (`git config --show-origin --list`)")
    drivers = set()
    fields = names.out.split(b"\0") if names.ok else []
    for origin, entry in zip(fields[0::2], fields[1::2]):
        key, _, value = (part.decode("utf-8", "surrogateescape") for part in entry.partition(b"\n"))
        where = os.fsdecode(origin).removeprefix("file:") if origin.startswith(b"file:") else None
        if key.startswith("filter."):
            drivers.add(key[len("filter."):].rpartition(".")[0])
        elif where is not None and key.endswith(".path") and value:
            watch.include(top / where, value)
        if where is not None:
            watch.add(top / where)
    safe = [*_SAFE[:-1]]
    for driver in sorted(drivers - {""}):
        safe += ["-c", f"filter.{driver}.clean=", "-c", f"filter.{driver}.smudge=",
                 "-c", f"filter.{driver}.process=", "-c", f"filter.{driver}.required=false"]
    return Repo(top, [*safe, _SAFE[-1]]), watch if names.code in (0, 1) else None  # 1: no such key


class _Watch:
    """The stat data of what an ``open_repo`` answer was read from, to tell whether it still holds.

    git's answer depends on the environment, the ``.git`` entries from the folder up to the work tree's top
    (where git's search stops), the git directory's HEAD (an ``includeIf "onbranch:"``), ``gitdir`` and
    ``commondir`` files, and the config files git reads: the repository's ``config`` and ``config.worktree``,
    the global ``~/.gitconfig`` and ``$XDG_CONFIG_HOME/git/config`` (the system config is never read:
    GIT_CONFIG_NOSYSTEM), each file a key came from, and each file an include or includeIf names, its
    condition true or not (stat data of a file that is absent is "absent"). A filter added anywhere git
    would read it is a write to one of these files, which moves its ctime (no one can set a ctime back) or
    makes a file appear; a file removed can only take filters away, which the answer held leaves emptied.
    An answer is kept only when nothing could have been written between git's read and ours unseen, nor
    twice within one clock tick (``settled``)."""

    def __init__(self) -> None:
        self.env = sorted(environment().items())
        self.paths: dict[str, bool] = {}  # path: compared whole (a file), or by identity only (a .git folder)
        home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        for path in (home / ".gitconfig", xdg / "git" / "config", home / ".config" / "git" / "config"):
            self.add(path)
        # The global files as git is about to read them: compared again after, instead of their folder's times
        # (the home folder changes all the time).
        self.before = {path: _record(path, True) for path in self.paths}
        self.stamp: list[object] | None = None
        self.top_dotgit: str | None = None

    def add(self, path: Path, whole: bool = True) -> None:
        self.paths.setdefault(os.path.abspath(path), whole)

    def include(self, origin: Path, value: str) -> None:
        """The file an include names: from the home for ``~/``, else from the including file's folder."""
        path = Path(os.path.expanduser(value)) if value.startswith("~") else origin.parent / value
        self.add(path)

    def repository(self, root: Path, top: Path, gitdir: Path) -> None:
        self.add(top, whole=False)
        for folder in [root, *root.parents]:
            self.add(folder / ".git", whole=not (folder / ".git").is_dir())
            if folder == top:
                break
        for name in ("config", "config.worktree", "HEAD", "commondir", "gitdir"):
            self.add(gitdir / name)
        try:
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
        except OSError:
            common = gitdir
        for name in ("config", "config.worktree"):
            self.add(common / name)
        self.top_dotgit = os.path.abspath(top / ".git")

    def _now(self) -> list[object]:
        return [self.env, *(_record(path, whole) for path, whole in sorted(self.paths.items()))]

    def settled(self, started: int) -> bool:
        """Stamped now; whether the answer may be kept: the work tree's .git is there, the global files are as
        they were before git began, and no file was written since a moment before it began to read (a file
        renamed into place may keep an old ctime, but its folder's move: they count too, but the home's)."""
        self.stamp = self._now()
        records = dict(zip(sorted(self.paths), self.stamp[1:]))
        if records.get(self.top_dotgit or "") is None or any(records[p] != r for p, r in self.before.items()):
            return False
        ctimes = [r[-1] for p, r in records.items() if r is not None and self.paths[p]]
        for folder in {os.path.dirname(p) for p, whole in self.paths.items() if whole and p not in self.before}:
            with contextlib.suppress(OSError):
                ctimes.append(os.stat(folder).st_ctime_ns)
        return max(ctimes, default=0) < started - RACY_SECONDS * 10**9

    def still(self) -> bool:
        return self._now() == self.stamp


def _record(path: str, whole: bool) -> list[int] | None:
    """A file's stat data (its ctime last), or a folder's identity; None when absent."""
    try:
        st = os.stat(path) if whole else os.lstat(path)
    except OSError:
        return None
    if not whole:
        return [st.st_mode, st.st_dev, st.st_ino, st.st_uid]
    return [st.st_mode, st.st_dev, st.st_ino, st.st_uid, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


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
