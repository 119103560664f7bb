"""What the hooks do when a goal is involved: the slow path behind fast.py.

- Stop: meter what the maker spent since the last read of its transcript, run one iteration of
  the loop, and either block the stop with the next instruction or let it stop with a summary.
- SessionStart (resume, compact): restart the clock of this session's goal, then list the goals.
- SessionEnd: charge the maker's spend and stop the clock; the goal stays active and bound, so
  `claude --resume` carries on and another session can take it over with `resume`.
- UserPromptExpansion: the plugin's slash commands, with their raw arguments (no shell involved).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import InvalidInput, problems
from ...loop import claim, engine
from ...models import ConditionEvidence, Cost, Goal, Iteration, parse_iso
from ...report import render
from ...rules import budget
from ...storage import config
from ...storage.store import Store
from ...system import clock, deadline, index, mask, quarantine
from ...system.log import log_error
from ...system.text import clip, plural
from ...vcs import checkpoint
from . import control, fast, naming, transcript

# Claude Code ends a turn after a run of blocked stops without a tool call (9 in 2.1.332, 8 before); a
# maker that only talks must end as stuck before that cap cuts the loop off silently.
STUCK_CAP = 7
MAX_FAILURES_SHOWN = 5
Summaries = list[dict[str, Any]]
# Reads what a session spent since the offsets given: transcript.read's signature (each agent has its own
# reader, with the same fields: dollars, tokens, model, offsets, note).
Meter = Callable[..., Any]
Handlers = dict[str, Callable[..., dict[str, Any]]]  # a hook event's handler: (store, hook input, summaries)


class HookInput(BaseModel):
    """The fields of Claude Code's hook input that the hooks use (it sends more)."""

    model_config = ConfigDict(extra="ignore")

    session_id: str = Field(min_length=1)
    transcript_path: str | None = None
    cwd: str | None = None
    source: str | None = None
    last_assistant_message: str | None = None
    command_name: str | None = None
    command_args: str = ""


def run(event: str, data: bytes, store: Store | None = None, handlers: Handlers | None = None,
        agent: str = "Claude Code") -> dict[str, Any]:
    """Claude Code's hook ``event`` (another agent's, with its ``handlers``) on its input ``data``."""
    try:
        hook_input = HookInput.model_validate_json(data)
    except ValidationError as exc:
        raise InvalidInput(f"the {event} hook got input it cannot use ({problems(exc, 1)}); "
                           f"is this {agent}?") from None
    settings = config.env_settings()  # a bad setting fails here, before any work (errors.py)
    if event == "stop":  # every check and judge call of this stop ends within it (system/deadline.py)
        deadline.start(settings.stop_budget)
    store = store or Store()
    # The one read of the index a hook makes; a stale one is rebuilt here, quarantining broken goal files.
    summaries = store.summaries()
    answer = (handlers or HANDLERS)[event](store, hook_input, summaries)
    return naming.answer_in_session(quarantine.with_notice(answer, store.quarantined))


def bound_goal_id(summaries: Summaries, session_id: str) -> str | None:
    """The id of the active goal bound to this session, from the index: what works on the goal loads it
    (once: store.py keeps it), so finding it must not."""
    bound = index.bound_to_session(summaries, session_id)
    return bound[0]["goalId"] if bound else None


def maker_report(hook_input: HookInput, *, final: bool,
                 meter: Meter = transcript.read) -> Callable[[Goal], engine.MakerReport]:
    """What the session spent since the goal last read its transcript, read under the goal's lock
    (engine.record_maker): two hooks of one session never read from the same offsets. The goal's offsets
    start where the transcript was when the slash command bound it (``mark_transcript``), so a file not in
    them is new since and counts whole. Only a goal bound without a transcript to mark (`goal new --session`
    from a shell) falls back to timestamps, for its first read: messages from before its clock started (as
    the wall clock reads now, whatever step it made since: budget.clock_started), or its resume, were not
    spent on it."""
    def read(goal: Goal) -> engine.MakerReport:
        reading = transcript.Reading()
        if hook_input.transcript_path:
            marked = str(Path(hook_input.transcript_path)) in goal.transcript_offsets  # then by offset alone
            since = (None if marked else parse_iso(goal.transcript_since) if goal.transcript_since
                     else budget.clock_started(goal, _now()))
            reading = meter(hook_input.transcript_path, goal.transcript_offsets, since=since, final=final)
            if reading.note:
                log_error("transcript", reading.note)
        return engine.MakerReport(summary=hook_input.last_assistant_message,
                                  cost=Cost(dollars=reading.dollars, tokens=reading.tokens),
                                  model=reading.model, transcript_offsets=reading.offsets,
                                  unpriced=bool(getattr(reading, "unpriced", None)))

    return read


