"""What a goal's run prints as it goes, for `goal run` and `goal demo` alike (one renderer for both): the
opening (the goal, its checks, its judge, its budget), one block an iteration (the counters, what the maker
said, what the integrity guard refused, the hint sent back), and the ending (the stop, the ledger, the commands
to run next). The opening's first two lines are also the start message a user sees in Claude Code."""

from __future__ import annotations

import shlex

from ..models import Goal
from ..system.text import clip, money, plural
from . import judge, render

LEDGER_ROWS = 20  # the latest iterations the ending lists; `goal run --json` has them all


def limits(goal: Goal) -> str:
    """``15 iterations, 2h, $10.00`` (what the goal may spend, whatever it spent already)."""
    b = goal.budget
    parts = [plural(b.max_iterations, "iteration") if b.max_iterations else "no iteration limit",
             b.max_duration if b.max_duration and b.max_duration != "0s" else "no time limit",
             money(b.max_dollars) if b.max_dollars else "no dollar limit"]
    return ", ".join(parts + ([f"{b.max_tokens:,} tokens"] if b.max_tokens else []))


def headline(goal: Goal) -> list[str]:
    """Two lines: the checks and the judge, then the budget (the Claude Code start message is these)."""
    checks = ", ".join(f"`{clip(c.command, 60)}`" for c in goal.stopping_conditions[:3])
    more = len(goal.stopping_conditions) - 3
    checks += f" and {plural(more, 'more')}" if more > 0 else ""
    return [f"checks {checks}; judge: {judge.who(goal)}", f"budget: {limits(goal)}"]


def opening(goal: Goal) -> list[str]:
    """What `goal run` prints before the maker starts."""
    lines = [f"{goal.goal_id}: {goal.objective.strip().splitlines()[0]}",
             "conditions:", *render.condition_lines(goal), f"judge: {judge.who(goal)}",
             f"budget: {render.budget_line(goal)}"]
    return lines + render.creation_notes(goal)  # outside git, or no judge here: said before the maker starts


def iteration(outcome) -> str:
    """`goal run`'s line for an iteration, then what the maker said, what the guard refused and the hint."""
    lines = [render.iteration_line(outcome)]
    it = outcome.iteration
    if it is None:
        return lines[0]
    said = " ".join((it.maker_summary or "").split())
    if said:
        lines.append(f"  maker: {clip(said, 300)}")
    guard = it.integrity
    if guard and guard.blocks:
        lines.append("  integrity guard: the checks pass, but not as the goal began them; refused:")
        lines += render.guard_lines(guard, "    ")
    if outcome.decision.action == "continue" and outcome.decision.hint:
        lines.append(f"  hint back to the maker: {outcome.decision.hint}")
    return "\n".join(lines)


def ledger(evidence: list[dict]) -> list[str]:
    """The ledger's rows (runner.RunResult.ledger), the latest ``LEDGER_ROWS`` of them."""
    shown = evidence[-LEDGER_ROWS:]
    lines = ["ledger (`goal run --json` prints it whole):"]
    if len(evidence) > len(shown):
        lines.append(f"  ... {plural(len(evidence) - len(shown), 'earlier iteration')}")
    lines += [f"  #{e['iteration']} {e['action']:<8} {e['passing']}/{e['conditions']} passing, "
              f"integrity {'refused' if (e['integrity'] or {}).get('issues') else 'clean'}, {money(e['costUsd'])}"
              for e in shown]
    return lines


def next_commands(goal: Goal, env: str = "") -> list[str]:
    """The commands worth running next, ready to copy (``env``: a prefix they need, the demo's home)."""
    gid = goal.goal_id
    lines = [f"  {env}goal status {gid}", f"  {env}goal report {gid} --open"]
    triage = goal.escalation.triage_id if goal.escalation and goal.state == "escalated" else None
    if triage:
        lines.insert(0, f"  {env}goal triage show {triage}")
    elif goal.state == "paused":
        lines.insert(0, f"  {env}goal run {gid}")
    return ["next:", *lines]


def ending(result, env: str = "") -> list[str]:
    """The stop and what it cost, the ledger, and the next commands."""
    return [render.run_summary(result.goal, result.stop, result.note), *ledger(result.ledger()["evidence"]),
            *next_commands(result.goal, env)]


def home_prefix(home: str | None) -> str:
    """``GOAL_CONVERGENCE_HOME=... `` when the goal lives in a home of its own (the demo's)."""
    return f"GOAL_CONVERGENCE_HOME={shlex.quote(home)} " if home else ""

