"""The pydantic models and the JSON Schemas are one contract: whatever one accepts, the other does."""

from __future__ import annotations

import copy
import json
import typing
from functools import reduce
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from goal_convergence import schema
from goal_convergence.models import Goal, Model, TriageItem, Verdict
from tests.strategies import models

KINDS = [(Goal, "goal"), (TriageItem, "triage-item"), (Verdict, "verdict")]
DELETE = object()


def schema_accepts(doc: Any, name: str) -> bool:
    return not schema.errors(doc, name)


def model_accepts(doc: Any, cls: type[Model]) -> bool:
    try:
        cls.from_doc(doc)
    except ValidationError:
        return False
    return True


def assert_agree(doc: Any, cls: type[Model], name: str) -> bool:
    by_schema, by_model = schema_accepts(doc, name), model_accepts(doc, cls)
    assert by_schema == by_model, f"schema {'accepts' if by_schema else 'rejects'} but model does not: " \
                                  f"{schema.errors(doc, name)} {doc!r}"
    return by_schema


# ---- the same fields, nested the same way ---------------------------------------------------

def _resolve(root: dict, node: dict) -> dict:
    while "$ref" in node:
        node = reduce(lambda n, key: n[key], node["$ref"].removeprefix("#/").split("/"), root)
    return node


def _object_nodes(root: dict, node: dict) -> list[dict]:
    """The object schemas a property's value can be, through $ref, anyOf, items and maps."""
    node = _resolve(root, node)
    if "properties" in node:
        return [node]
    found = [o for branch in node.get("anyOf", []) for o in _object_nodes(root, branch)]
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            found += _object_nodes(root, node[key])
    return found


def _models_in(tp: Any) -> list[type[Model]]:
    if isinstance(tp, type) and issubclass(tp, Model):
        return [tp]
    return [m for arg in typing.get_args(tp) for m in _models_in(arg)]


def _pairs(cls: type[Model], node: dict, root: dict, path: str):
    yield cls, node, path
    hints = typing.get_type_hints(cls, include_extras=True)
    for name, field in cls.model_fields.items():
        nested, prop = _models_in(hints[name]), node["properties"].get(field.alias, {})
        objects = _object_nodes(root, prop)
        assert len(nested) == len(objects), f"{path}.{field.alias}: models {nested} vs schema objects {objects}"
        for sub, obj in zip(nested, objects):
            yield from _pairs(sub, obj, root, f"{path}.{field.alias}")


@pytest.mark.parametrize(("cls", "name"), KINDS)
def test_every_model_has_the_schemas_keys_and_required_keys(cls, name):
    root = schema.load(name)
    for model, node, path in _pairs(cls, root, root, name):
        aliases = {f.alias for f in model.model_fields.values()}
        required = {f.alias for f in model.model_fields.values() if f.is_required()}
        assert aliases == set(node["properties"]), f"{path}: {model.__name__} keys differ"
        assert required == set(node.get("required", [])), f"{path}: {model.__name__} required keys differ"
        assert node.get("additionalProperties") is False, f"{path}: extra keys must be refused"


def test_the_verdict_schema_is_the_one_inside_the_goal_schema():
    goal, verdict = schema.load("goal"), schema.load("verdict")
    inner = goal["$defs"]["verdict"]
    assert (inner["properties"], inner["required"]) == (verdict["properties"], verdict["required"])
    assert goal["$defs"]["conditionResult"] == verdict["$defs"]["conditionResult"]
    assert schema.load("triage-item")["$defs"]["spent"] == goal["$defs"]["spent"]


# ---- every valid model is a valid document, and reads back as itself ---------------------------

