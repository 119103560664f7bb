"""The decision step: a pure function from what an iteration saw to what happens next.

The conditions are ground truth, as the goal began them: a green run that the integrity guard
refuses (tests gone, skipped or weakened) does not converge whatever the oracle says. The oracle
can veto a green run but never pass a red one; a converge stands only on evidence that is still
fresh. No I/O here: everything comes in as arguments, so the rules can be tested exhaustively.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..models import (Blocker, ConditionEvidence, Decision, Goal, Integrity, IntegrityIssue, Iteration, Regression,
                      Verdict)
from . import budget, plan, progress

JUDGE_ERRORS_TO_STOP = 3
# A judge error is no fault of the maker's, who is told so and not sent looking for one.
JUDGE_ERROR_HINT = ("Every check passes, but the oracle could not judge this run; there is nothing to change for "
                    "that: stop again and it is asked again.")

_BLOCKERS: list[tuple[Blocker, re.Pattern[str]]] = [
    ("needs_user_input", re.compile(
        r"\b(need|needs|require|requires|waiting for|awaiting)\s+(your|the user'?s?|a human'?s?|human)\s+"
        r"(input|decision|confirmation|approval|answer|credentials|help)"
        r"|\b(please|could you|can you)\s+(provide|confirm|clarify|choose|decide|tell me)\b"
        r"|\bwhich (option|approach|one) (do|would) you\b", re.I)),
    ("external_wait", re.compile(
        r"\b(waiting|wait) (on|for) (the )?(ci|build server|deploy\w*|review\w*|upstream|external|service|"
        r"api|network|release|another team)\b|\b(service|server|api|registry) (is )?(down|unavailable|unreachable)\b"
        r"|\brate.?limit(ed)?\b", re.I)),
]


# The maker's honest way out (goals/blocked.py): a line of its last message, markdown emphasis allowed.
_DECLARED = re.compile(r"^[ \t>*_`#-]*goal blocked[*_`]*[ \t]*:[*_` \t]*(\S.*?)[*_` \t]*$", re.I | re.M)
BLOCKED_HINT = ('If the goal cannot be met as written, say so instead: end your message with a line '
                '"GOAL BLOCKED: <why>" (or run `goal blocked "<why>"`), and a person will look at it.')


def declared_blocked(summary: str | None) -> str | None:
    """Why the maker says the goal cannot be met as written, when its message has a line ``GOAL BLOCKED: why``."""
    found = _DECLARED.search(summary or "")
    return found.group(1) if found else None


def classify_blocker(summary: str | None) -> Blocker | None:
    """The kind of blocker a maker's message declares, if it declares one."""
    if not summary:
        return None
    for kind, pattern in _BLOCKERS:
        if pattern.search(summary):
            return kind
    return None


@dataclass(frozen=True)
class Evidence:
    """What one iteration saw. ``tree_after_judge`` is the tree fingerprint once the oracle answered."""

    conditions: list[ConditionEvidence]
    tree_fingerprint: str
    tree_after_judge: str | None = None
    maker_summary: str | None = None
    maker_failed: bool = False
    judge_error: str | None = None
    unaffordable: bool = False  # the oracle call could not have been paid for within the budget
    integrity: Integrity | None = None
    regressions: list[Regression] = field(default_factory=list)  # progress.regressions, with the blame
    notes: list[str] = field(default_factory=list)


def green(evidence: Evidence) -> bool:
    return bool(evidence.conditions) and all(c.passed for c in evidence.conditions)


def hint_from_failures(evidence: Evidence) -> str:
    """A hint built from the failing conditions alone, for when the oracle gives none."""
    parts = []
    for c in evidence.conditions:
        if c.passed:
            continue
        parts.append(f"`{c.command}` fails: {c.first_failure}")
    return "; ".join(parts) or "The checks pass but the goal is not judged met; re-read the objective."


HINTS_SHOWN = 5


def _issue_text(issue: IntegrityIssue) -> str:
    return issue.detail + (f" (since iteration {issue.since})" if issue.since else "")


def hint_from_integrity(guard: Integrity) -> str:
    """What the maker must hear when the guard refuses a green run: each cheat by name, and the way out."""
    shown = [_issue_text(i) for i in guard.issues[:HINTS_SHOWN]]
    more = len(guard.issues) - HINTS_SHOWN
    files = [f"changed: {', '.join(guard.changed[:5])}" if guard.changed else "",
             f"deleted: {', '.join(guard.deleted[:5])}" if guard.deleted else "",
             f"added: {', '.join(guard.added[:5])}" if guard.added else ""]
    touched = "; ".join(f for f in files if f)
    return ("The checks pass, but not as the goal began them, so the goal is not done: "
            + "; ".join(shown) + (f"; and {more} more" if more > 0 else "") + ". "
            + (f"Check-defining files {touched}. " if touched else "")
            + "Put the original tests and check files back (new tests may stay) and fix the code instead. "
            + BLOCKED_HINT)


