"""The JSON Schemas in ``schemas/`` ship inside the package and are loaded from there."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_NAMES = ("goal", "verdict", "triage-item")

# I-JSON (RFC 7493): numbers a double can hold exactly, no NaN or Infinity, no duplicate keys, no
# unpaired surrogates. Python's json accepts all of those, and a document that means different
# things to different readers is not one we want to validate, let alone act on.
_SAFE_INT = 2**53 - 1


@cache
def load(name: str) -> dict[str, Any]:
    return json.loads(resources.files("goal_convergence").joinpath(f"schemas/{name}.schema.json").read_text())


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    # JSON Schema patterns are ECMA-262, where `$` matches only at the very end; Python's `$` also
    # matches before a final newline, so "goal-abcdefgh\n" would pass as an id. `\Z` is the ECMA `$`.
    if isinstance(instance, str) and not re.search(re.sub(r"(?<!\\)\$", r"\\Z", pattern), instance):
        from jsonschema.exceptions import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator(name: str) -> Any:
    import jsonschema  # heavy: only code that reads or writes documents pays for it

    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})
    return cls(load(name))


def errors(doc: Any, name: str) -> list[str]:
    """Every way ``doc`` breaks schema ``name``, as readable lines (empty when it is valid)."""
    found = sorted(_validator(name).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in found]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        dupes = sorted({k for k, _ in pairs if sum(k == other for other, _ in pairs) > 1})
        raise ValueError(f"duplicate keys {dupes}")
    return doc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


def _safe_int(text: str) -> int:
    value = int(text)
    if abs(value) > _SAFE_INT:
        raise ValueError(f"{text} is too large to be exact in JSON")
    return value


def parse_json(text: str) -> Any:
    """Parse a document the way every store read does; raises ValueError for anything not I-JSON."""
    doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant,
                     parse_float=_finite, parse_int=_safe_int)
    if "\\u" in text:  # only a \u escape can smuggle in a lone surrogate: UTF-8 text cannot hold one
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds an unpaired surrogate (\\ud800-\\udfff)") from None
    return doc
