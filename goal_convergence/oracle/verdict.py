"""A judge's verdict: strictly from a model's answer (one JSON object, fenced or bare, that matches
the verdict schema), or leniently from another program's (``parse_foreign_verdict``)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import OracleError, problems
from ..models import Cost, Model, TaskChanges, Unfixable, Verdict, schema
from ..system.text import cut


# What a verdict may hold, whoever gave it: the hint goes to the maker at every stop and everything is kept in
# the goal file, so one runaway reply must not flood the model's context, the disk or the terminal.
MAX_HINT_CHARS = 4000
MAX_ITEM_CHARS = 1000  # a reason, a piece of evidence, a task's title, a cleared finding's id
MAX_ITEMS = 20  # reasons, evidence, tasks added or completed, findings cleared, condition results


class JudgeError(OracleError):
    """A judge error. ``cost`` is what the failed attempt had already spent: it still counts."""

    def __init__(self, message: str, cost: Cost | None = None) -> None:
        super().__init__(message)
        self.cost = cost or Cost()


class BadAnswer(ValueError):
    """An answer that is not a verdict; the message says why, for the repair round."""


class Judgement(Model):
    verdict: Verdict
    cost: Cost = Field(default_factory=Cost)
    model: str
    notes: list[str] = Field(default_factory=list)


_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n(.*?)```", re.S)


def _json_object(text: str) -> dict[str, Any]:
    """The one JSON object in ``text``: the whole text, a fenced block, or a bare object in prose."""
    stripped = text.strip()
    if not stripped:
        raise BadAnswer("the answer was empty")
    fenced = _FENCE.findall(stripped)
    first, last = stripped.find("{"), stripped.rfind("}")
    candidates = [stripped, *reversed(fenced)] + ([stripped[first:last + 1]] if 0 <= first < last else [])
    problems = []
    for candidate in candidates:
        try:
            doc = json.loads(candidate, parse_constant=_no_constant)
        except ValueError as exc:
            problems.append(f"not valid JSON ({exc})")
            continue
        if isinstance(doc, dict):
            return doc
        problems.append(f"a JSON {type(doc).__name__}, not an object")
    # The last candidate is the most specific: the bare object, else the last fenced block. Prose
    # alone fails json.loads as well, but "no JSON object" says more than a decoder position.
    prose = len(candidates) == 1 and problems[-1].startswith("not valid JSON")
    raise BadAnswer("no JSON object found in the answer" if prose else problems[-1])


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def task_changes(doc: dict[str, Any], notes: list[str]) -> TaskChanges | None:
    """The plan changes a verdict carries, salvaged: a judge that gets ``tasks`` wrong still gives its verdict on
    the work, so a malformed field loses only its malformed part (said in ``notes``), never the verdict."""
    raw = doc.pop("tasks", None)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        notes.append(f"the verdict's tasks field is not an object ({cut(json.dumps(raw), 80)}): ignored")
        return None
    kept: dict[str, list[str]] = {}
    for key in ("add", "complete"):
        given = raw.get(key) or []
        kept[key] = [v for v in given if isinstance(v, str) and v.strip()] if isinstance(given, list) else []
    if set(raw) - set(kept) or any(kept[key] != (raw.get(key) or []) for key in kept):
        notes.append(f"the verdict's tasks field was partly malformed ({cut(json.dumps(raw), 120)}): "
                     "only its lists of non-empty strings (add: titles, complete: ids) were kept")
    return TaskChanges(**kept) if kept["add"] or kept["complete"] else None


def _items(values: list[str], found: list[str], what: str) -> list[str]:
    kept = [cut(v, MAX_ITEM_CHARS) for v in values[:MAX_ITEMS]]
    if kept != values:
        found.append(f"the verdict's {what} were cut to {MAX_ITEMS} of at most {MAX_ITEM_CHARS} characters each")
    return kept


def capped(verdict: Verdict, notes: list[str] | None = None) -> Verdict:
    """``verdict`` with every field held to its cap (MAX_HINT_CHARS, MAX_ITEM_CHARS, MAX_ITEMS), what was cut
    said in ``notes``: applied to every judge's verdict before it is stored or sent anywhere."""
    found: list[str] = []
    hint = cut(verdict.next_hint, MAX_HINT_CHARS)
    if hint != verdict.next_hint:
        found.append(f"the verdict's hint was cut to {MAX_HINT_CHARS} characters")
    results = verdict.condition_results[:MAX_ITEMS]
    update: dict[str, Any] = {
        "next_hint": hint, "reasons": _items(verdict.reasons, found, "reasons"),
        "findings_cleared": _items(verdict.findings_cleared, found, "findings cleared"),
        "condition_results": [r.model_copy(update={"output": cut(r.output, MAX_ITEM_CHARS)}) for r in results]}
    if verdict.unfixable is not None:
        u = verdict.unfixable
        update["unfixable"] = u.model_copy(update={"reason": cut(u.reason, MAX_HINT_CHARS),
                                                   "evidence": _items(u.evidence, found, "pieces of evidence")})
    if verdict.tasks is not None:
        t = verdict.tasks
        update["tasks"] = t.model_copy(update={"add": _items(t.add, found, "tasks to add"),
                                               "complete": _items(t.complete, found, "tasks completed")})
    _noted(notes, found)
    return verdict.model_copy(update=update)


