"""The bulky evidence of each iteration, kept beside the goal file instead of in it.

A goal file is read, validated and rewritten at every stop, so whatever it holds per iteration is
paid for at every later stop. Each iteration's record stays in the goal file, complete in every
field the loop reads back (numbers, fingerprints, census, integrity, verdict, decision, costs),
and the goal file stays the one source of truth for state and counters. What only a person or the
oracle reads about the latest runs, the output heads and tails and the failure lines past the
first, moves to ``goals/<goalId>.d/iteration-<n>.json`` once a record carries more than
``INLINE_CHARS`` of it; loading a goal puts it back into the last ``HYDRATED`` iterations, which
is all that reads it (the oracle's recent iterations, the status page, the Stop hook's reason,
triage, the integrity guard's previous run).

Records under the limit (files written by 0.1.0 among them) are left as they are, so a goal that
is loaded and saved without a change is saved unchanged. Only this module and store.py touch
these files; the functions take and give plain documents (camelCase, as on disk).
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..system import files

BULKY = ("outputHead", "outputTail", "failureLines")
INLINE_CHARS = 2_000  # the evidence one iteration may keep in the goal file itself
HYDRATED = 3  # the latest iterations that get their evidence back on load
KEPT_FAILURE_CHARS = 300  # the first failure line stays in the record, for what reads only that


def folder(goal_path: Path) -> Path:
    return goal_path.with_name(goal_path.stem + ".d")


def _file(goal_path: Path, number: int) -> Path:
    return folder(goal_path) / f"iteration-{number}.json"


def _size(condition: dict[str, Any]) -> int:
    return (len(condition.get("outputHead") or "") + len(condition.get("outputTail") or "")
            + sum(len(line) for line in condition.get("failureLines") or []))


def externalize(goal_path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """The document to write: ``doc`` with the bulky evidence of its large records moved to side
    files (written first, so a goal file never points at evidence that is not there)."""
    compact, moved = [], False
    for it in doc.get("history") or []:
        conditions = it.get("conditions") or []
        if sum(_size(c) for c in conditions) <= INLINE_CHARS:
            compact.append(it)
            continue
        path = _file(goal_path, it["number"])
        if not path.exists():  # an iteration never changes once recorded: its file is written once
            _write(path, {"conditions": [{k: c.get(k) for k in BULKY} for c in conditions]})
        compact.append({**it, "conditions": [_compact(c) for c in conditions]})
        moved = True
    return {**doc, "history": compact} if moved else doc


def _compact(condition: dict[str, Any]) -> dict[str, Any]:
    first = (condition.get("failureLines") or [])[:1]
    return {**condition, "outputHead": "", "outputTail": "", "failureLines": [line[:KEPT_FAILURE_CHARS] for line in first]}


def hydrate(goal_path: Path, doc: Any) -> Any:
    """``doc`` as read, with the evidence of its latest iterations put back from their side files.
    A missing or unreadable side file leaves the compact record: evidence is never worth failing a load."""
    history = doc.get("history") if isinstance(doc, dict) else None
    if not isinstance(history, list) or not _ours(folder(goal_path)):
        return doc
    for it in history[-HYDRATED:]:
        if not isinstance(it, dict) or type(it.get("number")) is not int or not isinstance(it.get("conditions"), list):
            continue  # the models refuse it next, and say why
        side_file = _file(goal_path, it["number"])
        try:
            kept = json.loads(files.read_trusted(side_file))["conditions"]
        except files.Refused as exc:  # planted, not written by us: moved aside, never shown as evidence
            with suppress(OSError):
                files.quarantine(goal_path.parent.parent, side_file, f"{exc}: goal-convergence did not write it")
            continue
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        if isinstance(kept, list) and len(kept) == len(it["conditions"]):
            it["conditions"] = [{**c, **{k: v for k, v in (side or {}).items() if k in BULKY}}
                                if isinstance(c, dict) and isinstance(side, dict) else c
                                for c, side in zip(it["conditions"], kept, strict=True)]
    return doc


def _ours(path: Path) -> bool:
    """Whether the evidence folder is one we made: a planted symlink or someone else's is not read."""
    try:
        return files.untrusted(os.lstat(path), folder=True) is None
    except OSError:
        return False


def as_loaded(full: dict[str, Any], written: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
    """What loading ``written`` back would give, known without reading it: ``full`` is the document
    it was made from by ``externalize``, so its latest records are what ``hydrate`` puts back and the
    older ones are as written. Also the positions of the older records that were compacted."""
    history, kept = full.get("history") or [], written.get("history") or []
    cut = max(len(kept) - HYDRATED, 0)
    compacted = [n for n in range(cut) if kept[n] is not history[n]]  # externalize keeps the rest as they were
    return ({**written, "history": kept[:cut] + history[cut:]} if compacted else full), compacted


def stamps(goal_path: Path, numbers: list[int]) -> list[list[int] | None]:
    """Size, mtime and inode of the side files of iterations ``numbers`` (None for a missing one):
    what a load read from them is still what they hold while these are unchanged."""
    found: list[list[int] | None] = []
    for number in numbers:
        try:
            st = os.stat(_file(goal_path, number))
        except OSError:
            found.append(None)
        else:
            found.append([st.st_size, st.st_mtime_ns, st.st_ino])
    return found


def _write(path: Path, doc: dict[str, Any]) -> None:
    files.private_folder(path.parent)  # never written through a planted symlink
    files.write_atomic(path, json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
