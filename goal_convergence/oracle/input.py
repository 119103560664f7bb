"""The oracle's input: a goal and its fresh condition evidence, bounded to a few thousand tokens.

``build_input`` keeps the name of every failing test the evidence names (thousands fit: folded into
shell brace patterns, ``compact_failures``); what gives way is messages, details and output tails
(``text.cut``), and the input says how many failing tests' messages were left out.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

from pydantic import Field

from ..models import Census, ConditionEvidence, ConditionType, Goal, Integrity, Iteration, Model
from ..rules.decide import FINDINGS_SHOWN
from ..system.text import cut
from ..vcs import tree

MAX_INPUT_TOKENS = 8_000
# chars/4 of the input JSON stays under MAX_INPUT_TOKENS, with room for the message around it.
INPUT_CHARS = 28_000


class ConditionInput(Model):
    index: int
    type: ConditionType
    command: str
    passed: bool
    exit_code: int | None = None
    timed_out: bool = False
    threshold: float | None = None
    coverage: float | None = None
    error: str | None = None
    failures: list[str] = Field(default_factory=list)
    messages_left_out: int = 0  # failing tests named in ``failures`` without their message, for room
    tail: str = ""


class PastIteration(Model):
    number: int
    converged: bool | None = None
    reasons: list[str] = Field(default_factory=list)
    next_hint: str = ""
    judge_error: str | None = None
    action: str
    condition_fingerprints: list[str] = Field(default_factory=list)
    tree_fingerprint: str = ""


class IntegrityInput(Model):
    """The integrity guard's findings, as the oracle reads them."""

    enforced: bool
    changed: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    census: list[str] = Field(default_factory=list)
    pristine: str = ""
    issues: list[str] = Field(default_factory=list)
    # Left out when there are none, so an input without them reads as before.
    findings: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)


class PlanTask(Model):
    id: str
    title: str
    state: str


