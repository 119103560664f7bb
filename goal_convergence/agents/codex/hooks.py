"""What Codex's hooks do when a goal is involved: the slow path behind fast.py.

Each event is Claude Code's (agents/claude_code/hooks.py), run on the fields Codex sends with the
session's spend read from its rollout (rollout.py), and its answer put in Codex's output contract:

- Stop: one iteration of the loop; a goal not done yet blocks the stop with ``decision: "block"``, whose
  ``reason`` (what is still wrong and the oracle's hint) Codex feeds the model as the next prompt.
- SessionStart: the open goals of the project (and a resumed session's goal clock restarted).
- UserPromptSubmit: a prompt that is a ``$goal`` command (the plugin's skill) is carried out here,
  its words as typed, and the result is handed to the model as additional context.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ...errors import InvalidInput, PriceUnknown, problems
from ...storage import config, cost, rollout
from ...storage.store import Store
from ...system import quarantine
from ..claude_code import control, naming
from ..claude_code import hooks as claude_hooks
from . import fast

AGENT = "codex"
# The token budget a goal gets when its maker's model has no price and none was asked for: its dollar
# budget cannot be counted, so the loop is bound by tokens instead (fails closed, never a silent $0).
FALLBACK_TOKENS = 2_000_000


class CodexInput(claude_hooks.HookInput):
    """The fields of Codex's hook input that the hooks use, beside Claude Code's."""

    prompt: str | None = None
    model: str | None = None


def run(event: str, data: bytes, store: Store | None = None) -> dict[str, Any]:
    try:
        hook_input = CodexInput.model_validate_json(data)
    except ValidationError as exc:
        raise InvalidInput(f"the Codex {event} hook got input it cannot use ({problems(exc, 1)}); "
                           f"is this Codex CLI?") from None
    config.env_settings()
    store = store or Store()
    summaries = store.summaries()
    answer = HANDLERS[event](store, hook_input, summaries)
    return fast.in_codex(naming.answer_in_session(quarantine.with_notice(answer, store.quarantined)))


def meter(hook_input: CodexInput) -> claude_hooks.Meter:
    """The rollout reader, with the session's model for reads that start after its turn's context line."""
    return functools.partial(rollout.read, model=hook_input.model)


def on_stop(store: Store, hook_input: CodexInput, summaries: claude_hooks.Summaries) -> dict[str, Any]:
    answer = claude_hooks.on_stop(store, hook_input, summaries, meter=meter(hook_input))
    feedback = claude_hooks.feedback(answer)
    if feedback is None:
        return answer
    return {"decision": "block", "reason": feedback, "systemMessage": answer.get("systemMessage")}


def on_session_start(store: Store, hook_input: CodexInput, summaries: claude_hooks.Summaries) -> dict[str, Any]:
    return claude_hooks.on_session_start(store, hook_input, summaries)


def on_prompt(store: Store, hook_input: CodexInput, summaries: claude_hooks.Summaries) -> dict[str, Any]:
    from ..claude_code import slash  # click and goal creation: only for a $goal prompt

    raw = fast.goal_arguments(hook_input.prompt or "")
    if raw is None:
        return {}
    bound = claude_hooks.bound_goal_id(summaries, hook_input.session_id)
    if control.is_control("goal", raw) and bound:
        control.mark(store.root, hook_input.session_id, hook_input.transcript_path)
    else:
        control.clear(store.root, hook_input.session_id)
    raw, notice = _priced(raw, hook_input.model)
    reply = slash.run_command("goal", raw, session_id=hook_input.session_id, cwd=hook_input.cwd, store=store,
                              agent=AGENT)
    answer: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                     "additionalContext": reply.text}}
    started = (reply.notice or "").startswith("goal-convergence: started ")  # the words `slash._new` says it with
    told = [t for t in (reply.notice, notice if started else None) if t]
    if told:
        answer["systemMessage"] = "; ".join(told)
    return answer


def _priced(raw: str, model: str | None) -> tuple[str, str | None]:
    """A new goal's words, with a token budget added when the session's model has no price and none is given."""
    from ..claude_code import slash

    first = (raw.split() or [""])[0].lower()
    if not model or first in slash.SUBCOMMANDS or not raw.strip() or "--max-tokens" in raw:
        return raw, None
    try:
        cost.price_for(model)
        return raw, None
    except PriceUnknown:
        pass
    return (f"{raw} --max-tokens {FALLBACK_TOKENS}",
            f"no price for the model {model!r}, so the maker's spend is counted in tokens: the goal's budget is "
            f"{FALLBACK_TOKENS:,} tokens (add the price to {cost.user_prices_path()} to count dollars)")


HANDLERS: dict[str, Callable[[Store, CodexInput, claude_hooks.Summaries], dict[str, Any]]] = {
    "stop": on_stop,
    "session-start": on_session_start,
    "user-prompt-submit": on_prompt,
}
