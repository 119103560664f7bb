"""A judge's verdict: strictly from a model's answer (one JSON object, fenced or bare, that matches
the verdict schema), or leniently from another program's (``parse_foreign_verdict``)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import schema
from ..errors import OracleError, problems
from ..models import Cost, Model, Unfixable, Verdict


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


def check_verdict(doc: dict[str, Any]) -> Verdict:
    problems = schema.errors(doc, "verdict")
    if problems:
        raise BadAnswer("it does not match the verdict schema: " + "; ".join(problems[:5]))
    try:
        return Verdict.model_validate(doc)
    except ValidationError as exc:
        raise BadAnswer(f"it is not a valid verdict: {problems(exc, 1)}") from None


def parse_verdict(text: str) -> Verdict:
    """A verdict from a model's text answer: one JSON object, fenced or bare, that matches the schema."""
    return check_verdict(_json_object(text))


class _Lenient(BaseModel):
    # Another program's verdict may carry fields of its own; the ones we read are checked strictly.
    model_config = ConfigDict(extra="ignore", strict=True)


class OkVerdict(_Lenient):
    """Claude Code's prompt-hook answer."""

    ok: bool
    reason: str | None = None
    impossible: bool = False


class DecisionVerdict(_Lenient):
    decision: Literal["done", "continue", "replan"]
    reason: str | None = None


NO_REASON = "the oracle command gave no reason"


def parse_foreign_verdict(text: str) -> Verdict:
    """Our verdict, or one of the two common foreign shapes mapped onto it:
    ``{"ok", "reason", "impossible"?}`` and ``{"decision": "done"|"continue"|"replan", "reason"}``."""
    doc = _json_object(text)
    try:
        if "converged" in doc:
            return check_verdict(doc)
        if "ok" in doc:
            ok = OkVerdict.model_validate(doc)
            reason = ok.reason or NO_REASON
            return Verdict(converged=ok.ok, reasons=[reason], next_hint="" if ok.ok else reason,
                           unfixable=Unfixable(reason=reason) if ok.impossible and not ok.ok else None)
        if "decision" in doc:
            d = DecisionVerdict.model_validate(doc)
            reason = d.reason or NO_REASON
            hint = {"done": "", "continue": reason, "replan": f"Step back and re-plan the approach: {reason}"}
            return Verdict(converged=d.decision == "done", reasons=[reason], next_hint=hint[d.decision])
    except ValidationError as exc:
        raise BadAnswer(problems(exc, 1)) from None
    raise BadAnswer('expected {"converged": ...} (verdict.schema.json), {"ok": bool, "reason": str} '
                    'or {"decision": "done"|"continue"|"replan", "reason": str}')
