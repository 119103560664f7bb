"""What Gemini CLI's hooks do when a goal is involved: Claude Code's slow path (claude_code/hooks.py), with
Gemini's meter (transcript.py) and the goal recorded as held by a Gemini CLI session.

The input arrives already in Claude Code's terms (fast.py), so the iteration, the budgets, the integrity
guard, triage, pause and resume are the same code for both agents. A model with no price is never counted
as $0 and forgotten: its tokens are charged, the goal is held to a token budget (budget.hold_to_tokens,
through the maker's report), and the hook says so in one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...storage import cost
from ...storage.store import Store
from ...system.log import log_error
from ..claude_code import hooks
from . import transcript

AGENT = "gemini-cli"


def run(event: str, payload: dict[str, Any], store: Store | None = None) -> dict[str, Any]:
    """The answer, in Claude Code's form, to Gemini CLI's hook ``event`` (fast.py translates both ways)."""
    from .fast import EVENTS

    told: list[str] = []
    handlers = {"stop": _metered(hooks.on_stop, told), "session-end": _metered(hooks.on_session_end, told),
                "session-start": hooks.on_session_start,
                "prompt-expansion": lambda s, i, summaries: hooks.on_prompt_expansion(s, i, summaries, agent=AGENT)}
    answer = hooks.run(EVENTS[event], json.dumps(payload).encode(), store, handlers=handlers, agent="Gemini CLI")
    if told:
        answer["systemMessage"] = "\n".join(filter(None, [answer.get("systemMessage"), *dict.fromkeys(told)]))
    return answer


def _metered(handler: Callable[..., dict[str, Any]], told: list[str]) -> Callable[..., dict[str, Any]]:
    return lambda store, hook_input, summaries: handler(store, hook_input, summaries, meter=_meter(told))


def _meter(told: list[str]) -> hooks.Meter:
    def read(path: str, offsets: dict[str, int], **kwargs: Any) -> transcript.GeminiReading:
        reading = transcript.read(path, offsets, **kwargs)
        if reading.unpriced:
            told.append(cost.unpriced_note(reading.unpriced))
            log_error("transcript", told[-1])
        return reading

    return read
