"""What a Codex CLI session spent, read from its rollout file (``$CODEX_HOME/sessions/.../rollout-*.jsonl``) a
little at a time, as the Claude Code meter reads its transcripts (agents/claude_code/transcript.py). The
Codex hooks meter a goal's session with it, and `goal run --maker codex` its headless turns.

Codex writes one ``token_usage_record`` line per model response, with that response's whole usage, and a
``turn_context`` line naming the model at the start of each turn. A line is written whole, so unlike
Claude Code's a response never straddles two reads: each read counts the complete lines after the
stored byte offset and stores where it stopped, and nothing is held back (``final`` changes nothing).
OpenAI's ``input_tokens`` include the cached ones, which are priced as cache reads; output tokens
include the reasoning tokens.

A model with no price in the table is not a silent $0: its tokens are counted (a token budget still
binds them), no dollars are, and ``note`` says so and how to add the price (hooks.py gives a goal
started on such a model a token budget). The path comes from outside (a hook's input): only a regular
file is read, at most ``MAX_READ`` bytes a call.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..errors import PriceUnknown
from ..models import parse_iso
from . import cost

MAX_READ = 256 << 20
_MARKS = (b'"token_usage_record"', b'"turn_context"')


@dataclass
class Reading:
    """As the Claude Code meter's: what was spent, the session's model, the offsets to store, and what to log."""

    dollars: float = 0.0
    tokens: int = 0
    model: str | None = None
    offsets: dict[str, int] = field(default_factory=dict)
    note: str | None = None


def read(path: str | Path, offsets: Mapping[str, int], *, since: datetime | None = None, final: bool = False,
         model: str | None = None) -> Reading:
    """What the session spent since ``offsets`` and the offsets to store next; ``model`` is the session's
    model when the part read names none (a read that starts after the turn's ``turn_context``). ``since``
    applies to a file not in ``offsets``: what it records from before then was not spent on the goal."""
    key = str(path)
    reading = Reading(offsets=dict(offsets))
    try:
        lines, end = _lines(Path(path), offsets.get(key, 0))
    except (OSError, ValueError) as exc:
        reading.note = (f"goal-convergence: did not read the Codex rollout {key!r} "
                        f"({getattr(exc, 'strerror', None) or exc}): the maker's spend there is not counted")
        return reading
    if lines is None:
        return reading
    reading.offsets[key] = end
    floor = None if key in offsets else since
    unpriced: dict[str, int] = {}
    for line in lines:
        entry = _entry(line)
        if entry is None:
            continue
        kind, payload = entry.get("type"), entry.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
            continue
        usage = payload.get("usage") if kind == "token_usage_record" else None
        if not isinstance(usage, dict) or (floor is not None and _before(entry, floor)):
            continue
        counts = usage_counts(usage)
        reading.tokens += sum(counts)
        reading.model = model or reading.model
        try:
            reading.dollars += cost.counts_cost(cost.applies(cost.price_for(model or "unknown"), counts), counts)
        except PriceUnknown:
            unpriced[model or "unknown"] = unpriced.get(model or "unknown", 0) + sum(counts)
    if unpriced:
        named = ", ".join(f"{m!r} ({n} tokens)" for m, n in unpriced.items())
        reading.note = (f"goal-convergence: no price for the Codex model {named}: its tokens count against the goal's "
                        f"token budget, not its dollars; add the price to {cost.user_prices_path()} as "
                        f'{{"MODEL": {{"input": <USD per million>, "output": <USD per million>}}}}')
    return reading


def usage_counts(usage: Mapping[str, object]) -> tuple[int, int, int, int, int]:
    """One response's tokens as cost.py counts them: (uncached input, cache writes, 0, cached input, output)."""
    def n(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    cached = min(n("cached_input_tokens"), n("input_tokens"))
    return (n("input_tokens") - cached, n("cache_write_input_tokens"), 0, cached, n("output_tokens"))


def _lines(path: Path, start: int) -> tuple[list[bytes] | None, int]:
    """The complete lines after ``start`` that may bill or name a model, and where the next read starts."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not hang the hook
    except FileNotFoundError:
        return None, start
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if start > info.st_size:  # replaced by a shorter file: read the new one whole
            start = 0
        data = os.pread(fd, min(info.st_size - start, MAX_READ), start)
    finally:
        os.close(fd)
    whole = data.rfind(b"\n") + 1  # a line still being written is read next time
    return [line for line in data[:whole].splitlines() if any(m in line for m in _MARKS)], start + whole


def _entry(line: bytes) -> dict | None:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def _before(entry: dict, floor: datetime) -> bool:
    stamp = entry.get("timestamp")
    try:
        return isinstance(stamp, str) and parse_iso(stamp) < floor
    except ValueError:
        return False
