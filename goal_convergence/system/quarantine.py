"""Quarantined files as the user sees them: listed until dismissed.

The store moves a file it cannot read to ``<home>/quarantine/<name>.<stamp>`` beside a
``.reason.txt`` (its original path on the first line, the reason after). Reported once when it
happens, it would otherwise be forgotten, so `goal list`, `goal triage list` and
`/goal-convergence:goal list` show every entry until `goal triage dismiss <entry>` moves it (and its
reason) into ``quarantine/dismissed/``: kept, for a restore by hand, but no longer listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GoalNotFound
from . import files
from .log import log_error

REASON = ".reason.txt"


@dataclass
class Entry:
    name: str  # the file's name in quarantine/, what `goal triage dismiss` takes
    original: str
    reason: str


def _folder(home: Path) -> Path:
    return home / "quarantine"


def entries(home: Path) -> list[Entry]:
    """The entries not dismissed, oldest first."""
    try:
        notes = sorted(p for p in _folder(home).iterdir() if p.name.endswith(REASON) and p.is_file())
    except OSError:
        return []
    found = []
    for note in notes:
        try:
            original, _, reason = note.read_text(encoding="utf-8", errors="replace").partition("\n")
        except OSError:
            continue
        found.append(Entry(note.name[:-len(REASON)], original.strip(), " ".join(reason.split())))
    return found


def with_notice(answer: dict[str, Any], moved: list[tuple[Path, str]]) -> dict[str, Any]:
    """A hook's answer that also tells the session of the files just moved aside (and logs them)."""
    if not moved:
        return answer
    notes = [f"goal-convergence: moved a broken file aside to {path} ({reason}); `goal list` shows it until "
             f"`goal triage dismiss {path.name}`" for path, reason in moved]
    log_error("quarantine", "\n".join(notes))
    return {**answer, "systemMessage": "\n".join(filter(None, [answer.get("systemMessage"), *notes]))}


def is_entry(home: Path, name: str) -> bool:
    return os.path.basename(name) == name and (_folder(home) / (name + REASON)).is_file()


def dismiss(home: Path, name: str) -> Entry:
    """Stop listing entry ``name``; the file and its reason stay in quarantine/dismissed/."""
    match = [e for e in entries(home) if e.name == name]
    if not match:
        raise GoalNotFound(f"no quarantined file {name!r}; `goal list` shows the ones there are")
    dismissed = files.private_folder(_folder(home) / "dismissed")  # never moved through a planted link
    for part in (name, name + REASON):
        if (_folder(home) / part).exists():
            os.replace(_folder(home) / part, dismissed / part)
    return match[0]


def notice(home: Path) -> str:
    """The lines that list the entries after a table, or "" when there are none."""
    found = entries(home)
    if not found:
        return ""
    lines = [f"quarantined (unreadable files moved aside to {_folder(home)}; restore one by hand, or "
             f"`goal triage dismiss ENTRY` to stop listing it):"]
    lines += [f"  {e.name}  from {e.original}: {e.reason[:300]}" for e in found]
    return "\n".join(lines)
