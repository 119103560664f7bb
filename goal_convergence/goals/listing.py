"""`goal list`: the goals as the index summarises them (reindex.py), newest first, written out a
row at a time, as a table or as JSON.

No goal file is parsed unless it changed since the index was written, and neither the models nor
pydantic are imported: at 10,000 goals the list costs one read of the index and a stat a goal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..system import reindex
from ..system.index import OPEN_STATES
from ..system.text import clip, money, plural, state_words

# A summary is flat (index.summary): with this separator the C encoder writes its keys on lines of their
# own, four spaces in, the shape `json.dumps(rows, indent=2)` gives, which only the (slow) Python encoder
# writes; between the rows of a batch it writes "},\n    {", which no flat row holds (a string's newline
# is escaped), and which becomes the indented list's row separator.
_ROWS = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",\n    ", ": "))
BATCH = 256


def goals(root: Path, show_all: bool, quarantined: reindex.Moved) -> list[dict[str, Any]]:
    """The summaries of the open goals (or all of them), newest first; the goal files that changed
    since the index was written are read again, and the broken ones among them quarantined and
    added to ``quarantined``."""
    found = reindex.summaries(root, quarantined)
    found = found if show_all else open_only(found)
    found.sort(key=lambda s: s["createdAt"], reverse=True)
    for s in found:
        s.pop("stamp", None)  # the index's own business
    return found


def open_only(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in summaries if s["state"] in OPEN_STATES or s.get("tampered")]


def table(summaries: list[dict[str, Any]], show_all: bool = True) -> Iterator[str]:
    """The lines of the table a person reads: every goal of ``summaries``, or only the open ones; with none open,
    the most recent goal that ended, so that a goal that just converged is not met with "no goals"."""
    shown = summaries if show_all else open_only(summaries)
    if not shown:
        yield "no goals yet; start one with `goal new OBJECTIVE` (or `goal demo` to watch one)" if not summaries else (
            f"no open goals; the most recent, {summaries[0]['goalId']}, "
            f"{state_words(summaries[0]['state'], summaries[0]['stopReason'])}: "
            f"{clip(summaries[0]['objective'].replace(chr(10), ' '), 60)} "
            f"(`goal list --all` lists {plural(len(summaries), 'goal')})")
        return
    yield f"{'ID':<13} {'STATE':<9} {'ITER':>7} {'SPEND':>9}  OBJECTIVE"
    for s in shown:
        its = f"{s['iterations']}/{s['maxIterations'] or '∞'}"
        objective = s["objective"].replace("\n", " ")
        state = "tampered" if s.get("tampered") else s["state"]  # the file's own state is no news then
        yield f"{s['goalId']:<13} {state:<9} {its:>7} {money(s['dollars']):>9}  {objective[:70]}"


def as_json(summaries: list[dict[str, Any]]) -> Iterator[str]:
    """The text of ``json.dumps(summaries, indent=2, ensure_ascii=False)`` in blocks of lines, a batch of rows
    at a time."""
    if not summaries:
        yield "[]"
        return
    yield "["
    for start in range(0, len(summaries), BATCH):
        rows = _ROWS.encode(summaries[start:start + BATCH])[2:-2].replace("},\n    {", "\n  },\n  {\n    ")
        yield f"  {{\n    {rows}\n  }}{',' if start + BATCH < len(summaries) else ''}"
    yield "]"