def on_stop(store: Store, hook_input: HookInput, summaries: Summaries, meter: Meter = transcript.read) -> dict[str, Any]:
    """One iteration of the loop. ``stop_hook_active`` is not consulted: the goal's own budget and
    stuck detection end the loop, and they end it before Claude Code's block cap does."""
    goal_id = bound_goal_id(summaries, hook_input.session_id)
    if goal_id is None:
        return {}
    if control.only_control(store.root, hook_input.session_id, hook_input.transcript_path):
        return {}  # the turn only ran a goal-management command: no iteration, no block
    claim.reap(store)  # what a killed `goal run` left running (claim.py)
    # One writer of money a goal (claim.py): this stop's iteration holds the goal's writer lock, and gives way to
    # a live `goal run`. When the loop ends here no later read will charge the message a Stop's read holds back:
    # it is charged with the iteration's record (settle), in the same write.
    try:
        with claim.writing(store, goal_id, give_way=lambda: claim.live_runner(store.load(Goal, goal_id), _now())):
            outcome = engine.run_iteration(store, goal_id, _unless_run(maker_report(hook_input, final=False,
                                                                                   meter=meter)),
                                           settle=maker_report(hook_input, final=True, meter=meter),
                                           stuck_cap=STUCK_CAP)
    except claim.Held as held:  # a `goal run` works the goal: the session stops, its spend all charged
        engine.record_maker(store, goal_id, maker_report(hook_input, final=True, meter=meter), pend=False)
        return {"systemMessage": f"goal-convergence: {goal_id} is being run by {claim.holder(held.runner)}; "
                                 "this stop runs no iteration of its own"}
    goal, decision = outcome.goal, outcome.decision
    if engine.carries_on(goal, decision):
        return carry_on(_with_held_back(goal, hook_input, meter), outcome.iteration, decision.hint)
    if goal.state == "converged":
        spent = goal.spent
        return {"systemMessage": (
            f"goal-convergence: {goal.goal_id} converged after {plural(spent.iterations, 'iteration')}, "
            f"{render.duration(spent.active_seconds)} active, "
            f"{render.money(spent.dollars)} (maker {render.money(spent.maker_dollars)}, "
            f"oracle {render.money(spent.oracle_dollars)})")}
    if goal.state == "escalated":
        return {"systemMessage": escalation_line(goal, outcome.triage_id)}
    return {}  # paused or abandoned while the checks ran: let it stop


def _now() -> datetime:
    return clock.now()


def _unless_run(work: Callable[[Goal], engine.MakerReport]) -> Callable[[Goal], engine.MakerReport]:
    """``work``, unless a live `goal run` holds the goal as it is read for it (raises Held: nothing is written).
    A run that claims the goal after this read waits for this iteration's end (claim.writing)."""
    def read(goal: Goal) -> engine.MakerReport:
        runner = claim.live_runner(goal, _now())
        if runner is not None:
            raise claim.Held(f"goal {goal.goal_id} is being run by {claim.holder(runner)}", runner)
        return work(goal)

    return read


def _with_held_back(goal: Goal, hook_input: HookInput, meter: Meter) -> Goal:
    """The goal as its feedback shows it: a Stop's read holds the newest message back (transcript.py),
    which in a short first turn is most of what the maker spent; shown, not charged (the next read
    charges it)."""
    held = maker_report(hook_input, final=True, meter=meter)(goal).cost
    shown = engine.copy_to_charge(goal)
    shown.spent.maker_dollars += held.dollars
    shown.spent.maker_tokens += held.tokens
    return shown


def carry_on(goal: Goal, iteration: Iteration | None, hint: str) -> dict[str, Any]:
    """The answer that keeps the session working. Claude Code 2.1.332 feeds a Stop hook's
    ``additionalContext`` to the model once and carries the turn on (a block, counted towards its
    block cap), without the "Stop hook reported a problem" a ``decision: block`` or an exit code 2
    shows the user; ``decision: block`` would also feed the reason twice (docs/claude-code.md)."""
    failing = sum(1 for c in (iteration.conditions if iteration else []) if not c.passed)
    why = plural(failing, "failing check") if failing else "the oracle does not agree yet"
    off = [n for n in (iteration.decision.notes if iteration else []) if n.startswith(checkpoint.OFF_NOTE)]
    return {"systemMessage": f"goal-convergence: {goal.goal_id} iteration {goal.spent.iterations} not done ({why}); "
                             f"the session carries on" + "".join(f"; {n}" for n in off),
            "hookSpecificOutput": {"hookEventName": "Stop",
                                   "additionalContext": mask.text(continue_reason(goal, iteration, hint))}}


def feedback(answer: dict[str, Any]) -> str | None:
    """The feedback a Stop answer gives the model, if it keeps the session working."""
    return (answer.get("hookSpecificOutput") or {}).get("additionalContext")


