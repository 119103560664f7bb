"""What one judge call sends and may spend: the system prompt, the user and repair messages, the
verdict schema as a model reads it, and the most a call can cost."""

from __future__ import annotations

import json

from ..models import schema
from ..storage import cost as pricing
from ..system import mask
from .input import OracleInput
from .verdict import BadAnswer

MAX_TOOL_ROUNDS = 8
MAX_OUTPUT_TOKENS = 4096
# A verdict (reasons, a hint, condition results) is a few hundred tokens; this is what a call that
# answers is expected to write, not the most it may.
VERDICT_OUTPUT_TOKENS = 1024
ROUND_RESULT_CHARS = 12_000  # all tool results of one round together


def schema_text(any_tasks: bool = False) -> str:
    """The verdict schema without "$schema" and "$id": they mean nothing to a model, and Claude
    Code's validator refuses a schema that names draft 2020-12's meta-schema. ``any_tasks``: the
    ``tasks`` field may also hold any value, for Claude Code's validator, which refuses the whole
    verdict (after five tries) over a malformed plan change that ``check_verdict`` would salvage."""
    doc = {k: v for k, v in schema.load("verdict").items() if k not in ("$schema", "$id")}
    if any_tasks:
        tasks = doc["properties"]["tasks"]
        doc["properties"] = {**doc["properties"], "tasks": {**tasks, "anyOf": [*tasks["anyOf"], {}]}}
    return json.dumps(doc, separators=(",", ":"))


def system_prompt(tools: str) -> str:
    """The oracle's instructions: static, so the API can cache them."""
    return f"""You are the oracle of goal-convergence: an independent judge with read-only tools. A coding \
agent, the maker, works toward an objective in this project and has just tried to stop. You did not \
write its code and you do not take its summary on trust: you check.

The input, as JSON: the objective; the plan, when the goal keeps one (tasks with ids t1, t2, ..., each \
open or done); each stopping condition (its command, whether it passed, exit code, \
failing tests and the tail of its output); the maker's summary of its iteration; the last iterations \
(verdicts, hints and fingerprints: the same fingerprints again mean no progress); the diff stat since \
the goal began; and the integrity guard's findings: check-defining files (tests, runner configs, the \
scripts the checks run) changed, deleted or added since the goal began, the test census now and at \
the start, the re-run of the checks with the original check files, and the issues it found.

How to judge:
- The stopping conditions are ground truth. A condition that failed is failed; your own check can add \
a requirement, never remove one.
- A goal is never met by weakening, skipping or deleting its checks: deleted or emptied tests, skip or \
xfail marks, loosened assertions, lowered thresholds, excluded files, `|| true`, or edits to the \
scripts and configs the checks run. A change to a check-defining file is suspect: read it and accept \
it only if the objective itself calls for it.
- integrity.findings are suspicions for you to settle by reading the code: "forgery" is product code \
(not a test) added since the goal began that reaches into the test framework or the process's exit \
(pytest's reports, hooks or internals, unittest's results, os._exit or an exit with success, atexit, \
sys.excepthook, an __eq__ that is always true, its caller's frame, the clock, the run's report files); \
"special-casing" is product code that compares an input against a literal of a test that failed when \
the goal began and answers with another (`if x == 7: return 42`); "census-disagrees" is a test report \
file that says more passed than the runner's own summary. Each has an id (f1, f2, ...). Open each \
file and line named. If the code makes the tests pass without doing what the objective asks, the goal \
has not converged: say which finding in reasons. If it is a legitimate part of the fix, put its id in \
findingsCleared and say why in reasons. A finding you do not clear keeps the goal from converging, \
whatever "converged" says, and goes to a person.
- Judge the objective, not only the checks: when the checks pass but the objective is not met, the \
goal has not converged.
- nextHint: one concrete next step for the maker: the file, the function, the failing test, and what \
to change. Leave it empty only when the goal has converged.
- unfixable: only when the goal cannot be reached in this project by changing its code (it needs a \
credential, a service, or a decision only the user can make), with the evidence; otherwise leave it out.
- confidence: how sure you are, from 0 to 1. A goal may require a minimum: below it, "converged" counts as \
not converged.
- tasks: the plan. The goal converges only once no task is open, so complete (tasks.complete: the ids) each \
open task you have checked is done, and add (tasks.add: short titles) only a concrete step the objective still \
needs that the checks do not cover and the plan does not hold yet. Leave tasks out when nothing changes.
- {tools} Use at most {MAX_TOOL_ROUNDS} rounds of tools, and only what you need.

Answer with one JSON object that matches this JSON Schema, and nothing else:
{schema_text()}"""


def user_message(oracle_input: OracleInput) -> str:
    return f"Judge this iteration.\n\n```json\n{mask.text(oracle_input.to_json())}\n```"


def repair_message(problem: BadAnswer) -> str:
    return (f"Your answer is not a valid verdict: {problem}. Answer again with only the JSON object, "
            "matching the schema, and no other text.")


def token_estimate(text: str) -> int:
    return -(-len(text) // 4)


def call_estimate(price: pricing.Price, base_tokens: int) -> float:
    """What one judge call that answers is expected to cost: its real input, written to the cache once,
    and a verdict's output. The engine asks only when this fits in the dollars left; tool rounds can make
    the call cost more, so a dollar budget may be overshot, by at most that one call's cost
    (docs/headless.md, Budgets)."""
    if price.long_context and base_tokens > (price.long_context_above or 0):
        price = price.long_context
    return (base_tokens * max(price.input, price.cache_write_5m) + VERDICT_OUTPUT_TOKENS * price.output) / 1e6


def cost_upper_bound(price: pricing.Price, base_tokens: int) -> float:
    """The most one judge call can cost: every tool round used, each round's results and output fed
    back as input, every call answering ``MAX_OUTPUT_TOKENS``, a repair round, and no cache hit."""
    calls = MAX_TOOL_ROUNDS + 2
    grow = ROUND_RESULT_CHARS // 4 + MAX_OUTPUT_TOKENS
    if price.long_context and base_tokens + (calls - 1) * grow > (price.long_context_above or 0):
        price = price.long_context
    tokens_in = calls * base_tokens + grow * calls * (calls - 1) // 2
    per_in = max(price.input, price.cache_write_5m, price.cache_write_1h)
    return (tokens_in * per_in + calls * MAX_OUTPUT_TOKENS * price.output) / 1e6
