"""What the project's files hold, as one hash, and what changed since a commit.

``tree_fingerprint`` covers tracked files and untracked files git does not ignore, by content:
it changes when a file's bytes change and not when a file is only touched. Outside a git
repository it walks the folder instead, skipping VCS, dependency and cache folders. Each reads the
snapshot of the tree (snapshot.py), one per iteration.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..system import pathscan
from ..system.log import log_error
from . import filehash, git, snapshot
from .snapshot import SKIP_DIRS

__all__ = ["SKIP_DIRS"]
# What tools write as they run, never the project's work: a maker that changed nothing but ran the tests
# (bytecode, a test runner's or linter's cache, a coverage data file) has not changed the tree.
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", "htmlcov"})
_CACHE_FILE = re.compile(r"(^|/)(\.coverage(\.[^/]*)?|coverage\.xml|coverage\.json|lcov\.info)$|\.py[co]$")
# Both in one search, for the fingerprint's pass over every file.
_CACHE = re.compile(_CACHE_FILE.pattern + "|(^|/)(" + "|".join(map(re.escape, sorted(CACHE_DIRS))) + ")/")
# Every path _CACHE finds holds one of these: only the paths that do are tried against it, found by one search
# of all the paths joined (a pass of the regex engine, not a step of Python a file).
_CACHE_HINT = re.compile("|".join(map(re.escape, sorted(CACHE_DIRS | {".pyc", ".pyo", "coverage", "lcov.info"}))))
_DIFF_LIMIT = 2048


def hash_file(path: Path) -> str | None:
    """sha256 of a regular file's bytes, or None when it is missing or unreadable."""
    return filehash.hash_file(path)


def _repo(root: Path) -> git.Repo | None:
    """The project's repository, None outside git or when it is not the project's own (then logged,
    and the project is read as a plain folder)."""
    try:
        return git.open_repo(root)
    except git.UnsafeRepository as exc:
        log_error("tree", str(exc))
        return None


def _git(root: Path, *args: str) -> git.Result | None:
    repo = _repo(root)
    return None if repo is None else repo.run(root, *args)


def list_files(root: Path) -> list[str]:
    """The project's files, relative and sorted: in git, tracked ones and untracked ones git does not
    ignore; outside git, every file but those in ``SKIP_DIRS``. Read from the snapshot (snapshot.py)."""
    return snapshot.take(root).files


def file_hash(root: Path, rel: str) -> str | None:
    """The sha256 of one project file's bytes (a link by its target), cached by stat; None if absent."""
    return filehash.content_hash(os.path.join(root, rel))


def ignored_entries(root: Path) -> list[str] | None:
    """What git ignores in the work tree, a folder given once for all it holds; None outside git."""
    return snapshot.take(root).ignored


def is_cache(rel: str) -> bool:
    """Whether a project path is a tool's cache or bytecode (``CACHE_DIRS``, ``*.pyc``, ``.coverage``)."""
    return bool(_CACHE.search(rel))


_IDS_A_PART = 1 << 14


def tree_fingerprint(root: Path) -> str:
    """sha256 over (relative path, content id) of the project's files, caches and bytecode left out. The
    content id is git's blob id in git (the snapshot's index), a sha256 of the bytes outside it."""
    ids = snapshot.take(Path(root)).ids
    keys = sorted(ids)  # in git's order already, but for the few added: a sort that finds the run is quick
    paths = pathscan.Paths(keys)
    caches = set(paths.picked(paths.holding(_CACHE_HINT), _CACHE.search))
    if caches:
        keys = [rel for rel in keys if rel not in caches]
        paths = pathscan.Paths(keys)
    # The paths, then their ids: no path is empty or holds NUL, so the two NULs between them mark the one place
    # (the paths' text ends with the first). Hashed a part at a time, not joined whole: at a million files the
    # whole text and its bytes would hold about 150 MB more at once.
    digest = hashlib.sha256(memoryview(paths.text.encode("utf-8", "surrogateescape"))[1:])
    for at in range(0, max(len(keys), 1), _IDS_A_PART):  # one part at least: the NUL that ends the paths
        part = "\0" + "\0".join(map(ids.__getitem__, keys[at:at + _IDS_A_PART]))
        digest.update(part.encode("utf-8", "surrogateescape"))  # a link's target outside git may not be UTF-8
    return digest.hexdigest()


def changed_since(root: Path, since_ns: int, before: Iterable[str] = ()) -> list[str]:
    """The project's files (caches left out) whose inode changed at or after ``since_ns`` (wall clock, ns),
    and those of ``before`` (an earlier ``list_files``) that are gone.

    That is their ctime: the kernel sets it on every write, rename or chmod, and no user can set it
    back, so a file swapped in and out again is seen even though its content ends as it began. Only the
    files whose stat data moved since the snapshot before are looked at (all of them outside git)."""
    snap = snapshot.take(Path(root))
    now = snap.ids  # every file listed now, by path (the fingerprint's, so no second listing)
    candidates = now.keys() if snap.changed is None else {rel for rel in snap.changed if rel in now}
    found = {rel for rel in before if rel not in now}
    for rel in candidates:
        try:
            if os.lstat(os.path.join(snap.root, rel)).st_ctime_ns >= since_ns:
                found.add(rel)
        except OSError:
            found.add(rel)  # gone since it was listed: it moved
    return sorted(rel for rel in found if not is_cache(rel))


def added_since(root: Path, start: str) -> set[str] | None:
    """The project's files that are not in ``start`` (a git tree of the work tree); None: unknown."""
    return snapshot.take(Path(root)).added_since(start) if start else None


def head_commit(root: Path) -> str | None:
    done = _git(Path(root), "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if done is None or not done.ok:
        return None
    return done.out.decode().strip() or None


def diff_stat(root: Path, base: str | None) -> str:
    """``git diff --stat`` of the work tree against ``base`` (else HEAD), untracked files noted.

    Bounded to about 2 KB. Empty outside a git repository."""
    root = Path(root)
    repo = _repo(root)
    if repo is None:
        return ""
    parts = []
    against = base or "HEAD"
    done = repo.run(root, "diff", "--stat", "--no-color", "--no-ext-diff", "--no-textconv", against, "--", ".",
                    limit=1 << 20)
    if done.ok:
        parts.append(done.out.decode("utf-8", "replace").rstrip())
    elif base is not None:
        reason = done.err.strip().splitlines()[:1] or ["git did not run"]
        parts.append(f"(no diff against {base}: {' '.join(reason)})")
    others = repo.run(root, "ls-files", "-z", "--others", "--exclude-standard")
    if others.ok:
        untracked = [os.fsdecode(p) for p in others.out.split(b"\0") if p]
        if untracked:
            parts.append(f"{len(untracked)} untracked file(s): " + ", ".join(untracked))
    text = "\n".join(p for p in parts if p)
    if len(text) > _DIFF_LIMIT:
        text = text[: _DIFF_LIMIT - 15].rstrip() + "\n… (truncated)"
    return text