def continue_reason(goal: Goal, iteration: Iteration | None, hint: str) -> str:
    """The Stop hook feedback the maker reads: what is still wrong and what to do next."""
    lines = [f"goal-convergence: goal {goal.goal_id} is not done yet "
             f"(iteration {goal.spent.iterations}/{goal.budget.max_iterations or '∞'})."]
    failing = [c for c in (iteration.conditions if iteration else []) if not c.passed]
    if failing:
        lines.append("Failing checks:")
        lines += [f"  - {_failure(c)}" for c in failing[:MAX_FAILURES_SHOWN]]
        if len(failing) > MAX_FAILURES_SHOWN:
            lines.append(f"  - … and {len(failing) - MAX_FAILURES_SHOWN} more")
    elif iteration and iteration.verdict and not iteration.verdict.converged:
        lines.append("Every check passes, but the oracle does not agree that the objective is met: "
                     + ("; ".join(iteration.verdict.reasons) or "no reason given"))
    if hint:
        lines.append(f"Hint: {hint}")
    lines += render.open_task_lines(goal)
    lines += [f"Budget: {render.budget_line(goal)}.",
              f"Keep working on the objective: {clip(goal.objective, 2000)}",
              "When you believe it is done, simply stop: the checks run again on their own. "
              "Do not weaken or delete tests or checks to make them pass."]
    return "\n".join(lines)


def _failure(c: ConditionEvidence) -> str:
    return f"[{c.index}] {c.type} `{clip(c.command, 200)}`: {clip(c.first_failure, 300)}"


def escalation_line(goal: Goal, triage_id: str | None) -> str:
    esc = goal.escalation
    reason = goal.stop_reason or (esc.stop_reason if esc else "escalated")
    detail = f": {clip(esc.detail, 300)}" if esc and esc.detail else ""
    triage_id = triage_id or (esc.triage_id if esc else None)
    where = f"; triage item {triage_id} (/goal-convergence:triage show {triage_id})" if triage_id else ""
    return (f"goal-convergence: {goal.goal_id} stopped ({reason}){detail} after "
            f"{plural(goal.spent.iterations, 'iteration')}, {render.money(goal.spent.dollars)}{where}")


def on_session_start(store: Store, hook_input: HookInput, summaries: Summaries) -> dict[str, Any]:
    if hook_input.source in fast.RESUMING:
        goal_id = bound_goal_id(summaries, hook_input.session_id)
        if goal_id is not None:
            store.update(Goal, goal_id, _restart_clock(clock.now(), hook_input.source == "compact"))
    # The summaries from before the clock restarted: the clock is not in them.
    return fast.session_start_answer(summaries, hook_input.session_id, hook_input.cwd)


def _restart_clock(now: datetime, running: bool) -> Callable[[Goal], Goal]:
    """A compacted session never stopped, so its time so far is charged; a resumed one was away
    since it ended, and if its SessionEnd never ran, that idle gap must not be charged either."""
    def change(goal: Goal) -> Goal:
        if running:
            budget.accrue(goal, now)
        budget.start_clock(goal, now)
        return goal

    return change


def on_session_end(store: Store, hook_input: HookInput, summaries: Summaries,
                   meter: Meter = transcript.read) -> dict[str, Any]:
    goal_id = bound_goal_id(summaries, hook_input.session_id)
    if goal_id is not None:
        engine.record_maker(store, goal_id, maker_report(hook_input, final=True, meter=meter), detach=True)
    return {}


def on_prompt_expansion(store: Store, hook_input: HookInput, summaries: Summaries,
                        agent: str = "claude-code") -> dict[str, Any]:
    from . import slash  # click and goal creation: the other hooks (SessionEnd: 1.5 s) need neither

    name = (hook_input.command_name or "").rpartition(":")[2]
    if control.is_control(name, hook_input.command_args) and index.bound_to_session(summaries, hook_input.session_id):
        control.mark(store.root, hook_input.session_id, hook_input.transcript_path)
    else:
        control.clear(store.root, hook_input.session_id)
    before = bound_goal_id(summaries, hook_input.session_id)
    reply = slash.run_command(name, hook_input.command_args, session_id=hook_input.session_id, cwd=hook_input.cwd,
                              store=store, agent=agent)
    mark_transcript(store, hook_input, before)
    answer: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": "UserPromptExpansion",
                                                     "additionalContext": reply.text}}
    if reply.notice:
        answer["systemMessage"] = reply.notice
    return answer


def mark_transcript(store: Store, hook_input: HookInput, before: str | None) -> None:
    """When the command just bound a goal to this session (made it, resumed it, took it over), the goal counts
    the session's spend from the transcript's files as they are now: by their offsets, not by comparing the
    messages' timestamps with its own clock, which may have stepped since (a goal made while the clock was
    an hour ahead would skip every message)."""
    bound = bound_goal_id(store.summaries(), hook_input.session_id)
    if bound is None or not hook_input.transcript_path:
        return

    def change(goal: Goal) -> Goal:
        if bound != before or goal.transcript_since:
            goal.transcript_offsets = {**goal.transcript_offsets, **transcript.sizes(hook_input.transcript_path)}
            goal.transcript_since = None
        return goal

    store.update(Goal, bound, change)


HANDLERS: Handlers = {
    "stop": on_stop,
    "session-start": on_session_start,
    "session-end": on_session_end,
    "prompt-expansion": on_prompt_expansion,
}
