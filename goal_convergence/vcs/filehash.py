"""Files hashed by their bytes, for trees outside git and the files the guard watches: a digest cached by the
file's stat data, within a process and, for a goal, between its processes (``kept``).

The cache trusts a file's stat data only once its ctime is old enough that a second write would move it
(a rewrite within the same tick, with the size kept and the mtime set back, is hashed again). A goal's kept
cache is sealed with the home's key: one not as this home wrote it is not read."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..system import files, seal
from ..system.log import log_error

# Within this many seconds of its ctime a file's stat data cannot vouch for it.
RACY_SECONDS = 2
# Outside git: the hashes of files by their stat data, bounded (roughly 200 bytes an entry).
_MAX_CACHE = 500_000
_cache: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_lock = threading.Lock()


def open_regular(path: str | Path, *, follow: bool = True) -> BinaryIO:
    """A regular file opened for reading; OSError for anything else. Opened without waiting, so a FIFO put in a
    file's place between a stat and the read (a maker's process can) is refused, not waited on for ever."""
    fd, _ = _open_regular(path, follow)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_regular(path: str | Path, follow: bool) -> tuple[int, os.stat_result]:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def hash_file(path: Path) -> str | None:
    """sha256 of a regular file's bytes, or None when it is missing, unreadable or not a regular file."""
    try:
        with open_regular(path) as f:
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
    with _lock:
        cached = _cache.get(path)
    if cached and cached[0] == _key(st):
        return cached[1]
    digest = hash_file(Path(path)) or "unreadable"
    _remember(path, st, digest)
    return digest


def read_hashed(path: str, most: int) -> tuple[bytes, str] | None:
    """A regular file's bytes and their sha256, read once, the digest cached as ``content_hash`` would cache it
    (so a goal's session keeps it for the next process); None past ``most`` bytes (then not read). OSError for a
    link, anything but a regular file, or a file that cannot be read."""
    fd, st = _open_regular(path, False)  # its stat data before the read: bytes newer than it are hashed again
    try:
        if st.st_size > most:
            return None
        parts = []
        while chunk := os.read(fd, st.st_size + 4096):  # to its end, should it grow meanwhile
            parts.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(parts)
    digest = hashlib.sha256(data).hexdigest()
    _remember(path, st, digest)
    return data, digest


def _key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _remember(path: str, st: os.stat_result, digest: str) -> None:
    """Cache a digest by the stat data it was read with, once its ctime is old enough to vouch for it."""
    if time.time_ns() - st.st_ctime_ns > RACY_SECONDS * 10**9:
        with _lock:
            if len(_cache) >= _MAX_CACHE:
                _cache.clear()
            _cache[path] = (_key(st), digest)


@contextmanager
def kept(path: Path, root: Path) -> Iterator[None]:
    """Inside, the digests of files under ``root`` cached in ``path`` (a goal's, under the home: its seal beside
    it) are known; what was hashed there meanwhile is written back on the way out."""
    home, name, prefix = path.parent.parent, f"indexes/{path.name}", os.path.join(root, "")
    mac = path.with_name(path.name + ".mac")
    try:
        data = path.read_bytes()
        ok = mac.read_text(encoding="ascii").strip() == seal.mac_of_bytes(home, name, data)
        known = {p: (tuple(k), d) for p, *k, d in json.loads(data)} if ok else {}
    except (OSError, ValueError, TypeError):
        known = {}
    with _lock:
        for p, entry in known.items():
            _cache.setdefault(p, entry)  # type: ignore[arg-type]
    try:
        yield
    finally:
        with _lock:
            mine = sorted((p, *k, d) for p, (k, d) in _cache.items() if p.startswith(prefix))
        if mine != sorted((p, *k, d) for p, (k, d) in known.items()):
            data = json.dumps(mine, separators=(",", ":")).encode()
            try:
                files.private_folder(path.parent)
                write_private(path, data)
                write_private(mac, (seal.mac_of_bytes(home, name, data) + "\n").encode("ascii"))
            except OSError as exc:  # a home we cannot write: hashed again next time
                log_error("tree", f"the hashes of {root} could not be kept in {path}: {exc}")


def regular_size(path: Path) -> int:
    """The bytes of a regular file; 0 for anything else, or nothing there (nothing to store)."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def write_private(path: Path, data: bytes) -> None:
    """A file of ours written whole, 0600, never through a link; no fsync: a lost one costs hashing again."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
