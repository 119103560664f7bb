"""Files hashed by their bytes, for trees outside git: a digest cached by the file's stat data.

The cache trusts a file's stat data only once its ctime is old enough that a second write would move it
(a rewrite within the same tick, with the size kept and the mtime set back, is hashed again)."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from pathlib import Path

# Within this many seconds of its ctime a file's stat data cannot vouch for it.
RACY_SECONDS = 2
# Outside git: the hashes of files by their stat data, bounded (roughly 200 bytes an entry).
_MAX_CACHE = 500_000
_cache: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_lock = threading.Lock()


def hash_file(path: Path) -> str | None:
    """sha256 of a regular file's bytes, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def content_hash(path: str) -> str | None:
    """The hash of one file by its bytes (a link by its target, a folder as "dir"); None when absent.
    Cached by size, mtime, ctime and inode, and only once its ctime is old enough that a second write
    would move it."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if not stat.S_ISREG(st.st_mode):
        return "dir"  # a submodule or nested repository: its own commits are not this tree
    key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    with _lock:
        cached = _cache.get(path)
    if cached and cached[0] == key:
        return cached[1]
    digest = hash_file(Path(path)) or "unreadable"
    if time.time_ns() - st.st_ctime_ns > RACY_SECONDS * 10**9:
        with _lock:
            if len(_cache) >= _MAX_CACHE:
                _cache.clear()
            _cache[path] = (key, digest)
    return digest
