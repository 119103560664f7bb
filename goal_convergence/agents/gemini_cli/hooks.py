"""What Gemini CLI's hooks do when a goal is involved: Claude Code's slow path (claude_code/hooks.py), with
Gemini's meter (transcript.py) and the goal recorded as held by a Gemini CLI session.

The input arrives already in Claude Code's terms (fast.py), so the iteration, the budgets, the integrity
guard, triage, pause and resume are the same code for both agents. What Gemini adds: a model with no
price is never counted as $0 and forgotten. Its tokens are charged, the hook says so in one line, and a
goal with a dollar budget but no token budget gets one (``hold_to_tokens``): what its dollars left would
buy at the dearest output price in the table, so the loop still stops on spend it cannot price.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...models import Goal
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
    """``handler`` with Gemini's meter; spend it could not price holds the goal to a token budget."""
    def handle(store: Store, hook_input: hooks.HookInput, summaries: hooks.Summaries) -> dict[str, Any]:
        answer = handler(store, hook_input, summaries, meter=_meter(told))
        goal_id = hooks.bound_goal_id(summaries, hook_input.session_id)
        if told and goal_id:
            store.update(Goal, goal_id, hold_to_tokens)
        return answer

    return handle


def _meter(told: list[str]) -> hooks.Meter:
    def read(path: str, offsets: dict[str, int], **kwargs: Any) -> transcript.GeminiReading:
        reading = transcript.read(path, offsets, **kwargs)
        if reading.unpriced:
            told.append(unpriced_line(reading.unpriced))
            log_error("transcript", told[-1])
        return reading

    return read


def unpriced_line(unpriced: dict[str, int]) -> str:
    names = ", ".join(f"{model} ({tokens} tokens)" for model, tokens in unpriced.items())
    return (f"goal-convergence: no price for {names}, so that spend is counted in tokens, not dollars, and the "
            f"goal is held to a token budget. Add the model's price to {cost.user_prices_path()} as "
            f'{{"<model>": {{"input": <USD per million tokens>, "output": <USD per million tokens>}}}}')


def hold_to_tokens(goal: Goal) -> Goal:
    """Give a goal with a dollar budget and no token budget the tokens its dollars left buy at the dearest
    output price there is: spend that no price counts must still end the loop."""
    b = goal.budget
    if b.max_tokens is None and b.max_dollars is not None:
        dearest = max(p.output for p in cost.table().values())
        left = max(0.0, b.max_dollars - goal.spent.dollars)
        b.max_tokens = max(1, goal.spent.tokens + int(left / dearest * 1e6))
    return goal