def check_verdict(doc: dict[str, Any], notes: list[str] | None = None) -> Verdict:
    """A verdict from a document that must match the schema (but for ``tasks``, salvaged: ``task_changes``)."""
    doc, found = dict(doc), []
    tasks = task_changes(doc, found)
    wrong = schema.errors(doc, "verdict")
    if wrong:
        raise BadAnswer("it does not match the verdict schema: " + "; ".join(wrong[:5]))
    try:
        verdict = Verdict.model_validate(doc)
    except ValidationError as exc:
        raise BadAnswer(f"it is not a valid verdict: {problems(exc, 1)}") from None
    _noted(notes, found)
    return capped(verdict.model_copy(update={"tasks": tasks}), notes)


def _noted(notes: list[str] | None, found: list[str]) -> None:
    # Noted only once the verdict stands: a first answer refused for another reason leaves no note behind.
    if notes is not None:
        notes += found


def parse_verdict(text: str, notes: list[str] | None = None) -> Verdict:
    """A verdict from a model's text answer: one JSON object, fenced or bare, that matches the schema."""
    return check_verdict(_json_object(text), notes)


class _Lenient(BaseModel):
    # Another program's verdict may carry fields of its own; the ones we read are checked strictly.
    model_config = ConfigDict(extra="ignore", strict=True)


class OkVerdict(_Lenient):
    """Claude Code's prompt-hook answer."""

    ok: bool
    reason: str | None = None
    impossible: bool = False
    confidence: float = Field(default=0.5, ge=0, le=1)


class DecisionVerdict(_Lenient):
    decision: Literal["done", "continue", "replan"]
    reason: str | None = None
    confidence: float = Field(default=0.5, ge=0, le=1)


NO_REASON = "the oracle command gave no reason"


def parse_foreign_verdict(text: str, notes: list[str] | None = None) -> Verdict:
    """Our verdict, or one of the two common foreign shapes mapped onto it:
    ``{"ok", "reason", "impossible"?}`` and ``{"decision": "done"|"continue"|"replan", "reason"}``, each
    with an optional ``confidence`` and ``tasks`` as ours has them."""
    doc = _json_object(text)
    if "converged" in doc:
        return check_verdict(doc, notes)
    found: list[str] = []
    tasks = task_changes(doc, found)
    try:
        if "ok" in doc:
            ok = OkVerdict.model_validate(doc)
            reason = ok.reason or NO_REASON
            _noted(notes, found)
            return capped(Verdict(converged=ok.ok, reasons=[reason], next_hint="" if ok.ok else reason,
                                  confidence=ok.confidence, tasks=tasks,
                                  unfixable=Unfixable(reason=reason) if ok.impossible and not ok.ok else None), notes)
        if "decision" in doc:
            d = DecisionVerdict.model_validate(doc)
            reason = d.reason or NO_REASON
            hint = {"done": "", "continue": reason, "replan": f"Step back and re-plan the approach: {reason}"}
            _noted(notes, found)
            return capped(Verdict(converged=d.decision == "done", reasons=[reason], next_hint=hint[d.decision],
                                  confidence=d.confidence, tasks=tasks), notes)
    except ValidationError as exc:
        raise BadAnswer(problems(exc, 1)) from None
    raise BadAnswer('expected {"converged": ...} (verdict.schema.json), {"ok": bool, "reason": str} '
                    'or {"decision": "done"|"continue"|"replan", "reason": str}')