# The judges that read the findings and weigh them (oracle/input.py); the others cannot, so a person does.
MODEL_JUDGES = ("anthropic", "claude-cli", "auto")
# oracle/input.py shows the judge this many, numbered f1, f2, ...: one past them can never be cleared.
FINDINGS_SHOWN = 10


def flagged(goal: Goal, evidence: Evidence, verdict: Verdict | None) -> list[IntegrityIssue]:
    """The tripwires' findings a person must weigh before this run converges. A model judge reads them
    (oracle/input.py, by id) and clears the ones it found legitimate, one by one: a bare "converged" clears
    none, so a judge that approves everything cannot pass them. ``conditions`` and a ``command`` judge
    cannot read them, so a person weighs all of them."""
    if evidence.integrity is None:
        return []
    cleared = set(verdict.findings_cleared) if verdict is not None and goal.oracle.provider in MODEL_JUDGES else set()
    return [f for n, f in enumerate(evidence.integrity.findings, 1) if n > FINDINGS_SHOWN or f"f{n}" not in cleared]


def hint_from_findings(findings: list[IntegrityIssue]) -> str:
    """What the maker hears when its green run waits for a person: each finding, and the honest ways on."""
    shown = "; ".join(i.detail for i in findings[:HINTS_SHOWN])
    more = len(findings) - HINTS_SHOWN
    return ("The checks pass, but the change looks like it works around the tests rather than fixing the code, "
            "so a person must look before the goal is done: " + shown + (f"; and {more} more" if more > 0 else "")
            + ". Remove that code and fix the behaviour itself. " + BLOCKED_HINT)


def hint_from_moved(issue: IntegrityIssue) -> str:
    """What the maker must hear when files changed while the checks ran (guard/delivered.py)."""
    return (f"The checks pass, but {issue.detail}: the goal is judged on the files as you leave them. Stop every "
            "process that still writes in the project (a background job, a watcher) and fix the code itself.")


def no_progress(goal: Goal, evidence: Evidence) -> int:
    """How many iterations in a row, this one included, left the tree as the one before found it."""
    trees = [goal.base_tree] + [it.tree_fingerprint for it in goal.history] + [evidence.tree_fingerprint]
    run = 0
    for before, after in zip(reversed(trees[:-1]), reversed(trees[1:])):
        if before is None or before != after:
            break
        run += 1
    return run


def judge_errors_in_a_row(history: list[Iteration]) -> int:
    """Judge errors at the end of ``history``, one after another."""
    run = 0
    for it in reversed(history):
        if it.verdict is not None or not it.judge_error:
            break
        run += 1
    return run


EXPECTATION_HINT = ("Every check passes and the judge agrees, but your last message does not give an account of the "
                    "work that satisfies this goal's expectation. Say plainly what you changed and what now holds, "
                    "then stop again.")


def expectation_met(goal: Goal, summary: str | None) -> bool:
    """Whether the maker's last message matches the goal's hidden ``--expect`` (no expectation: it does). The
    pattern is the goal file's alone: no hint, feedback or view a maker can see ever shows it (models.shown)."""
    pattern = goal.oracle.expect
    return pattern is None or re.search(pattern, summary or "", re.MULTILINE) is not None


def held_back(goal: Goal, verdict: Verdict, summary: str | None = None) -> tuple[str, str] | None:
    """Why a green run the oracle calls converged still does not converge (a note and the maker's hint): the
    maker's account misses the goal's hidden expectation, the oracle is less sure than the goal's
    ``minConfidence``, or the plan still has open tasks. ``goal.tasks`` is the plan with this verdict's changes
    applied."""
    if not expectation_met(goal, summary):
        return "the maker's last message does not match the goal's hidden expectation (--expect)", EXPECTATION_HINT
    floor = goal.min_confidence
    if floor is not None and verdict.confidence < floor:
        why = "; ".join(verdict.reasons) or "no reason given"
        return (f"the oracle said converged with confidence {verdict.confidence:g}, below the goal's minimum "
                f"{floor:g}: counted as a veto ({why})",
                f"Every check passes and the oracle agrees, but only with confidence {verdict.confidence:g} (this "
                f"goal needs {floor:g}): {why}. "
                + (verdict.next_hint or "Make the work unmistakably complete against the objective, then stop again."))
    still = plan.open_tasks(goal.tasks)
    if still:
        return (f"the oracle said converged, but {len(still)} task(s) of the plan are open: "
                + ", ".join(t.id for t in still),
                f"Every check passes and the oracle agrees, but the plan still has open tasks: {plan.listing(still)}. "
                "Do them, then stop again.")
    return None


