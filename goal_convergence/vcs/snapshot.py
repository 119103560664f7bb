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

The kept index (keptindex.py) is sealed with the home's key; one whose seal does not match is thrown away
and the whole tree hashed again, not seeded from the user's index, which the maker can write too. Its
entries are kept beside it, sealed, so no process parses git's listing of it again; only the paths git
hashed again are asked for, and a snapshot costs git's stat pass and walk, not a parse of every entry.
Files hashed within the second of their last change are listed as racy, and the next snapshot compares
their bytes with the index's blob ids.

Outside git (or in a repository that is not the project's) the folder is walked and each file's bytes
hashed, cached by (size, mtime, ctime, inode) within the process and, in a session, between processes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Set as AbstractSet
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

from ..storage import config
from ..system.log import log_error
from . import filehash, git, keptindex
from .filehash import RACY_SECONDS, content_hash
from .keptindex import forget, state_path
from .listing import Listed

__all__ = ["forget", "state_path"]

# Outside git: version control, installed dependencies and caches, never the project's own files.
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".hypothesis"})
# More paths than this are hashed by letting git walk the whole tree, not by naming each one.
_NAMED = 2000
_local = threading.local()
_OLD_GIT = False  # whether this git lists the index only as `ls-files -s` prints it


@contextmanager
def session(root: Path, state: Path) -> Iterator[None]:
    """Snapshots of ``root`` taken in this thread inside keep their index in ``state`` between processes, and
    the digests of files hashed by their bytes beside it (filehash.kept)."""
    key = Path(root).resolve()
    states = _local.__dict__.setdefault("states", {})
    states[key] = Path(state)
    try:
        with filehash.kept(Path(state).with_name(Path(state).name + ".hashes"), key):
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
    snap = _take(key, _local.__dict__.get("states", {}).get(key), key in pins)
    if key in pins:
        pins[key] = snap
    return snap


def _take(root: Path, state: Path | None, pinned: bool = False) -> Snapshot:
    try:
        repo = git.open_repo(root)
    except git.UnsafeRepository as exc:
        log_error("tree", str(exc))
        repo = None
    for _ in range(2 if state is not None else 1):
        if repo is None:
            break
        try:
            return GitSnapshot(root, repo, state, pinned)
        except _GitFailed as exc:
            log_error("tree", f"git could not list {root} ({exc})")
            if state is not None:
                keptindex.KeptIndex(state, sealed=True).drop()  # damaged: begin again from the user's
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
        return sorted(self.listed)  # in git, its order but for the new files: a sort that finds the run is quick

    @cached_property
    def listed(self) -> AbstractSet[str]:
        """The files, in no order and not hashed: what is here, for the cost of listing it."""
        found = set()
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            rel = os.path.relpath(folder, self.root)
            found.update(n if rel == "." else f"{rel}/{n}".replace(os.sep, "/") for n in names)
        return found

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
    def ids(self) -> Mapping[str, str]:
        """Each file's content id: its hash as the fingerprint sees it (read-only)."""
        ids = {}
        for rel in self.files:
            digest = content_hash(os.path.join(self.root, rel))
            if digest is not None:
                ids[rel] = digest
        return ids


