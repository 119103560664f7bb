"""Who will judge a goal, in the words the screens use before it runs: the start of `goal run`, the Claude Code
start message, the slash command's brief, and the note `goal new` prints when no judge can run here. (Who did
judge an iteration is its own record, ``Iteration.judged_by``, which the report reads.)"""

from __future__ import annotations

from ..models import Goal


def can_run(goal: Goal) -> str | None:
    """The provider that judges the goal here (``auto`` resolved), or None when none can run."""
    from ..oracle.choose import runs_here  # the oracle's modules: only when a judge is named

    return runs_here(goal.oracle.provider)


def who(goal: Goal) -> str:
    """``claude-haiku-5-5 (anthropic)``, ``the conditions alone (no oracle model)``, ``the command `x```."""
    o = goal.oracle
    if o.provider == "conditions":
        return "the conditions alone (no oracle model)"
    if o.provider == "command":
        return f"the command `{o.command}`"
    provider = can_run(goal)
    if provider is None:
        return f"{o.model} ({o.provider}), which cannot run here yet"
    return f"{o.model} ({provider}" + (", chosen by auto)" if o.provider == "auto" else ")")


def unavailable(goal: Goal) -> str | None:
    """What to do when the goal's judge cannot run here, said when the goal is made rather than when it is run."""
    from ..oracle.choose import SET_UP

    if can_run(goal) is not None:
        return None
    asked = "no oracle" if goal.oracle.provider == "auto" else f"the {goal.oracle.provider} oracle"
    return (f"{asked} can run here yet, so no iteration can be judged: `goal run` refuses the goal (exit 69), and in "
            f"Claude Code each stop ends in a judge error until the goal escalates. To fix it: {SET_UP}")
