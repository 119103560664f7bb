"""A goal's own git index of its project's tree, kept under the home between processes (snapshot.py reads
the tree through it): where it lives, its seal, the files its stat data cannot yet vouch for, and its
entries, parsed once and then brought up to date path by path.

The kept index says which files a snapshot need not read, so a forged one would blind the fingerprint and
the delivered-tree watch. Each time git writes it, its entries are kept beside it (``.entries``) with the
index's inode, size, mtime and ctime as written, sealed with the home's key (system/seal.py). Any write of
the index moves its ctime, which no user can set back: so while its stat data is what the sealed file says,
the index is as this home wrote it and holds those entries, and a new process reads them instead of
parsing git's listing of the index. An index the entries do not vouch for is thrown away.

The entries of a big tree take megabytes, and an iteration changes a few: so they are kept as a base, dumped
whole now and then (``.base-`` and its digest, which the sealed file names), and the paths changed since, which
are all the sealed file holds. A write costs what changed, and reading costs what it did.

git keeps timestamps to the second: a file rewritten within the second its entry was recorded, with its
size kept and its mtime set back, would look unchanged. So the files whose ctime was that recent when
they were hashed are listed as racy (in the sealed entries), and the next snapshot compares their bytes
with the index's blob ids; only those that differ go back to git.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..system import seal
from .filehash import RACY_SECONDS, open_regular, write_private

_ENTRIES_NAME, _BASE_NAME = ".entries", ".base-"
_UNVOUCHED = "its sealed entries do not vouch for it"
_MAX_CHANGES = 2000  # paths changed since the base: past this many (and a tenth of it), the base is dumped again
# `git ls-files -z` in this format (git 2.38 on): each entry's mode, its id and its path, each a field of its own.
FORMAT = "--format=%(objectmode)%x00%(objectname)%x00%(path)"
_REGULAR = frozenset({"100644", "100755"})  # the modes whose content id is the blob id alone
# Where an entry of that listing begins, after the NUL that ends the path before it: no path holds a NUL, and only a
# mode is six octal digits followed by an id, so nothing else in the listing matches.
_ENTRY = re.compile(rb"\0(?=[0-7]{6}\0[0-9a-f]{40}(?:[0-9a-f]{24})?\0)")
_PART = 1 << 20  # the bytes of the listing split at once
# `git ls-files -s -z`, for an older git: "MODE OID STAGE\tPATH\0"
_RECORD = re.compile(r"(\d{6}) ([0-9a-f]+) \d\t([^\0]*)\0")
_lock = threading.Lock()


@dataclass
class _Known:
    """An index as this process last wrote or read it: its stat data, and its entries by path from the top."""

    sig: tuple[int, int, int, int]
    entries: dict[str, str]
    racy: set[str]
    # What the entries file holds, when this process wrote or read it: the sha256 and size of the base it names,
    # and the entries changed since (None: a path gone).
    base: tuple[str, int] | None = None
    changes: dict[str, str | None] | None = None
    size: int = 0  # how many entries the base holds


_known: dict[Path, _Known] = {}


def state_path(home: Path, goal_id: str, root: Path) -> Path:
    """Where a goal keeps its index for the work tree at ``root`` (an attempt's worktree has its own)."""
    tag = hashlib.sha256(str(Path(root).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return Path(home) / "indexes" / f"{goal_id}-{tag}"


def forget(home: Path, goal_id: str) -> None:
    """Remove a goal's indexes (it has ended)."""
    for path in (Path(home) / "indexes").glob(f"{goal_id}-*"):
        path.unlink(missing_ok=True)


def parse(listing: bytes, formatted: bool) -> dict[str, str]:
    """``git ls-files -z`` output, in ``FORMAT`` or else ``-s``: path -> content id, its blob id (a link's marked
    "link:", a submodule's "dir")."""
    if not formatted:
        return {path: _content_id(mode, oid) for mode, oid, path in _RECORD.findall(listing.decode(
            "utf-8", "surrogateescape"))}
    # Split in C, a megabyte at a time (whole, a million entries' text and fields held 180 MB more at once);
    # when every file is a regular one, no Python step a file.
    found: dict[str, str] = {}
    at, view = 0, memoryview(listing)
    while at < len(listing):
        cut = _ENTRY.search(listing, at + _PART) if at + _PART < len(listing) else None
        end = cut.start() + 1 if cut else len(listing)
        parts = str(view[at:end], "utf-8", "surrogateescape").split("\0")
        modes, oids, paths = parts[0:-1:3], parts[1::3], parts[2::3]
        found.update(zip(paths, oids if _REGULAR.issuperset(modes) else map(_content_id, modes, oids)))
        at = end
    return found


# `git ls-files -z --debug`: each path, then its recorded stat data, which begins with the NUL (no path holds one).
_STAT = re.compile(rb"\0  ctime: \d+:[^\n]*\n(?:  [^\n]*\n){3}  size: [^\n]*\tflags: [0-9a-f]+\n")


def recorded_since(listing: bytes, since: int) -> set[str] | None:
    """The paths of ``git ls-files -z --debug`` output whose recorded ctime is ``since`` (seconds) or later; None
    when the listing is not as this version reads it. One search for such a ctime (a number at least ``since``,
    digit by digit), and each path read back to the end of the stat data before it: a listing of a million
    entries, nearly all older, costs that search, not a Python step an entry."""
    digits = str(since)
    later = [digits[:i] + f"[{int(d) + 1}-9]" + r"\d" * (len(digits) - i - 1) for i, d in enumerate(digits) if d != "9"]
    at_least = re.compile(rb"\0  ctime: (?:%s):" % "|".join([digits, *later, rf"[1-9]\d{{{len(digits)},}}"]).encode())
    found = set()
    for hit in at_least.finditer(listing):
        before = listing.rfind(b"\0", 0, hit.start())
        stat = _STAT.match(listing, before) if before >= 0 else None
        if before >= 0 and stat is None:
            return None
        found.add(listing[stat.end() if stat else 0:hit.start()].decode("utf-8", "surrogateescape"))
    return found


def _content_id(mode: str, oid: str) -> str:
    return oid if mode[:4] == "1006" or mode == "100755" else "dir" if mode == "160000" else "link:" + oid


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


def differs(path: Path, oid: str | None) -> bool:
    """Whether a file's bytes are not the blob ``oid`` (a link, or a file a filter would change, differs)."""
    return oid is None or oid.startswith(("link:", "dir")) or blob_id(str(path), oid) != oid


class KeptIndex:
    """The index file at ``path`` and (when ``sealed``) its entries and racy list, sealed, beside it."""

    def __init__(self, path: Path, sealed: bool) -> None:
        self.path, self._sealed = path, sealed
        self._kept = path.with_name(path.name + _ENTRIES_NAME)

    def _stat(self) -> os.stat_result | None:
        try:
            return os.stat(self.path)
        except OSError:
            return None

    def _sig(self, st: os.stat_result | None = None) -> tuple[int, int, int, int] | None:
        st = st or self._stat()
        return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _mine(self) -> _Known | None:
        """What this process knows of the index, when nobody wrote it since."""
        with _lock:
            known = _known.get(self.path)
        return known if known is not None and known.sig == self._sig() else None

    def forged(self) -> str | None:
        """Why the index is there but not as this home wrote it (its sealed entries do not vouch for it, or are
        not there), then removed, to be begun again; None when it is as written, or not there."""
        if not self._sealed or not self.path.is_file() or self._mine() is not None:
            return None
        why = self._load()
        if why is not None:
            self.drop()
        return why

    def drop(self) -> None:
        """Remove the index and its entries (damaged, or not to be trusted): the next snapshot begins again."""
        with _lock:
            _known.pop(self.path, None)
        self.path.unlink(missing_ok=True)
        self._kept.unlink(missing_ok=True)
        self._drop_bases()

    def entries(self, listing: Callable[[], dict[str, str]] | None) -> dict[str, str] | None:
        """The index's entries as this process last saw them, else ``listing()`` (git's, parsed) remembered; None
        when neither is at hand."""
        known = self._mine()
        if known is not None:
            return known.entries
        if listing is None:
            return None
        sig = self._sig()  # before the listing: a write after it leaves what is remembered stale, never wrong
        entries = listing()
        if self._sealed and sig is not None:
            with _lock:
                _known[self.path] = _Known(sig, entries, set())
        return entries

    def wrote(self, entries: dict[str, str], hashed: tuple[Path, Iterable[str]] | None = None,
              changed: tuple[dict[str, str], Iterable[str]] | None = None) -> None:
        """git wrote the index and ``entries`` are what it now holds: remember both, and keep the entries sealed
        beside it. ``hashed``: the work tree's top and the files just hashed, of which those changed within
        RACY_SECONDS are listed as racy (None: the list stays as it was). ``changed``: (entries before, the only
        paths whose entries may differ from them), so that only those are kept when this process kept the
        entries before."""
        if not self._sealed:  # a throw-away index is not remembered
            return
        with _lock:
            before = _known.get(self.path)  # what this process last wrote: the list as it was, whoever wrote since
        racy = set(before.racy) if before is not None else set()
        if hashed is not None:
            top, paths = hashed
            since = time.time() - RACY_SECONDS
            racy = {p for p in paths if recent(os.path.join(top, p), since)}
        st = self._stat()
        if st is not None and stat.S_IMODE(st.st_mode) != 0o600:
            os.chmod(self.path, 0o600)  # git makes it as the umask says; the home's files are the user's alone
            st = self._stat()  # (a chmod moves the ctime)
        sig = self._sig(st)
        if sig is None or before is not None and before.base and (before.sig, before.entries, before.racy) == \
                (sig, entries, racy):
            return  # nothing git or this process changed since the entries were last kept
        known = _Known(sig, entries, racy)
        since, paths = changed or (None, ())
        if before is not None and before.base and before.changes is not None and \
                (before.entries is entries or before.entries is since):
            known.base, known.size, known.changes = before.base, before.size, dict(before.changes)
            if before.entries is not entries:
                known.changes.update((path, entries.get(path)) for path in paths)
        if known.changes is None or len(known.changes) > max(_MAX_CHANGES, known.size // 10):
            dumped = marshal.dumps(entries)
            known.base, known.size, known.changes = (hashlib.sha256(dumped).hexdigest(), len(dumped)), len(entries), {}
            write_private(self._base(known.base[0]), dumped)
        assert known.base is not None
        with _lock:
            _known[self.path] = known
        head = json.dumps([list(sig), sorted(racy), *known.base]).encode("utf-8", "surrogateescape")
        changes = marshal.dumps(known.changes)
        write_private(self._kept, self._seal(head, changes).encode("ascii") + b"\n" + head + b"\n" + changes)
        if before is None or before.base != known.base:
            self._drop_bases(but=known.base[0])

    def _base(self, digest: str) -> Path:
        return self.path.with_name(f"{self.path.name}{_BASE_NAME}{digest[:16]}")

    def _drop_bases(self, but: str = "") -> None:
        """Remove the bases this index no longer names (all but ``but``'s)."""
        keep = self._base(but).name if but else None
        for old in self.path.parent.glob(f"{self.path.name}{_BASE_NAME}*"):
            if old.name != keep:
                old.unlink(missing_ok=True)

    def _seal(self, head: bytes, changes: bytes) -> str:
        return seal.mac_of_bytes(self.path.parent.parent, f"indexes/{self._kept.name}", head, changes)

    def _load(self) -> str | None:
        """Take the kept entries (as ``wrote`` left them) when the index's stat data is still as they say; None
        when it is, else why not. The seal binds that stat data, which any write moves (the ctime), so the index
        is as this home wrote it; and it binds the base's digest, so the base is as this home dumped it."""
        try:
            with open(self._kept, "rb") as fh:
                mac, head, dumped = fh.read().split(b"\n", 2)
        except FileNotFoundError:  # an index kept by a version before the sealed entries: begun again once
            return "it has no sealed entries beside it (kept by an earlier version, or they were removed)"
        except (OSError, ValueError):
            return _UNVOUCHED
        try:
            if mac.decode("ascii") != self._seal(head, dumped):
                return _UNVOUCHED
            if len(found := json.loads(head)) == 2:  # sealed whole, by a version before the base
                return "its sealed entries were kept by an earlier version"
            sig, racy, base, size = found
            if tuple(sig) != self._sig():
                return _UNVOUCHED
            with open_regular(str(self._base(base)), follow=False) as fh:
                whole = fh.read(size + 1)
            if len(whole) != size or hashlib.sha256(whole).hexdigest() != base:
                return _UNVOUCHED
            # sealed by this home, or bound to the seal by its digest: what wrote() dumped
            entries, changes = marshal.loads(whole), marshal.loads(dumped)
        except (OSError, ValueError, TypeError, EOFError):
            return _UNVOUCHED
        if not isinstance(entries, dict) or not isinstance(changes, dict):
            return _UNVOUCHED
        count = len(entries)
        for path, oid in changes.items():
            if oid is None:
                entries.pop(path, None)
            else:
                entries[path] = oid
        with _lock:
            _known[self.path] = _Known(tuple(sig), entries, set(racy), (base, size), changes, count)
        return None

    def racy(self) -> set[str]:
        """The files (from the top) hashed within RACY_SECONDS of their last change, as this process knows them."""
        known = self._mine()
        return set(known.racy) if known is not None else set()

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
