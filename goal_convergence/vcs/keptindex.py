"""A goal's own git index of its project's tree, kept under the home between processes (snapshot.py reads
the tree through it): where it lives, its seal, the files its stat data cannot yet vouch for, and its
entries, parsed once a process and then brought up to date path by path.

The kept index says which files a snapshot need not read, so a forged one would blind the fingerprint and
the delivered-tree watch: each write of it is sealed with the home's key (system/seal.py), and one whose
seal does not match is thrown away. Within one process the seal is checked once: the index's inode,
size, mtime and ctime as this process last wrote or read it say nobody has written it since (a write
moves the ctime, which no user can set back).

git keeps timestamps to the second: a file rewritten within the second its entry was recorded, with its
size kept and its mtime set back, would look unchanged. So the files whose ctime was that recent when
they were hashed are listed (``.racy``), and the next snapshot compares their bytes with the index's blob
ids; only those that differ go back to git.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..system import seal
from .filehash import RACY_SECONDS, open_regular, write_private

_RACY_NAME = ".racy"
_MAC_NAME = ".mac"
# `git ls-files -s -z`: "MODE OID STAGE\tPATH\0"
_RECORD = re.compile(r"(\d{6}) ([0-9a-f]+) \d\t([^\0]*)\0")
_lock = threading.Lock()


@dataclass
class _Known:
    """An index as this process last wrote or read it: its stat data, and its entries by path from the top."""

    sig: tuple[int, int, int, int]
    entries: dict[str, str]
    racy: set[str]


_known: dict[Path, _Known] = {}


def state_path(home: Path, goal_id: str, root: Path) -> Path:
    """Where a goal keeps its index for the work tree at ``root`` (an attempt's worktree has its own)."""
    tag = hashlib.sha256(str(Path(root).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return Path(home) / "indexes" / f"{goal_id}-{tag}"


def forget(home: Path, goal_id: str) -> None:
    """Remove a goal's indexes (it has ended)."""
    for path in (Path(home) / "indexes").glob(f"{goal_id}-*"):
        path.unlink(missing_ok=True)


def parse(text: str) -> dict[str, str]:
    """``git ls-files -s -z`` output (decoded): path -> content id, its blob id (a link's marked "link:",
    a submodule's "dir")."""
    return {path: oid if mode[:4] == "1006" or mode == "100755" else "dir" if mode == "160000" else "link:" + oid
            for mode, oid, path in _RECORD.findall(text)}


def blob_id(path: str, like: str) -> str | None:
    """git's blob id of a regular file's bytes, in the hash ``like`` (an id) is in; None when it is not a
    regular file or cannot be read."""
    try:
        with open_regular(path, follow=False) as fh:
            size = os.fstat(fh.fileno()).st_size
            digest = hashlib.sha1() if len(like) == 40 else hashlib.sha256()
            digest.update(b"blob %d\0" % size)
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
            return digest.hexdigest()
    except OSError:
        return None


class KeptIndex:
    """The index file at ``path``, with its racy list and (when ``sealed``) its seal beside it."""

    def __init__(self, path: Path, sealed: bool) -> None:
        self.path = path
        self._racy = path.with_name(path.name + _RACY_NAME)
        self._mac = path.with_name(path.name + _MAC_NAME) if sealed else None

    def _sig(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _mine(self) -> _Known | None:
        """What this process knows of the index, when nobody wrote it since."""
        with _lock:
            known = _known.get(self.path)
        return known if known is not None and known.sig == self._sig() else None

    def forged(self) -> bool:
        """Whether the index is there but not as this home sealed it; if so it is removed, to be begun again."""
        if self._mac is None or not self.path.is_file() or self._mine() is not None:
            return False
        try:
            sealed = self._mac.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            sealed = None
        if sealed == self._seal_now():
            return False
        self.drop()
        self._mac.unlink(missing_ok=True)
        return True

    def drop(self) -> None:
        """Remove the index and its racy list (damaged, or not to be trusted): the next snapshot begins again."""
        with _lock:
            _known.pop(self.path, None)
        self.path.unlink(missing_ok=True)
        self._racy.unlink(missing_ok=True)

    def _seal_now(self) -> str:
        try:
            parts = [self.path.read_bytes(), self._racy.read_bytes() if self._racy.exists() else b""]
        except OSError:
            return ""
        return seal.mac_of_bytes(self.path.parent.parent, f"indexes/{self.path.name}", *parts)

    def entries(self, listing: Callable[[], bytes] | None) -> dict[str, str] | None:
        """The index's entries as this process last saw them, else parsed from ``listing()`` (``git ls-files
        -s -z`` of it) and remembered; None when neither is at hand."""
        known = self._mine()
        if known is not None:
            return known.entries
        if listing is None:
            return None
        sig = self._sig()  # before the listing: a write after it leaves what is remembered stale, never wrong
        entries = parse(listing().decode("utf-8", "surrogateescape"))
        if self._mac is not None and sig is not None:
            racy = self.racy()
            with _lock:
                _known[self.path] = _Known(sig, entries, racy)
        return entries

    def wrote(self, entries: dict[str, str], hashed: tuple[Path, Iterable[str]] | None = None) -> None:
        """git wrote the index and ``entries`` are what it now holds: seal it, and remember both. ``hashed``:
        the work tree's top and the files just hashed, of which those changed within RACY_SECONDS are listed
        as racy (None: the list stays as it was)."""
        with _lock:
            before = _known.get(self.path)  # what this process last wrote: the list as it was, whoever wrote since
        racy = set(before.racy) if before is not None else self.racy()
        if hashed is not None:
            top, paths = hashed
            since = time.time() - RACY_SECONDS
            racy = {p for p in paths if recent(os.path.join(top, p), since)}
            if racy or self._racy.exists():
                write_private(self._racy, b"".join(os.fsencode(p) + b"\0" for p in sorted(racy)))
        if self._mac is not None and self.path.is_file():
            os.chmod(self.path, 0o600)  # git makes it as the umask says; the home's files are the user's alone
            write_private(self._mac, (self._seal_now() + "\n").encode("ascii"))
        sig = self._sig() if self._mac is not None else None  # a throw-away index is not remembered
        with _lock:
            if sig is None:
                _known.pop(self.path, None)
            else:
                _known[self.path] = _Known(sig, entries, racy)

    def racy(self) -> set[str]:
        """The files (from the top) hashed within RACY_SECONDS of their last change: as this process listed
        them, or as the sealed list says."""
        known = self._mine()
        if known is not None:
            return set(known.racy)
        try:
            return {os.fsdecode(p) for p in self._racy.read_bytes().split(b"\0") if p}
        except OSError:
            return set()

    def stale_lock(self) -> None:
        """Remove a lock a killed git left on the index (a live git holds its lock for moments)."""
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            if time.time() - lock.stat().st_mtime > 60:
                lock.unlink()
        except OSError:
            pass


def recent(path: str, since: float) -> bool:
    """Whether the file's inode changed at or after ``since`` (seconds)."""
    try:
        return os.lstat(path).st_ctime >= since
    except OSError:
        return False