def decide(goal: Goal, evidence: Evidence, verdict: Verdict | None, stuck_cap: int | None = None) -> Decision:
    """Converge, continue with a hint, re-check, or stop with a stop reason.

    ``goal.spent`` must already include this iteration (its number, time and cost).
    """
    notes = list(evidence.notes)
    is_green = green(evidence)
    guarded = is_green and evidence.integrity is not None and evidence.integrity.blocks
    if verdict is not None and verdict.converged and not is_green:
        notes.append("the oracle said converged while a condition fails: overridden (conditions are ground truth)")
    if guarded:
        assert evidence.integrity is not None
        notes.append("the integrity guard refused the green run: "
                     + "; ".join(f"{i.kind} {i.subject}" for i in evidence.integrity.issues[:HINTS_SHOWN]))
    elif verdict is not None and is_green and not verdict.converged:
        notes.append("the oracle vetoed a green run: " + ("; ".join(verdict.reasons) or "no reason given"))
    moved = [i for i in evidence.integrity.issues if i.kind == "files-moved"] if guarded and evidence.integrity else []
    if moved:  # the tree may settle: look again before telling the maker (the engine bounds the re-checks)
        return Decision(action="recheck", hint=hint_from_moved(moved[0]),
                        notes=notes + ["files changed while the checks ran: re-checking"])

    held = None
    if is_green and not guarded and verdict is not None and verdict.converged:
        held = held_back(goal, verdict, evidence.maker_summary)
        if held is None:
            if evidence.tree_after_judge is not None and evidence.tree_after_judge != evidence.tree_fingerprint:
                return Decision(action="recheck", notes=notes + ["files changed while the oracle judged: re-checking"])
            if findings := flagged(goal, evidence, verdict):
                judged = ("which did not clear them" if goal.oracle.provider in MODEL_JUDGES
                          else "which does not weigh findings")
                notes.append(f"flagged for a person ({goal.oracle.provider} judge, {judged}): "
                             + "; ".join(f"{i.kind} {i.subject}" for i in findings[:HINTS_SHOWN]))
                return Decision(action="stop", stop_reason="flagged", hint=hint_from_findings(findings), notes=notes)
            return Decision(action="converge", stop_reason="converged", notes=notes)
        notes.append(held[0])

    if guarded:
        assert evidence.integrity is not None
        hint = hint_from_integrity(evidence.integrity)
    elif held is not None:
        hint = held[1]
    elif is_green and verdict is None and evidence.judge_error:
        hint = JUDGE_ERROR_HINT
    else:
        hint = " ".join(filter(None, [progress.metric_worse(goal, evidence.conditions),
                                      progress.regression_hint(goal, evidence.regressions),
                                      (verdict.next_hint if verdict is not None else "")
                                      or hint_from_failures(evidence)]))

    def stop(reason: str, blocker: Blocker | None = None) -> Decision:
        return Decision(action="stop", stop_reason=reason, hint=hint, blocker=blocker, notes=notes)  # type: ignore[arg-type]

    declared = declared_blocked(evidence.maker_summary)
    if declared is not None:
        notes.append(f"the maker says the goal cannot be met as written: {declared}")
        return stop("unfixable", "needs_user_input")
    if verdict is not None and verdict.unfixable is not None and not is_green:
        notes.append("unfixable: " + verdict.unfixable.reason)
        return stop("unfixable")
    if evidence.unaffordable:
        notes.append("the next oracle call could not be paid for within the dollar or token budget")
        return stop("budget-exhausted")
    if evidence.judge_error and judge_errors_in_a_row(goal.history) + 1 >= JUDGE_ERRORS_TO_STOP:
        notes.append(f"the oracle could not judge {JUDGE_ERRORS_TO_STOP} iterations in a row, the last time: "
                     f"{evidence.judge_error}; fix that, then `goal resume {goal.goal_id}`")
        return stop("judge-error")
    spent = budget.exhausted(goal)
    blocker = classify_blocker(evidence.maker_summary) or ("run_failed" if evidence.maker_failed else None)
    if spent:
        return stop(spent, blocker)
    stuck_after = min(goal.stuck_after, stuck_cap) if stuck_cap else goal.stuck_after
    still = no_progress(goal, evidence)
    if blocker and still >= 1:
        notes.append(f"the maker is blocked ({blocker}) and changed nothing")
        return stop("stuck", blocker)
    if still >= stuck_after:
        notes.append(f"no change to the files for {still} iterations in a row")
        return stop("stuck")
    stalled = progress.metric_stall(goal, evidence.conditions)
    if stalled >= stuck_after:
        notes.append(f"no failing metric improved on its best, and no more conditions passed, for {stalled} "
                     "iterations in a row")
        return stop("stuck")
    return Decision(action="continue", hint=hint, notes=notes)
