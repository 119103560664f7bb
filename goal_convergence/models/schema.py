"""The JSON Schemas in ``schemas/``: generated from the models, shipped inside the package, loaded from there.

    python -m goal_convergence.models.schema          # which committed schema files differ from the models
    python -m goal_convergence.models.schema --write  # write them again from the models
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from . import Goal, Model, TriageItem, Verdict


@cache
def load(name: str) -> dict[str, Any]:
    return json.loads(resources.files("goal_convergence").joinpath(f"models/schemas/{name}.schema.json").read_text())


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    # JSON Schema patterns are ECMA-262, where `$` matches only at the very end; Python's `$` also
    # matches before a final newline, so "goal-abcdefgh\n" would pass as an id. `\Z` is the ECMA `$`.
    if isinstance(instance, str) and not re.search(re.sub(r"(?<!\\)\$", r"\\Z", pattern), instance):
        from jsonschema.exceptions import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator(name: str) -> Any:
    import jsonschema  # heavy, and only a check against a published schema needs it (the store does not)

    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})
    return cls(load(name))


def errors(doc: Any, name: str) -> list[str]:
    """Every way ``doc`` breaks the published schema ``name``, as readable lines (empty when it is valid)."""
    found = sorted(_validator(name).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in found]


# ---- generating the files from the models ---------------------------------------------------

DOCUMENTS: dict[str, tuple[type[Model], str]] = {
    "goal": (Goal, "Goal"),
    "triage-item": (TriageItem, "Triage item"),
    "verdict": (Verdict, "Oracle verdict"),
}
REGENERATE = "python -m goal_convergence.models.schema --write"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
# The keywords a published schema may use, in the order they are written. Anything else is refused,
# so that a bound pydantic cannot put into JSON Schema (it writes "ge" instead of "minimum") never
# passes for a rule.
KEYWORDS = ("$schema", "$id", "$ref", "title", "description", "type", "const", "enum", "pattern", "minLength",
            "minItems", "minimum", "exclusiveMinimum", "maximum", "additionalProperties", "properties", "required",
            "items", "anyOf", "allOf", "not", "if", "then", "else", "default", "$defs")
_VALUES = ("const", "enum", "default", "required")  # hold data, not schemas


class _Generator(GenerateJsonSchema):
    def normalize_name(self, name: str) -> str:
        # $defs named the way the documents name their keys: stoppingCondition, conditionEvidence.
        name = super().normalize_name(name)
        return name[:1].lower() + name[1:]


def _tidy(node: Any) -> Any:
    """``node`` with its keywords in KEYWORDS order, pydantic's titles dropped and descriptions on one line."""
    if isinstance(node, list):
        return [_tidy(item) for item in node]
    if not isinstance(node, dict):
        return node
    unknown = sorted(set(node) - set(KEYWORDS))
    if unknown:
        raise ValueError(f"the models give the JSON Schema keywords {unknown}, which schema.KEYWORDS does not know: "
                         f"put a field's bounds before its validators (see models/base.py), or add the keyword")
    tidy: dict[str, Any] = {}
    for key in (k for k in KEYWORDS if k in node and k != "title"):
        value = node[key]
        if key in ("properties", "$defs"):
            value = {name: _tidy(value[name]) for name in (sorted(value) if key == "$defs" else value)}
        elif key == "description":
            value = " ".join(value.split())
        elif key not in _VALUES:
            value = _tidy(value)
        tidy[key] = value
    return tidy


def json_schema(cls: type[Model]) -> dict[str, Any]:
    """What a document of model ``cls`` must satisfy, as JSON Schema, with its definitions in ``$defs``."""
    return _tidy(cls.model_json_schema(by_alias=True, schema_generator=_Generator, mode="validation"))


def generate(name: str) -> str:
    """The text of ``schemas/<name>.schema.json``, as the models define it."""
    cls, title = DOCUMENTS[name]
    head = {"$schema": DIALECT, "$id": f"https://goal-convergence.dev/schemas/{name}.schema.json", "title": title}
    return json.dumps({**head, **json_schema(cls)}, indent=2) + "\n"


def _file(name: str) -> Path:
    return Path(__file__).with_name("schemas") / f"{name}.schema.json"


def stale() -> list[str]:
    """The schema files that differ from what the models generate."""
    return [name for name in DOCUMENTS if not _file(name).is_file() or _file(name).read_text("utf-8") != generate(name)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m goal_convergence.models.schema", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the stale schema files from the models")
    found = stale()
    if not parser.parse_args(argv).write:
        print(f"{', '.join(found)} differ from the models; run `{REGENERATE}`" if found else "the schemas match")
        return 1 if found else 0
    for name in found:
        _file(name).write_text(generate(name), encoding="utf-8")
        print(f"wrote {_file(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
