"""Bringing the goal index (index.py) up to date with the goal files, without the models.

Only the goal files whose stamp changed since the index was written are read again, as JSON (a
stale index at 10,000 goals must not cost 10,000 validations), each checked for the fields a
summary takes (``index.check``); one that cannot give a summary is quarantined. `goal list`, the
hooks (dispatch.py, when the fast path found the index stale) and the store all come through here.
"""

from __future__ import annotations

import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..errors import FILESYSTEM_ERRNOS, CorruptFile, GoalNotFound
from . import files, index, seal

# A write's temp file lives for milliseconds; one this old was left by a killed writer.
STALE_TEMP_SECONDS = 600
Moved = list[tuple[Path, str]]  # quarantined files: where each is now, and why


def summaries(root: Path, quarantined: Moved) -> list[dict[str, Any]]:
    """Every goal's summary from an index brought up to date; the files quarantined on the way are
    added to ``quarantined``."""
    try:
        files.folder(root, "goals")
    except OSError as exc:  # a home we may not write, without a goals folder yet: it holds no goal
        if exc.errno not in FILESYSTEM_ERRNOS:
            raise
        return []
    on_disk, temps = index.scan(root)
    entries = index.cached(root)
    stale = index.changed(entries, on_disk)
    if not stale and entries.keys() == on_disk.keys():
        if not index.sessions_dir(root).is_dir():
            try:
                index.sync_bindings(root, entries)
            except OSError as exc:  # kept by the next command that can write
                if exc.errno not in FILESYSTEM_ERRNOS:
                    raise
        return list(entries.values())
    _remove_temps(root, temps)
    entries = {gid: e for gid, e in entries.items() if gid in on_disk}
    for gid in stale:
        entries.pop(gid, None)
        found = _summarise(root, gid, quarantined)
        if found is not None:
            entries[gid] = found
    try:
        write(root, entries)
    except OSError as exc:  # a home we may not write is still one we can read: the index is kept next time
        if exc.errno not in FILESYSTEM_ERRNOS:
            raise
    return list(entries.values())


def write(root: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Write the whole index, then make the binding files say what it says."""
    path = index.index_path(root)
    files.folder(root, "goals")
    with files.lock(root, path):
        files.write_json(path, {"goals": entries})
    index.sync_bindings(root, entries)


def _summarise(root: Path, goal_id: str, quarantined: Moved) -> dict[str, Any] | None:
    path = root / "goals" / f"{goal_id}.json"

    def parse(text: str) -> dict[str, Any]:
        doc = files.parse_document(path, text)
        tampered = seal.goal_problem(root, goal_id, text, doc)
        try:
            index.check(doc, goal_id)
        except ValueError as exc:
            raise CorruptFile(f"{path} is not a valid Goal: {exc}") from None
        return index.summary(doc, index.file_stamp(path), tampered)

    try:
        with files.lock(root, path, write=False):
            return files.read_as(root, path, parse, "goal")
    except CorruptFile as exc:
        quarantined.append((exc.moved_to or path, exc.reason))
    except (GoalNotFound, FileNotFoundError):
        pass  # removed since the folder was listed
    return None


def _remove_temps(root: Path, temps: list[tuple[str, int]]) -> None:
    """Temp files of writes that were killed before their rename: nothing will ever read them."""
    cutoff = time.time_ns() - STALE_TEMP_SECONDS * 10**9
    for name, mtime in temps:
        if mtime < cutoff:
            with suppress(OSError):  # a read-only home keeps them until a command can write
                (root / "goals" / name).unlink(missing_ok=True)