class OracleInput(Model):
    objective: str
    # Left out while the goal keeps no plan, so the judge is not told about one.
    plan: list[PlanTask] = Field(default_factory=list, exclude_if=lambda v: not v)
    conditions: list[ConditionInput]
    maker_summary: str | None = None
    recent_iterations: list[PastIteration] = Field(default_factory=list)
    diff_stat: str = ""
    integrity: IntegrityInput | None = None

    def to_json(self) -> str:
        return json.dumps(self.dump(), ensure_ascii=False, separators=(",", ":"))

    def estimated_tokens(self) -> int:
        """chars/4 of the JSON: no tokenizer offline, and this errs high for English and code."""
        return -(-len(self.to_json()) // 4)


def build_input(goal: Goal, evidence: list[ConditionEvidence], maker_summary: str | None,
                guard: Integrity | None = None, *, diff: bool = True) -> OracleInput:
    """The oracle's input, bounded to ``INPUT_CHARS``. Every failing test the evidence names keeps
    its name; what gives way is messages, details and output tails. ``diff``: with the tree's diff stat
    (a judge that never looks at the project is spared git's walk of it)."""
    root = Path(goal.project_root)
    fixed = OracleInput(
        objective=cut(goal.objective, 2_000, head=0),
        plan=[PlanTask(id=t.id, title=t.title, state=t.state) for t in goal.tasks],
        conditions=[],
        maker_summary=cut(maker_summary, 4_000, head=1_000) if maker_summary else None,
        recent_iterations=[_past(it) for it in goal.history[-3:]],
        diff_stat=cut(tree.diff_stat(root, goal.base_commit), 2_000, head=0) if diff else "",
        integrity=_integrity(goal, evidence, guard) if guard is not None else None,
    )
    thresholds = {i: c.threshold for i, c in enumerate(goal.stopping_conditions)}
    each = max(1_000, (INPUT_CHARS - len(fixed.to_json())) // max(1, len(evidence)))
    while True:
        built = fixed.model_copy(update={"conditions": [_condition(ev, thresholds.get(ev.index), each)
                                                        for ev in evidence]})
        if len(built.to_json()) <= INPUT_CHARS or each < 400:
            return built
        each = each * 3 // 4


def _condition(ev: ConditionEvidence, threshold: float | None, budget: int) -> ConditionInput:
    failures, left_out = compact_failures(ev.failure_lines, budget * 2 // 3 if not ev.passed else budget // 4)
    left = budget - sum(len(f) + 4 for f in failures) - len(ev.command) - 200
    tail = cut(ev.output_tail or ev.output_head, min(3_000 if not ev.passed else 600, max(0, left)), head=0)
    return ConditionInput(index=ev.index, type=ev.type, command=cut(ev.command, 500, head=0) or "", passed=ev.passed,
                          exit_code=ev.exit_code, timed_out=ev.timed_out, threshold=threshold,
                          coverage=ev.coverage, error=cut(ev.error, 500, head=0), failures=failures,
                          messages_left_out=left_out, tail=tail)


def _integrity(goal: Goal, evidence: list[ConditionEvidence], guard: Integrity) -> IntegrityInput:
    start = goal.baseline.census if goal.baseline else []

    def census(i: int, now: Census | None) -> str:
        before = start[i] if i < len(start) else None
        return (f"[{i}] now {now.summary if now else 'no census'}; "
                f"at the start {before.summary if before else 'no census (unknown runner)'}")

    p = guard.pristine
    pristine = guard.pristine_note if p is None else (
        f"{'passed' if p.passed else 'failed'} in {p.duration_seconds:g}s with "
        f"{len(p.restored)} original file(s) restored and {len(p.removed)} added file(s) removed"
        + (": " + "; ".join(cut(f, 300, head=0) or "" for f in p.failures[:5]) if p.failures else ""))
    return IntegrityInput(enforced=guard.enforced, changed=guard.changed[:30], deleted=guard.deleted[:30],
                          added=guard.added[:30], census=[census(e.index, e.census) for e in evidence],
                          pristine=pristine,
                          issues=[cut(f"{i.kind}: {i.subject}: {i.detail}", 300, head=0) or "" for i in guard.issues[:10]],
                          findings=[cut(f"f{n} {i.kind}: {i.detail}", 400, head=0) or ""
                                    for n, i in enumerate(guard.findings[:FINDINGS_SHOWN], 1)])


def _past(it: Iteration) -> PastIteration:
    v = it.verdict
    return PastIteration(
        number=it.number, converged=v.converged if v else None,
        reasons=[cut(r, 300, head=0) or "" for r in v.reasons[:3]] if v else [],
        next_hint=(cut(v.next_hint, 600, head=0) or "") if v else "", judge_error=cut(it.judge_error, 300, head=0),
        action=it.decision.action,
        # 12 hex digits tell "same as before" apart as well as 64 do, at a fifth of the tokens.
        condition_fingerprints=[c.fingerprint[:12] for c in it.conditions],
        tree_fingerprint=it.tree_fingerprint[:12],
    )


# pytest "FAILED path::test - message", unittest "FAIL: test (mod.Class)", go "--- FAIL: TestX (0.01s)".
_TEST_ID = re.compile(r"^(FAILED|ERROR|FAIL:|ERROR:|--- FAIL:)\s+(.+?)(?:\s+-\s+(.*))?$")
_GO_TIME = re.compile(r"\s+\(\d+(?:\.\d+)?m?s\)$")
# A message kept beside the names, when there is room: its first characters say what failed.
_MESSAGE_CHARS = 160
BRACES = "failing tests written as shell brace patterns: a{b,c} names ab and ac"


def compact_failures(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The failure lines, deduplicated, in at most about ``budget`` characters, and how many failing
    tests' messages were left out. When they do not fit, every failing test is still named: grouped
    by kind and file, their names folded into shell brace patterns on common prefixes and suffixes
    (the first line says so); messages, clipped, and other details fill what room is left."""
    lines = list(dict.fromkeys(s.strip() for s in lines if s.strip()))
    if sum(len(s) + 4 for s in lines) <= budget:
        return lines, 0
    groups: dict[tuple[str, str], list[str]] = {}
    others: list[str] = []
    messages: list[str] = []
    for line in lines:
        m = _TEST_ID.match(line)
        if not m:
            others.append(line)
            continue
        name = _GO_TIME.sub("", m.group(2))
        where, sep, test = name.rpartition("::") if "::" in name else ("", "", name)
        groups.setdefault((m.group(1), where + sep), []).append(test)
        if m.group(3):
            messages.append(f"{name} - {cut(m.group(3), _MESSAGE_CHARS)}")
    out = [BRACES] + [f"{kind} {where}{_braces(sorted(set(tests)))}" for (kind, where), tests in groups.items()]
    room = budget - sum(len(s) + 4 for s in out)
    kept = 0
    for line in others + messages:
        if len(line) + 4 <= room:
            out.append(line)
            room -= len(line) + 4
            kept += line in messages
    return out, len(messages) - kept


def _braces(names: list[str]) -> str:
    """Sorted, distinct names as one brace pattern: ``test_{a,b}[x]`` for test_a[x] and test_b[x]."""
    if len(names) == 1:
        return names[0]
    if any(c in name for name in names for c in "{},"):
        return ", ".join(names)  # a pattern of these could not be read back
    prefix = os.path.commonprefix(names)
    rests = [n[len(prefix):] for n in names]
    suffix = os.path.commonprefix([r[::-1] for r in rests])[::-1]
    rests = [r[: len(r) - len(suffix)] for r in rests]
    parts = [_braces(list(group)) for _, group in itertools.groupby(rests, key=lambda r: r[:1])]
    return f"{prefix}{{{','.join(parts)}}}{suffix}"
