"""One listing of the project's tree, read by everything an iteration looks at: the fingerprint, the
delivered-tree watch, the integrity guard's protect scan and the checkpoint.

In git, a snapshot reads the tree through an index of our own (``GIT_INDEX_FILE``; the user's index,
branch and files are never written). git's stat cache in that index says which files changed since the
last snapshot (``git diff-files``, stat data only, so a file rewritten with its old content still
shows), ``git ls-files --others`` lists the new ones, and only those are hashed (``git add``); the
index then holds a blob id for every file, which is the file's content hash, and ``git write-tree``
turns it into the checkpoint's tree. Inside ``session`` the index is kept between processes (the
goal's own file under the home), so an iteration costs what changed since the last one; outside,
it is a throw-away copy of the user's index, whose stat data spares re-reading files they have not
changed.

The kept index says which files a snapshot need not read, so a forged one would blind the fingerprint
and the delivered-tree watch: each write of it is sealed with the home's key (system/seal.py), and one
whose seal does not match is thrown away and the whole tree hashed again, not seeded from the user's index,
which the maker can write too.

git keeps timestamps to the second: a file rewritten within the second its entry was recorded, with
its size kept and its mtime set back, would look unchanged. So each snapshot notes the files whose
ctime (which no user can set back) was that recent, and the next snapshot hashes them again.

Outside git (or in a repository that is not the project's) the folder is walked and each file's
bytes hashed, cached by (size, mtime, ctime, inode) within the process.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

from ..storage import config
from ..system import seal
from ..system.log import log_error
from . import git
from .filehash import RACY_SECONDS, content_hash

# Outside git: version control, installed dependencies and caches, never the project's own files.
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".hypothesis"})
# More paths than this are hashed by letting git walk the whole tree, not by naming each one.
_NAMED = 2000
_RACY_NAME = ".racy"
_MAC_NAME = ".mac"
_local = threading.local()
def state_path(home: Path, goal_id: str, root: Path) -> Path:
    """Where a goal keeps its index for the work tree at ``root`` (an attempt's worktree has its own)."""
    tag = hashlib.sha256(str(Path(root).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return Path(home) / "indexes" / f"{goal_id}-{tag}"


def forget(home: Path, goal_id: str) -> None:
    """Remove a goal's indexes (it has ended)."""
    for path in (Path(home) / "indexes").glob(f"{goal_id}-*"):
        path.unlink(missing_ok=True)


@contextmanager
def session(root: Path, state: Path) -> Iterator[None]:
    """Snapshots of ``root`` taken in this thread inside keep their index in ``state`` between processes."""
    key = Path(root).resolve()
    states = _local.__dict__.setdefault("states", {})
    states[key] = Path(state)
    try:
        yield
    finally:
        states.pop(key, None)


@contextmanager
def pinned(root: Path) -> Iterator[None]:
    """Inside, ``take(root)`` in this thread gives the one snapshot first taken there: an iteration's checks
    are read from one listing of the tree."""
    key = Path(root).resolve()
    pins = _local.__dict__.setdefault("pins", {})
    pins[key] = None
    try:
        yield
    finally:
        pins.pop(key, None)


def take(root: Path) -> Snapshot:
    """The tree at ``root`` now (the pinned one inside ``pinned``)."""
    key = Path(root).resolve()
    pins = _local.__dict__.get("pins", {})
    if key in pins and pins[key] is not None:
        return pins[key]
    snap = _take(key, _local.__dict__.get("states", {}).get(key))
    if key in pins:
        pins[key] = snap
    return snap


def _take(root: Path, state: Path | None) -> Snapshot:
    try:
        repo = git.open_repo(root)
    except git.UnsafeRepository as exc:
        log_error("tree", str(exc))
        repo = None
    for _ in range(2 if state is not None else 1):
        if repo is None:
            break
        try:
            return GitSnapshot(root, repo, state)
        except _GitFailed as exc:
            log_error("tree", f"git could not list {root} ({exc})")
            if state is not None:
                state.unlink(missing_ok=True)  # a damaged index of ours: begin again from the user's
    return Snapshot(root)


class _GitFailed(Exception):
    pass


class Snapshot:
    """A folder outside git: every file but those in ``SKIP_DIRS``, hashed by its bytes."""

    tree: str | None = None
    off = "not in a git repository"

    def __init__(self, root: Path) -> None:
        self.root = root

    @cached_property
    def files(self) -> list[str]:
        """The project's files, relative and sorted: in git, tracked and untracked ones git does not ignore."""
        found = []
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            rel = os.path.relpath(folder, self.root)
            found.extend(n if rel == "." else f"{rel}/{n}".replace(os.sep, "/") for n in names)
        return sorted(found)

    @cached_property
    def changed(self) -> set[str] | None:
        """The files whose stat data moved since the snapshot before (new ones included); None: unknown."""
        return None

    @cached_property
    def ignored(self) -> list[str] | None:
        """What git ignores, a folder given once for all it holds; None outside git."""
        return None

    def added_since(self, tree: str) -> set[str] | None:
        """The files not in ``tree``, a git tree; None: unknown (outside git)."""
        return None

    @cached_property
    def ids(self) -> dict[str, str]:
        """Each file's content id: its hash as the fingerprint sees it."""
        ids = {}
        for rel in self.files:
            digest = content_hash(os.path.join(self.root, rel))
            if digest is not None:
                ids[rel] = digest
        return ids


class GitSnapshot(Snapshot):
    """The tree of a git work tree, read through an index of our own (see the module docstring)."""

    def __init__(self, root: Path, repo: git.Repo, state: Path | None) -> None:
        super().__init__(root)
        self.repo, self.off = repo, None
        prefix = os.path.relpath(root, repo.top).replace(os.sep, "/")
        self._prefix = "" if prefix == "." else prefix + "/"
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if state is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="goal-index-")
            state = Path(self._scratch.name) / "index"
        self._index = state
        self._racy = state.with_name(state.name + _RACY_NAME)
        self._mac = None if self._scratch else state.with_name(state.name + _MAC_NAME)
        forged = self._mac is not None and state.is_file() and self._sealed() != self._seal_now()
        if forged:  # begun again from nothing: every file hashed by its bytes
            log_error("tree", f"{state} was not as this home wrote it: the whole tree is hashed again")
            for path in (state, self._racy, self._mac):
                path.unlink(missing_ok=True)
        seeded = None if state.is_file() or forged else self._seed()
        self.env = {"GIT_INDEX_FILE": str(state), "GIT_LITERAL_PATHSPECS": "1"}
        changed = self._git("diff-files", "-z", "--name-only", "--no-renames")
        others = self._git("ls-files", "-z", "--others", "--exclude-standard")
        self._dirty = {os.fsdecode(p) for p in changed.split(b"\0") if p}
        self._new = {os.fsdecode(p) for p in others.split(b"\0") if p}
        self._recheck = self._read_racy()
        if seeded is not None and time.time() - seeded < RACY_SECONDS + 1:
            # The user's index was written moments ago: the files changed within its second are not vouched for.
            listed = (os.fsdecode(p) for p in self._git("ls-files", "-z").split(b"\0") if p)
            top = str(self.repo.top)
            self._recheck |= {p for p in listed if _recent(os.path.join(top, p), seeded - 1)}
        self._dirty |= self._recheck
        self._hashed = False

    def __del__(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()

    def _git(self, *args: str, input: bytes | None = None) -> bytes:
        done = self.repo.run(self.repo.top, *args, env=self.env, input=input)
        if not done.ok:
            raise _GitFailed(f"`git {args[0]}`: {(done.err.strip().splitlines() or ['no message'])[-1]}")
        return done.out

    def _seed(self) -> float | None:
        """Start from a copy of the user's index: its stat data spares hashing the files they have not changed.
        The time it was written, when there is one."""
        self._index.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        done = self.repo.run(self.repo.top, "rev-parse", "--git-path", "index")
        theirs = Path(os.fsdecode(done.out.strip())) if done.ok else None
        theirs = theirs if theirs is None or theirs.is_absolute() else self.repo.top / theirs
        self._racy.unlink(missing_ok=True)
        if theirs is not None and theirs.is_file():
            # with its time: git trusts the stat data of files older than the index, so a copy stamped now
            # would hide a same-size edit made in the second before (git's "racy clean" problem)
            shutil.copy2(theirs, self._index)
            return self._index.stat().st_mtime
        return None

    def _sealed(self) -> str | None:
        try:
            return self._mac.read_text(encoding="ascii").strip() if self._mac else None
        except (OSError, UnicodeDecodeError):
            return None

    def _seal_now(self) -> str:
        """The seal of the index and its list of racy files as they are now."""
        try:
            parts = [self._index.read_bytes(), self._racy.read_bytes() if self._racy.exists() else b""]
        except OSError:
            return ""
        return seal.mac_of_bytes(self._index.parent.parent, f"indexes/{self._index.name}", *parts)

    def _reseal(self) -> None:
        """Seal the index after git wrote it (an unsealed index is only hashed again: never trusted)."""
        if self._mac is not None and self._index.is_file():
            os.chmod(self._index, 0o600)  # git makes it as the umask says; the home's files are the user's alone
            _write_private(self._mac, (self._seal_now() + "\n").encode("ascii"))

    def _read_racy(self) -> set[str]:
        try:
            return {os.fsdecode(p) for p in self._racy.read_bytes().split(b"\0") if p}
        except OSError:
            return set()

    def _mine(self, top_rel: str) -> str | None:
        """A path relative to the repository's top, relative to the root; None outside the root."""
        if not top_rel.startswith(self._prefix):
            return None
        return top_rel[len(self._prefix):].rstrip("/")

    @cached_property
    def files(self) -> list[str]:
        if self._hashed:
            return sorted(self.ids)
        entries = self._entries()
        new = {rel for p in self._new if (rel := self._mine(p))}
        gone = {rel for p in self._dirty if (rel := self._mine(p)) and not os.path.lexists(self.root / rel)}
        return sorted((set(entries) | new) - gone)

    @cached_property
    def changed(self) -> set[str] | None:
        return {rel for p in self._dirty | self._new if (rel := self._mine(p))}

    @cached_property
    def ignored(self) -> list[str] | None:
        done = self.repo.run(self.root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
        if not done.ok:
            return None
        return sorted(os.fsdecode(p).rstrip("/") for p in done.out.split(b"\0") if p)

    def _entries(self) -> dict[str, str]:
        """The index's files under the root: path -> content id (its blob id; a link's marked, a submodule "dir")."""
        text = self._git("ls-files", "-z", "-s").decode("utf-8", "surrogateescape")  # os.fsdecode, at once
        prefix, cut, found = self._prefix, len(self._prefix), {}
        for record in text.split("\0"):
            tab = record.find("\t")  # "MODE OID STAGE\tPATH"
            if tab < 0 or (cut and not record.startswith(prefix, tab + 1)):
                continue
            mode, oid = record[:6], record[7:record.index(" ", 7)]
            found[record[tab + 1 + cut:]] = (oid if mode[:4] == "1006" or mode == "100755" else
                                             "dir" if mode == "160000" else "link:" + oid)
        return found

    def added_since(self, tree: str) -> set[str] | None:
        """The files under the root that are not in ``tree`` (a git tree of the whole work tree); None when
        git cannot say."""
        self.ids  # noqa: B018 - the index brought up to the tree
        done = self.repo.run(self.root, "diff-index", "-z", "--cached", "--name-only", "--no-renames",
                             "--diff-filter=A", "--relative", tree, "--", env=self.env)
        return {os.fsdecode(p) for p in done.out.split(b"\0") if p} if done.ok and not self.off else None

    def _hash(self) -> None:
        """Bring the index up to the work tree: the changed and new files hashed and stored as blobs."""
        if self._hashed:
            return
        self._hashed = True
        paths = sorted(p for p in self._dirty | self._new if not p.endswith("/"))
        size = sum(_size(self.repo.top / p) for p in paths)
        limit = config.env_settings().checkpoint_max_mb
        if size > limit << 20:
            self.off = (f"the untracked and changed files ({size / (1 << 20):.0f} MB) are above the {limit} MB a "
                        "checkpoint may store; ignore the bulky ones in .gitignore or raise "
                        "GOAL_CONVERGENCE_CHECKPOINT_MAX_MB")
            return
        try:
            if paths and (len(paths) > _NAMED or not self._add("-A", paths)):
                self._git("add", "-A", "--", ".")
            # A file rewritten within the second git recorded it keeps its stat data: hash those again by content.
            again = [p for p in sorted(self._recheck) if os.path.lexists(self.repo.top / p)]
            if len(again) > _NAMED:  # a whole checkout written moments ago: every file, not each named
                self._git("add", "--renormalize", "--", ".")
            elif again and not self._add("--renormalize", again):
                raise _GitFailed("`git add --renormalize` failed")
        except _GitFailed as exc:
            self._index.unlink(missing_ok=True)  # begun again from the user's index next time
            _stale(self._index.with_name(self._index.name + ".lock"))
            self.off = f"the snapshot could not be written: {exc}"
            return
        racy = [p for p in paths if _recent(os.path.join(self.repo.top, p), time.time() - RACY_SECONDS)]
        if racy or self._racy.exists():
            _write_private(self._racy, b"".join(os.fsencode(p) + b"\0" for p in racy))
        self._reseal()

    def _add(self, how: str, paths: list[str]) -> bool:
        """``git add HOW`` of named paths; False when git refuses one (a path beyond a symlink, say)."""
        data = b"".join(os.fsencode(p) + b"\0" for p in paths)
        return self.repo.run(self.repo.top, "add", how, "--pathspec-from-file=-", "--pathspec-file-nul",
                             env=self.env, input=data).ok

    @cached_property
    def ids(self) -> dict[str, str]:
        self._hash()
        entries = self._entries()
        for p in self._new:
            rel = self._mine(p)
            if rel is not None and (p.endswith("/") or self.off):
                entries[rel] = content_hash(str(self.root / rel)) or "dir"
        if self.off:  # over the size limit: the changed files by their bytes, not stored
            for p in self._dirty:
                rel = self._mine(p)
                if rel is not None:
                    digest = content_hash(str(self.root / rel))
                    entries.pop(rel, None) if digest is None else entries.__setitem__(rel, digest)
        return entries

    @cached_property
    def tree(self) -> str | None:  # type: ignore[override]
        """The tree object of the whole work tree (tracked and untracked files, ignored ones left out);
        None when it cannot be stored (``off`` says why)."""
        self.ids  # noqa: B018 - hashes what changed
        if self.off:
            return None
        written = self._git("write-tree").decode().strip()
        self._reseal()  # write-tree keeps its cache of trees in the index
        return written


def _size(path: Path) -> int:
    try:
        st = os.lstat(path)
    except OSError:
        return 0  # deleted: nothing to store
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _recent(path: str, since: float) -> bool:
    """Whether the file's inode changed at or after ``since`` (seconds)."""
    try:
        return os.lstat(path).st_ctime >= since
    except OSError:
        return False


def _write_private(path: Path, data: bytes) -> None:
    """A file of ours written whole, 0600, never through a link; no fsync: a lost one costs one full hash."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _stale(lock: Path) -> None:
    """Remove a lock a killed git left on one of our indexes (a live git holds its lock for moments)."""
    try:
        if time.time() - lock.stat().st_mtime > 60:
            lock.unlink()
    except OSError:
        pass
