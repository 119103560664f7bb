"""The top-level modules installed where this Python looks: importlib.metadata.packages_distributions' names,
kept by the stat data of every file and folder that answer is read from.

packages_distributions lists each ``sys.path`` folder (a zip file's names when it is one), and in each
``*.dist-info`` or ``*.egg-info`` there (``EGG-INFO`` in a ``.egg`` folder) reads top_level.txt, else the file
list (RECORD, installed-files.txt, SOURCES.txt: a path object for each of tens of thousands of files, some
0.3 s on every run), and METADATA or PKG-INFO. The key below is the listing of those folders (the metadata
folders by name) and the stat data of each of them and of every file read there, all read again at every call
(about 2 ms). A package installed or removed, a folder put on sys.path, changes a listing; a top_level.txt or
RECORD edited moves its ctime, which no one can set back. Only what was still the same after it was read,
with no file's ctime so recent that a second write in the same clock tick could hide behind it, is kept: in the
process, and in the home under its key's seal (a maker who can write the home cannot make one), so a later
process pays only the key. A finder other than the standard one answering for distributions reads what the
key does not see: then nothing is kept.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import json
import os
import stat as stat_module
import sys
import time

from ..system import files, index, seal
from ..system.log import log_error

NAME = "installed-names.json"
# Within this many seconds of its ctime a file's stat data cannot vouch for it (vcs/filehash.py's rule).
RACY_SECONDS = 2
# How many environments' names the home keeps (one a Python, or a sys.path).
KEPT_KEYS = 4
# What packages_distributions may read in a distribution's metadata folder (3.11 to 3.13).
_READ = ("top_level.txt", "RECORD", "installed-files.txt", "SOURCES.txt", "METADATA", "PKG-INFO")
_known: tuple[str, frozenset[str]] | None = None
_last: frozenset[str] | None = None  # the answer last given in this process


def names(fresh: bool = True) -> frozenset[str]:
    """Every top-level module name a distribution installed on ``sys.path`` provides, as
    ``importlib.metadata.packages_distributions()`` gives them; empty when it fails on a broken one.
    ``fresh=False``: as last read in this process, when they were (a question asked once a file)."""
    global _last
    if fresh or _last is None:
        _last = _names()
    return _last


def _names() -> frozenset[str]:
    global _known
    key, settled = _key()
    if key is None:  # another finder answers too: read once a process, as before there was a key
        if _known is None or _known[0] != "":
            _known = ("", _compute())
        return _known[1]
    if _known is not None and _known[0] == key:
        return _known[1]
    kept = _read_kept(key)
    if kept is not None:
        _known = (key, kept)
        return kept
    found = _compute()
    if settled and _key() == (key, True):  # nothing moved while it was read
        _known = (key, found)
        _write_kept(key, found)
    return found


def _compute() -> frozenset[str]:
    from importlib.metadata import packages_distributions

    importlib.invalidate_caches()  # its listings of sys.path, kept by each folder's mtime: one tick may hide a change
    try:
        return frozenset(packages_distributions())
    except Exception:  # a broken distribution's metadata must not stop a check
        return frozenset()


def _key() -> tuple[str | None, bool]:
    """(digest of the stat data of everything packages_distributions reads, or None when something else
    answers it; whether all of it is old enough to vouch for what was read)."""
    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [importlib.machinery.PathFinder]:
        return None, False
    ctimes: list[int] = []

    def stat(path: str) -> list[int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        if stat_module.S_ISREG(st.st_mode):  # a folder's listing is read again each time, not vouched for
            ctimes.append(st.st_ctime_ns)
        return [st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]

    # A relative entry ("" for python -c) is the working folder's: its stat data and listing are in the key.
    parts: list[object] = [sys.version, sys.executable, sys.path]
    for entry in sys.path:
        root = entry or "."
        parts.append(stat(root))
        try:
            children = os.listdir(root)
        except OSError:
            continue  # a zip file or nothing: its own stat data above is all there is
        egg = os.path.basename(root).lower().endswith(".egg")
        for child in sorted(children):
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info"):
                folder = os.path.join(root, child)
                parts.append([child, stat(folder), *(stat(os.path.join(folder, n)) for n in _READ)])
    digest = hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode())
    return digest.hexdigest(), time.time_ns() - max(ctimes, default=0) > RACY_SECONDS * 10**9


def _kept() -> dict[str, list[str]]:
    """The names kept in the home, by key; none when the home has no key yet or its seal does not hold."""
    home = index.home()
    try:
        if not (home / seal.KEY).is_file():
            return {}
        mac, _, data = (home / NAME).read_bytes().partition(b"\n")
        if mac.decode("ascii") != seal.mac_of_bytes(home, NAME, data):
            return {}
        doc = json.loads(data)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, list)} if isinstance(doc, dict) else {}


def _read_kept(key: str) -> frozenset[str] | None:
    found = _kept().get(key)
    return None if found is None else frozenset(str(n) for n in found)


def _write_kept(key: str, found: frozenset[str]) -> None:
    """Kept beside the last few other keys' (another Python, a profiler's sys.path), the oldest dropped."""
    home = index.home()
    if not (home / seal.KEY).is_file():
        return  # the home's key is made by the store, never as a side effect of a look-up
    kept = {k: v for k, v in _kept().items() if k != key}
    doc = dict(list(kept.items())[-(KEPT_KEYS - 1):] + [(key, sorted(found))])
    data = json.dumps(doc, separators=(",", ":")).encode()
    try:
        files.write_atomic(home / NAME, seal.mac_of_bytes(home, NAME, data).encode("ascii") + b"\n" + data,
                           durable=False)
    except Exception as exc:  # a home we cannot write: the names are read again next time
        log_error("installed", f"the installed module names could not be kept in {home / NAME}: {exc}")
