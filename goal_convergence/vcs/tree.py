"""What the project's files hold, as one hash, and what changed since a commit.

``tree_fingerprint`` covers tracked files and untracked files git does not ignore, by content:
it changes when a file's bytes change and not when a file is only touched. Outside a git
repository it walks the folder instead, skipping VCS, dependency and cache folders.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from ..system.log import log_error
from . import git

# Outside git: version control, installed dependencies and caches, never the project's own files.
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".hypothesis"})
# What tools write as they run, never the project's work: a maker that changed nothing but ran the tests
# (bytecode, a test runner's or linter's cache, a coverage data file) has not changed the tree.
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", "htmlcov"})
_CACHE_FILE = re.compile(r"(^|/)(\.coverage(\.[^/]*)?|coverage\.xml|coverage\.json|lcov\.info)$|\.py[co]$")
_DIFF_LIMIT = 2048
# A file written twice within one timestamp tick keeps its size and mtime: caching the hash of a
# file that recent could hide the second write (git's "racy clean" problem), so it is not cached.
_RACY_NS = 2_000_000_000
# Entries, roughly 200 bytes each: a long-lived process watching a huge tree stays bounded.
_MAX_CACHE = 500_000

_cache: dict[str, tuple[tuple[int, int, int], str]] = {}
_cache_lock = threading.Lock()


def hash_file(path: Path) -> str | None:
    """sha256 of a regular file's bytes, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


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


def _git_files(root: Path) -> list[str] | None:
    done = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if done is None or not done.ok:
        return None
    return sorted({os.fsdecode(p) for p in done.out.split(b"\0") if p})


def _walk_files(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        rel = os.path.relpath(folder, root)
        found.extend(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/") for f in files)
    return sorted(found)


def _content_hash(path: str) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None  # a tracked file deleted from the work tree
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if not stat.S_ISREG(st.st_mode):
        return "dir"  # a submodule or nested repository: its own commits are not this tree
    key = (st.st_size, st.st_mtime_ns, st.st_ino)
    with _cache_lock:
        cached = _cache.get(path)
    if cached and cached[0] == key:
        return cached[1]
    digest = hash_file(Path(path)) or "unreadable"
    if time.time_ns() - st.st_mtime_ns > _RACY_NS:
        with _cache_lock:
            if len(_cache) >= _MAX_CACHE:
                _cache.clear()
            _cache[path] = (key, digest)
    return digest


def list_files(root: Path) -> list[str]:
    """The project's files, relative and sorted: in git, tracked ones and untracked ones git does not
    ignore; outside git, every file but those in ``SKIP_DIRS``."""
    files = _git_files(root)
    return _walk_files(root) if files is None else files


def file_hash(root: Path, rel: str) -> str | None:
    """The content hash of one project file, as the fingerprint sees it (cached by stat); None if absent."""
    return _content_hash(os.path.join(root, rel))


def ignored_entries(root: Path) -> list[str] | None:
    """What git ignores in the work tree, a folder given once for all it holds; None outside git."""
    done = _git(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
    if done is None or not done.ok:
        return None
    return sorted(os.fsdecode(p).rstrip("/") for p in done.out.split(b"\0") if p)


def is_cache(rel: str) -> bool:
    """Whether a project path is a tool's cache or bytecode (``CACHE_DIRS``, ``*.pyc``, ``.coverage``)."""
    return bool(_CACHE_FILE.search(rel)) or not CACHE_DIRS.isdisjoint(rel.split("/")[:-1])


def tree_fingerprint(root: Path) -> str:
    """sha256 over (relative path, content hash) of the project's files, caches and bytecode left out."""
    root = Path(root).resolve()
    files = [rel for rel in list_files(root) if not is_cache(rel)]
    total = hashlib.sha256()
    for rel in files:
        digest = _content_hash(os.path.join(root, rel))
        if digest is not None:
            total.update(f"{rel}\0{digest}\n".encode("utf-8", "surrogateescape"))
    return total.hexdigest()


def changed_since(root: Path, since_ns: int, before: Iterable[str] = ()) -> list[str]:
    """The project's files (caches left out) whose inode changed at or after ``since_ns`` (wall clock, ns),
    and those of ``before`` (an earlier ``present_files``) that are gone.

    That is their ctime: the kernel sets it on every write, rename or chmod, and no user can set it
    back, so a file swapped in and out again is seen even though its content ends as it began."""
    root = Path(root).resolve()
    found = set(before)
    for rel in list_files(root):
        try:
            ctime = os.lstat(os.path.join(root, rel)).st_ctime_ns
        except OSError:
            continue  # a tracked file missing from the work tree: gone if it was there before
        found.discard(rel)
        if ctime >= since_ns:
            found.add(rel)
    return sorted(rel for rel in found if not is_cache(rel))


def present_files(root: Path) -> list[str]:
    """``list_files`` without the tracked files missing from the work tree."""
    return [rel for rel in list_files(root) if os.path.lexists(os.path.join(root, rel))]


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