@pytest.mark.parametrize(("cls", "name"), KINDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_model_dump_validates_and_round_trips(cls, name, data):
    item = data.draw(models(cls))
    doc = item.dump()
    assert schema.errors(doc, name) == []
    assert cls.from_doc(doc) == item
    assert cls.from_doc(schema.parse_json(json.dumps(doc))) == item


# ---- documents one side rejects, the other rejects too (and the other way) --------------------

PALETTE = [None, True, False, 0, 1, -1, 2.5, 3.0, 101, 2**60, "", "x", "2h", "0s", "1.5h", "goal-abcd1234",
           "goal-abcd1234\n", "goal-ABCD1234", "tri-abcd1234", "2026-01-01T00:00:00Z", "2026-13-01T00:00:00Z",
           "active", "test_pass", "coverage_threshold", "converged", [], ["x"], [{}], {}, {"x": 1}]


@st.composite
def mutated(draw, cls):
    """A valid document with one change somewhere: a value replaced, a key or item dropped or added."""
    doc = draw(models(cls)).dump()
    node = doc
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        deeper = [k for k in keys if isinstance(node[k], dict | list) and node[k]]
        if not deeper or draw(st.booleans()):
            break
        node = node[draw(st.sampled_from(deeper))]
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    value = draw(st.sampled_from(PALETTE))
    op = draw(st.sampled_from(["set", "delete", "add"] if keys else ["add"]))
    if op == "add":
        if isinstance(node, dict):
            node[draw(st.sampled_from(["extra", "goal_id", "max_iterations", "threshold", "type"]))] = value
        else:
            node.append(value)
    elif op == "set":
        node[draw(st.sampled_from(keys))] = value
    else:
        del node[draw(st.sampled_from(keys))]
    return doc


@pytest.mark.parametrize(("cls", "name"), KINDS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_schema_and_models_agree_on_changed_documents(cls, name, data):
    assert_agree(data.draw(mutated(cls)), cls, name)


def _goal_doc() -> dict:
    return {
        "goalId": "goal-abcd1234", "objective": "make all tests pass",
        "stoppingConditions": [{"type": "test_pass", "command": "python -m pytest -q"}],
        "budget": {"maxIterations": 15, "maxDuration": "2h", "maxDollars": 10},
        "oracle": {"model": "claude-haiku-5-5"}, "projectRoot": "/tmp/p",
        "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
    }


def _changed(doc: dict, path: str, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
    node = reduce(lambda n, key: n[key], parents, doc)
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return doc


REJECTED = [
    ("no condition", "stoppingConditions", []),
    ("conditions missing", "stoppingConditions", DELETE),
    ("conditions null", "stoppingConditions", None),
    ("budget with no limit", "budget", {}),
    ("budget with only nulls", "budget", {"maxIterations": None, "maxDuration": None, "maxDollars": None}),
    ("budget null", "budget", None),
    ("zero iterations", "budget/maxIterations", 0),
    ("bool for an int", "budget/maxIterations", True),
    ("string for an int", "budget/maxIterations", "15"),
    ("fraction for an int", "budget/maxIterations", 1.5),
    ("zero dollars", "budget/maxDollars", 0),
    ("negative dollars", "budget/maxDollars", -1),
    ("string for a number", "budget/maxDollars", "10"),
    ("bool for a number", "budget/maxDollars", False),
    ("unknown budget key", "budget/maxTurns", 3),
    ("snake_case budget key", "budget/max_iterations", 3),
    *[(f"bad duration {d!r}", "budget/maxDuration", d)
      for d in ["2x", "1.5h", "h", "", "2", "2h ", " 2h", "2h\n", "-1h", "2H", "1h1h", "\u0662h", 120]],
    ("coverage without threshold", "stoppingConditions/0", {"type": "coverage_threshold", "command": "c"}),
    ("coverage with null threshold", "stoppingConditions/0",
     {"type": "coverage_threshold", "command": "c", "threshold": None}),
    ("threshold on a test condition", "stoppingConditions/0/threshold", 50),
    ("threshold over 100", "stoppingConditions/0",
     {"type": "coverage_threshold", "command": "c", "threshold": 101}),
    ("threshold as a string", "stoppingConditions/0",
     {"type": "coverage_threshold", "command": "c", "threshold": "80"}),
    ("unknown condition type", "stoppingConditions/0/type", "unit_tests"),
    ("empty command", "stoppingConditions/0/command", ""),
    ("null command", "stoppingConditions/0/command", None),
    ("zero timeout", "stoppingConditions/0/timeoutSeconds", 0),
    ("extra key in a condition", "stoppingConditions/0/shell", "bash"),
    *[(f"bad id {i!r}", "goalId", i) for i in ["goal-ABCD1234", "goal-abc", "../x", "goal-../../etc", "/etc/passwd",
                                                 "goal-abcd1234\n", "goal-abcd12345", "goal-abcd123\u0661", 12345678,
                                                 None]],
    ("id missing", "goalId", DELETE),
    ("snake_case key beside the camelCase ones", "goal_id", "goal-abcd1234"),
    ("extra key", "extra", 1),
    ("empty objective", "objective", ""),
    ("null objective", "objective", None),
    ("number objective", "objective", 5),
    ("unknown state", "state", "running"),
    ("null state", "state", None),
    ("unknown stop reason", "stopReason", "done"),
    ("negative spend", "spent", {"iterations": -1}),
    ("fraction iterations", "spent", {"iterations": 1.5}),
    ("string seconds", "spent", {"activeSeconds": "1"}),
    ("null counter", "spent", {"makerDollars": None}),
    ("extra counter", "spent", {"dollars": 1}),
    ("not a timestamp", "createdAt", "yesterday"),
    ("month 13", "createdAt", "2026-13-01T00:00:00Z"),
    ("no time zone", "createdAt", "2026-01-01T00:00:00"),
    ("space for T", "createdAt", "2026-01-01 00:00:00Z"),
    ("non-ASCII digits", "createdAt", "\u0662\u0660\u0662\u0666-01-01T00:00:00Z"),
    ("schema version 2", "schemaVersion", 2),
    ("schema version true", "schemaVersion", True),
    ("schema version string", "schemaVersion", "1"),
    ("oracle without model", "oracle", {"provider": "auto"}),
    ("oracle with empty model", "oracle", {"model": ""}),
    ("unknown oracle provider", "oracle", {"model": "m", "provider": "openai"}),
    ("number session", "sessionId", 5),
    ("negative offset", "transcriptOffsets", {"a.jsonl": -1}),
    ("string offset", "transcriptOffsets", {"a.jsonl": "1"}),
    ("escalation without time", "escalation", {"stopReason": "stuck"}),
    ("escalation with bad triage id", "escalation",
     {"stopReason": "stuck", "at": "2026-01-01T00:00:00Z", "triageId": "tri-XYZ"}),
    ("iteration number 0", "history", [{"number": 0, "startedAt": "2026-01-01T00:00:00Z",
                                        "endedAt": "2026-01-01T00:00:00Z", "decision": {"action": "continue"}}]),
    ("iteration without decision", "history", [{"number": 1, "startedAt": "2026-01-01T00:00:00Z",
                                                "endedAt": "2026-01-01T00:00:00Z"}]),
]

ACCEPTED = [
    ("an integer written as 3.0", "budget/maxIterations", 3.0),
    ("only a token limit", "budget", {"maxTokens": 1000}),
    ("a long duration", "budget/maxDuration", "1d2h3m4s"),
    ("an int where a number goes", "spent", {"activeSeconds": 5, "makerDollars": 0}),
    ("coverage with an int threshold", "stoppingConditions/0",
     {"type": "coverage_threshold", "command": "c", "threshold": 80}),
    ("a null threshold on a test condition", "stoppingConditions/0/threshold", None),
    ("an offset time with microseconds", "createdAt", "2026-01-01T10:00:00.123456+05:30"),
    ("schema version 1.0", "schemaVersion", 1.0),
    ("a multi-line Unicode objective", "objective", "make \u00e9t\u00e9 work\nand don't break the API"),
    ("an escalation with a null triage id", "escalation",
     {"stopReason": "ceiling", "at": "2026-01-01T00:00:00Z", "triageId": None}),
]


@pytest.mark.parametrize(("why", "path", "value"), REJECTED, ids=[r[0] for r in REJECTED])
def test_both_reject(why, path, value):
    assert schema_accepts(_goal_doc(), "goal") and model_accepts(_goal_doc(), Goal)
    assert assert_agree(_changed(_goal_doc(), path, value), Goal, "goal") is False


@pytest.mark.parametrize(("why", "path", "value"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_both_accept(why, path, value):
    assert assert_agree(_changed(_goal_doc(), path, value), Goal, "goal") is True


@pytest.mark.parametrize("doc", [[], "goal", None, 1])
def test_both_reject_a_document_that_is_not_an_object(doc):
    assert assert_agree(doc, Goal, "goal") is False


VERDICTS = [
    ({"converged": True}, True),
    ({"converged": False, "confidence": 1, "nextHint": "fix tests/test_a.py::test_b"}, True),
    ({"converged": False, "unfixable": {"reason": "needs a licence key", "evidence": ["README"]}}, True),
    ({"converged": "yes"}, False),
    ({"converged": True, "confidence": 1.5}, False),
    ({"converged": False, "unfixable": {"reason": ""}}, False),
    ({"converged": True, "conditionResults": [{"type": "tests", "passed": True}]}, False),
    ({"converged": True, "next_hint": "x"}, False),
    ({}, False),
]


@pytest.mark.parametrize(("doc", "valid"), VERDICTS)
def test_verdicts(doc, valid):
    assert assert_agree(doc, Verdict, "verdict") is valid


TRIAGE = {"triageId": "tri-abcd1234", "objective": "o", "projectRoot": "/p",
          "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(("change", "valid"), [
    ({}, True),
    ({"status": "closed"}, False),
    ({"count": 0}, False),
    ({"goalId": "goal-x"}, False),
    ({"goalId": None, "source": "heartbeat"}, True),
    ({"triageId": "tri-abcd1234/../x"}, False),
])
def test_triage_items(change, valid):
    assert assert_agree({**TRIAGE, **change}, TriageItem, "triage-item") is valid


# ---- what counts as JSON at all --------------------------------------------------------------

@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}',
                                  '{"a": 9007199254740993}', '{"a": 1, "a": 2}', '{"a": 1',
                                  '{"a": "\\ud800"}', '{"a": ["x\\udce9"]}', '{"\\udfff": 1}'])
def test_documents_that_are_not_interoperable_json_are_refused(text):
    with pytest.raises(ValueError):
        schema.parse_json(text)


def test_ordinary_json_parses():
    text = '{"a": [1, 2.5, -3e2, "x", null, true], "b": {"c": 9007199254740991}, "d": "\\ud83d\\ude00 \\u00e9"}'
    assert schema.parse_json(text) == {"a": [1, 2.5, -300.0, "x", None, True], "b": {"c": 9007199254740991},
                                       "d": "\U0001F600 \u00e9"}


@pytest.mark.parametrize(("path", "value"), [("objective", "caf\udce9"), ("stoppingConditions/0/description", "\ud800"),
                                             ("sessionId", "s\udfff"), ("transcriptOffsets", {"\udce9": 1})])
def test_a_model_never_holds_an_unpaired_surrogate(path, value):
    # The schema cannot say it, so JSON parsing refuses them (above) and the models refuse them here.
    with pytest.raises(ValidationError):
        Goal.from_doc(_changed(_goal_doc(), path, value))