class GitSnapshot(Snapshot):
    """The tree of a git work tree, read through an index of our own (see the module docstring)."""

    def __init__(self, root: Path, repo: git.Repo, state: Path | None, pinned: bool = False) -> None:
        """``pinned``: the iteration's snapshot, which the guard reads too: what git ignores is listed beside."""
        super().__init__(root)
        self.repo, self.off = repo, None
        prefix = os.path.relpath(root, repo.top).replace(os.sep, "/")
        self._prefix = "" if prefix == "." else prefix + "/"
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if state is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="goal-index-")
            state = Path(self._scratch.name) / "index"
        self._kept = keptindex.KeptIndex(state, sealed=self._scratch is None)
        seeded = None if state.is_file() else self._seed()
        # A user's index written moments ago does not vouch for the files it recorded in that second (a same-size
        # rewrite then, the mtime set back, keeps its stat data): git lists their ctimes beside the passes.
        since = int(seeded) - 1 if seeded is not None and time.time() - seeded < RACY_SECONDS + 1 else None
        self.env = {"GIT_INDEX_FILE": str(state), "GIT_LITERAL_PATHSPECS": "1"}
        calls = {"changed": lambda: self._git("diff-files", "-z", "--name-only", "--no-renames"),
                 "others": lambda: self._git("ls-files", "-z", "--others", "--exclude-standard")}
        if pinned:
            calls["ignored"] = self._ignored
        if seeded is not None:  # a copy of the user's index, not read yet: listed beside the passes, which do not
            calls["listed"] = lambda: self._kept.entries(self._list)  # write it (then only what they find, again)
        if since is not None:
            calls["recorded"] = lambda: self._git("ls-files", "-z", "--debug")
        forged: list[str | None] = []  # why a kept index's sealed entries do not vouch for it: read beside the passes
        vouch = [] if seeded is not None else [lambda: forged.append(self._kept.forged())]
        try:
            found = dict(zip(calls, git.at_once(*calls.values(), *vouch)))
        except _GitFailed:
            if not any(forged):  # git may fail on a forged index: then it is begun again below, never from the user's
                raise
        if any(forged):  # the passes again, over no index: every file hashed by its bytes
            log_error("tree", f"{state}: {forged[0]}: the whole tree is hashed again")
            found = dict(zip(calls, git.at_once(*calls.values())))
        changed, others = found["changed"], found["others"]
        if pinned:
            self.__dict__["ignored"] = found["ignored"]  # the cached_property, filled
        self._dirty = {os.fsdecode(p) for p in changed.split(b"\0") if p}
        self._new = {os.fsdecode(p) for p in others.split(b"\0") if p}
        self._recheck = self._kept.racy()
        self._top: dict[str, str] | None = found.get("listed")  # the index's entries, by path from the top, once read
        if since is not None:
            if (recorded := keptindex.recorded_since(found["recorded"], since)) is None:
                raise _GitFailed("`git ls-files --debug` printed stat data this version cannot read")
            self._recheck |= recorded
        self._hashed = False
        self._added: dict[str, set[str] | None] = {}

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
        index = self._kept.path
        index.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        done = self.repo.run(self.repo.top, "rev-parse", "--git-path", "index")
        theirs = Path(os.fsdecode(done.out.strip())) if done.ok else None
        theirs = theirs if theirs is None or theirs.is_absolute() else self.repo.top / theirs
        self._kept.drop()  # an earlier index's racy list says nothing of this one
        if theirs is not None and theirs.is_file():
            # with its time: git trusts the stat data of files older than the index, so a copy stamped now
            # would hide a same-size edit made in the second before (git's "racy clean" problem)
            shutil.copy2(theirs, index)
            return index.stat().st_mtime
        return None

    def _top_entries(self) -> dict[str, str]:
        """The index's entries, by path from the top (as this process last saw them, else parsed)."""
        if self._top is None:
            self._top = self._kept.entries(None)
        if self._top is None:
            self._top = self._kept.entries(self._list) or {}
        return self._top

    def _mine(self, top_rel: str) -> str | None:
        """A path relative to the repository's top, relative to the root; None outside the root."""
        if not top_rel.startswith(self._prefix):
            return None
        return top_rel[len(self._prefix):].rstrip("/")

    @cached_property
    def listed(self) -> AbstractSet[str]:
        if self._hashed:
            return self.ids.keys()
        gone = {rel for p in self._dirty if (rel := self._mine(p)) and not os.path.lexists(self.root / rel)}
        return Listed(self._entries(), {rel for p in self._new if (rel := self._mine(p))} - gone, gone)

    @cached_property
    def changed(self) -> set[str] | None:
        return {rel for p in self._dirty | self._new | self._recheck if (rel := self._mine(p))}

    @cached_property
    def ignored(self) -> list[str] | None:
        return self._ignored()

    def _ignored(self) -> list[str] | None:
        done = self.repo.run(self.root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
        if not done.ok:
            return None
        return sorted(os.fsdecode(p).rstrip("/") for p in done.out.split(b"\0") if p)

    def _entries(self) -> Mapping[str, str]:
        """The index's files under the root: path -> content id (its blob id; a link's marked, a submodule "dir").
        At the top, the kept entries themselves, read-only: not a copy of every entry a look."""
        entries = self._top_entries()
        if not self._prefix:
            return MappingProxyType(entries)
        cut = len(self._prefix)
        return {path[cut:]: oid for path, oid in entries.items() if path.startswith(self._prefix)}

    def added_since(self, tree: str) -> set[str] | None:
        """The files under the root that are not in ``tree`` (a git tree of the whole work tree); None when
        git cannot say."""
        if tree not in self._added:
            self.ids  # noqa: B018 - the index brought up to the tree
            # Against the checkpoint's tree once written: git reads the folders the trees differ in, not every entry.
            against = ["diff-tree", "-r", tree, now] if (now := self.__dict__.get("tree")) else \
                ["diff-index", "--cached", tree]
            done = self.repo.run(self.root, *against[:1], "-z", "--name-only", "--no-renames", "--diff-filter=A",
                                 "--relative", *against[1:], "--", env=self.env)
            self._added[tree] = ({os.fsdecode(p) for p in done.out.split(b"\0") if p}
                                 if done.ok and not self.off else None)
        found = self._added[tree]
        return None if found is None else set(found)

    def _hash(self) -> None:
        """Bring the index up to the work tree: the changed and new files hashed and stored as blobs, and the
        racy ones whose bytes are not the index's blob hashed again."""
        if self._hashed:
            return
        self._hashed = True
        paths = sorted(p for p in self._dirty | self._new if not p.endswith("/"))
        size = sum(filehash.regular_size(self.repo.top / p) for p in paths)
        limit = config.env_settings().checkpoint_max_mb
        if size > limit << 20:
            self.off = (f"the untracked and changed files ({size / (1 << 20):.0f} MB) are above the {limit} MB a "
                        "checkpoint may store; ignore the bulky ones in .gitignore or raise "
                        "GOAL_CONVERGENCE_CHECKPOINT_MAX_MB")
            return
        try:
            known = self._top if self._top is not None else self._kept.entries(None)
            whole = known is None or len(paths) > _NAMED  # a new process reads the whole index once, after git
            if paths and (len(paths) > _NAMED or not self._add("-A", paths)):
                self._git("add", "-A", "--", ".")
                whole = True
            entries = self._after(known or {}, paths, whole)
            # A file rewritten within the second git recorded it keeps its stat data: its bytes tell.
            again = [p for p in sorted(self._recheck - set(paths)) if os.path.lexists(self.repo.top / p)]
            moved = again if len(again) > _NAMED else \
                [p for p in again if keptindex.differs(self.repo.top / p, entries.get(p))]
            if len(moved) > _NAMED:  # a whole checkout written moments ago: every file, not each named
                self._git("add", "--renormalize", "--", ".")
            elif moved and not self._add("--renormalize", moved):
                raise _GitFailed("`git add --renormalize` failed")
            self._top = self._after(entries, moved, len(moved) > _NAMED)
        except _GitFailed as exc:
            self._kept.drop()  # begun again from the user's index next time
            self._kept.stale_lock()
            self.off = f"the snapshot could not be written: {exc}"
            return
        named = known is not None and not whole and len(moved) <= _NAMED  # else every entry was listed again
        self._kept.wrote(self._top, (self.repo.top, [*paths, *again]), (known, [*paths, *moved]) if named else None)

    def _after(self, entries: dict[str, str], paths: list[str], whole: bool) -> dict[str, str]:
        """The index's entries once git hashed ``paths`` (every file, when ``whole``): those asked again."""
        if whole:
            return self._kept.entries(self._list) or {}
        if not paths:
            return entries
        entries = dict(entries)
        for path in paths:
            entries.pop(path, None)
        entries.update(self._list(*paths))
        return entries

    def _list(self, *paths: str) -> dict[str, str]:
        """The index's entries (of ``paths`` only, when named), by path from the top."""
        global _OLD_GIT
        named = ["--", *paths] if paths else []
        if not _OLD_GIT:
            done = self.repo.run(self.repo.top, "ls-files", "-z", keptindex.FORMAT, *named, env=self.env)
            if done.ok:
                return keptindex.parse(done.out, formatted=True)
            _OLD_GIT = done.code == 129  # git before 2.38 does not know the option: its usage error
        return keptindex.parse(self._git("ls-files", "-z", "-s", *named), formatted=False)

    def _add(self, how: str, paths: list[str]) -> bool:
        """Named paths into the index; False when git refuses one (a path beyond a symlink, say). ``-A``: each as
        it is now, added, updated or removed, by `git update-index`, which unlike `git add` walks no folder and
        hashes no names (a fifth less on a big index); else ``git add HOW``."""
        data = b"".join(os.fsencode(p) + b"\0" for p in paths)
        args = ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"] if how == "-A" else \
            ["add", how, "--pathspec-from-file=-", "--pathspec-file-nul"]
        return self.repo.run(self.repo.top, *args, env=self.env, input=data).ok

    @cached_property
    def ids(self) -> Mapping[str, str]:
        self._hash()
        entries = self._entries()
        extra = [rel for p in self._new if (rel := self._mine(p)) is not None and (p.endswith("/") or self.off)]
        if not extra and not self.off:
            return entries
        entries = dict(entries)
        for rel in extra:
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
        entries = self._top_entries()
        written = self._git("write-tree").decode().strip()
        self._kept.wrote(entries)  # write-tree keeps its cache of trees in the index, its entries as they were
        return written
