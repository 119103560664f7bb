"""The models are the contract and the JSON Schemas in schemas/ are generated from them: the committed
files are what the models generate, and whatever one accepts, the other accepts too."""

from __future__ import annotations

import copy
import json
from functools import reduce
from typing import Annotated, Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from goal_convergence.models import Goal, Model, TriageItem, Verdict, schema
from goal_convergence.models.base import Int
from goal_convergence.system import files
from tests.strategies import models

KINDS = [(Goal, "goal"), (TriageItem, "triage-item"), (Verdict, "verdict")]
DELETE = object()


def model_accepts(doc: Any, cls: type[Model]) -> bool:
    try:
        cls.from_doc(doc)
    except ValidationError:
        return False
    return True


def assert_agree(doc: Any, cls: type[Model], name: str) -> bool:
    by_schema, by_model = not schema.errors(doc, name), model_accepts(doc, cls)
    assert by_schema == by_model, f"schema {'accepts' if by_schema else 'rejects'} but model does not: " \
                                  f"{schema.errors(doc, name)} {doc!r}"
    return by_schema


# ---- the committed files are the models' --------------------------------------------------------

def test_the_committed_schema_files_are_generated_from_the_models():
    stale = ", ".join(f"schemas/{name}.schema.json" for name in schema.stale())
    assert not stale, f"{stale} differ from the models: run `{schema.REGENERATE}` and commit the files"


@pytest.mark.parametrize("name", schema.DOCUMENTS)
def test_each_schema_is_a_draft_2020_12_schema_with_its_title_and_id(name):
    doc = schema.load(name)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$id"].endswith(f"/{name}.schema.json") and doc["title"] and doc["description"]


def test_a_bound_json_schema_cannot_say_is_refused_not_dropped():
    class Late(Model):
        count: Annotated[Int, Field(ge=1)]  # bounds after the validator: pydantic would write "ge", not "minimum"

    with pytest.raises(ValueError, match=r"\['ge'\]"):
        schema.json_schema(Late)


# ---- every valid model is a valid document, and reads back as itself ---------------------------

@pytest.mark.parametrize(("cls", "name"), KINDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_model_dump_validates_and_round_trips(cls, name, data):
    item = data.draw(models(cls))
    doc = item.dump()
    assert schema.errors(doc, name) == []
    assert cls.from_doc(doc) == item
    assert cls.from_doc(files.parse_json(json.dumps(doc))) == item


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


# ---- where the two could part: rules said twice, and the edges of regexes and numbers -----------

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


COVERAGE = {"type": "coverage_threshold", "command": "c"}
EDGES = [
    # the rules a model validator enforces and json_schema_extra says again for the schema
    ("budget with no limit", "budget", {}, False),
    ("budget with only nulls", "budget", {"maxIterations": None, "maxDuration": None, "maxDollars": None}, False),
    ("only a token limit", "budget", {"maxTokens": 1000}, True),
    ("coverage without threshold", "stoppingConditions/0", COVERAGE, False),
    ("coverage with null threshold", "stoppingConditions/0", {**COVERAGE, "threshold": None}, False),
    ("coverage with an int threshold", "stoppingConditions/0", {**COVERAGE, "threshold": 80}, True),
    ("threshold on a test condition", "stoppingConditions/0/threshold", 50, False),
    ("a null threshold on a test condition", "stoppingConditions/0/threshold", None, True),
    # whole numbers: JSON's 3.0 is an integer, true is not a number
    ("an integer written as 3.0", "budget/maxIterations", 3.0, True),
    ("fraction for an int", "budget/maxIterations", 1.5, False),
    ("bool for an int", "budget/maxIterations", True, False),
    ("bool for a number", "budget/maxDollars", False, False),
    ("schema version 1.0", "schemaVersion", 1.0, True),
    ("schema version true", "schemaVersion", True, False),
    ("schema version 2", "schemaVersion", 2, False),
    ("negative offset", "transcriptOffsets", {"a.jsonl": -1}, False),
    # patterns: `$` is the very end, [0-9] is ASCII only
    *[(f"bad duration {d!r}", "budget/maxDuration", d, False) for d in ["1.5h", "h", "2h ", "2h\n", "1h1h", "\u0662h"]],
    ("a long duration", "budget/maxDuration", "1d2h3m4s", True),
    *[(f"bad id {i!r}", "goalId", i, False) for i in ["goal-abcd1234\n", "goal-abcd12345", "goal-abcd123\u0661"]],
    ("non-ASCII digits", "createdAt", "\u0662\u0660\u0662\u0666-01-01T00:00:00Z", False),
    ("no time zone", "createdAt", "2026-01-01T00:00:00", False),
    ("an offset time with microseconds", "createdAt", "2026-01-01T10:00:00.123456+05:30", True),
    ("escalation with bad triage id", "escalation", {"stopReason": "stuck", "at": "2026-01-01T00:00:00Z",
                                                     "triageId": "tri-XYZ"}, False),
    # keys are camelCase on disk, and only those
    ("snake_case key beside the camelCase ones", "goal_id", "goal-abcd1234", False),
    ("snake_case budget key", "budget/max_iterations", 3, False),
]


@pytest.mark.parametrize(("why", "path", "value", "valid"), EDGES, ids=[e[0] for e in EDGES])
def test_edges(why, path, value, valid):
    assert assert_agree(_goal_doc(), Goal, "goal") is True
    assert assert_agree(_changed(_goal_doc(), path, value), Goal, "goal") is valid


@pytest.mark.parametrize("doc", [[], "goal", None, 1])
def test_both_reject_a_document_that_is_not_an_object(doc):
    assert assert_agree(doc, Goal, "goal") is False


# ---- what counts as JSON at all --------------------------------------------------------------

@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}',
                                  '{"a": 9007199254740993}', '{"a": 1, "a": 2}', '{"a": 1',
                                  '{"a": "\\ud800"}', '{"a": ["x\\udce9"]}', '{"\\udfff": 1}'])
def test_documents_that_are_not_interoperable_json_are_refused(text):
    with pytest.raises(ValueError):
        files.parse_json(text)


def test_ordinary_json_parses():
    text = '{"a": [1, 2.5, -3e2, "x", null, true], "b": {"c": 9007199254740991}, "d": "\\ud83d\\ude00 \\u00e9"}'
    assert files.parse_json(text) == {"a": [1, 2.5, -300.0, "x", None, True], "b": {"c": 9007199254740991},
                                       "d": "\U0001F600 \u00e9"}


@pytest.mark.parametrize(("path", "value"), [("objective", "caf\udce9"), ("stoppingConditions/0/description", "\ud800"),
                                             ("sessionId", "s\udfff"), ("transcriptOffsets", {"\udce9": 1})])
def test_a_model_never_holds_an_unpaired_surrogate(path, value):
    # The schema cannot say it, so JSON parsing refuses them (above) and the models refuse them here.
    with pytest.raises(ValidationError):
        Goal.from_doc(_changed(_goal_doc(), path, value))
