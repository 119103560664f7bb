"""The oracle: a second, read-only judge of each iteration, that did not write the code.

``build_input`` turns a goal and its fresh condition evidence into a small ``OracleInput``;
``get_oracle`` picks the judge the goal asks for, and ``Oracle.judge`` answers a ``Judgement``
(the verdict as the oracle gave it, and what it cost). Providers:

- ``anthropic``: the Messages API with read-only tools confined to the project root;
- ``claude-cli``: the user's own Claude Code (``claude -p``), for a login without an API key;
- ``command``: any program that reads the input as JSON on stdin and prints a verdict;
- ``conditions``: no model at all: the conditions alone, plus an optional ``--expect`` regex.

The rule "converged only if every condition passed" is not applied here: the verdict comes back
as given, and the pure decision step overrides it. ``anthropic`` is imported only inside the
provider that uses it: the hooks import this module on every stop.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import cost as pricing
from . import schema, tree
from .claude_code import printmode as claude_code
from .errors import InvalidInput, OracleError, OracleUnavailable
from .models import (Census, ConditionEvidence, ConditionResult, ConditionType, Cost, Goal, Integrity, Iteration,
                     Model, OracleConfig, Unfixable, Verdict)
from .oracle_tools import MAX_RESULT_CHARS, Toolbox, cut

MAX_TOOL_ROUNDS = 8
MAX_OUTPUT_TOKENS = 4096
ROUND_RESULT_CHARS = 12_000  # all tool results of one round together
MAX_INPUT_TOKENS = 8_000
# chars/4 of the input JSON stays under MAX_INPUT_TOKENS, with room for the message around it.
INPUT_CHARS = 28_000
DEFAULT_TIMEOUT = 120.0
DEFAULT_RETRIES = 4
# Claude Code's own system prompt remnant and its Read/Grep/Glob/StructuredOutput tool definitions.
CLAUDE_CODE_OVERHEAD_TOKENS = 4_000


class JudgeError(OracleError):
    """A judge error. ``cost`` is what the failed attempt had already spent: it still counts."""

    def __init__(self, message: str, cost: Cost | None = None) -> None:
        super().__init__(message)
        self.cost = cost or Cost()


class BadAnswer(ValueError):
    """An answer that is not a verdict; the message says why, for the repair round."""


# ---- the input ------------------------------------------------------------------------------


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


class OracleInput(Model):
    objective: str
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
                guard: Integrity | None = None) -> OracleInput:
    """The oracle's input, bounded to ``INPUT_CHARS``. Every failing test the evidence names keeps
    its name; what gives way is messages, details and output tails."""
    root = Path(goal.project_root)
    fixed = OracleInput(
        objective=_clip(goal.objective, 2_000),
        conditions=[],
        maker_summary=_clip(maker_summary, 4_000, head=1_000) if maker_summary else None,
        recent_iterations=[_past(it) for it in goal.history[-3:]],
        diff_stat=_clip(tree.diff_stat(root, goal.base_commit), 2_000),
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
    failures = compact_failures(ev.failure_lines, budget * 2 // 3 if not ev.passed else budget // 4)
    left = budget - sum(len(f) + 4 for f in failures) - len(ev.command) - 200
    tail = _clip(ev.output_tail or ev.output_head, min(3_000 if not ev.passed else 600, max(0, left)), head=0)
    return ConditionInput(index=ev.index, type=ev.type, command=_clip(ev.command, 500) or "", passed=ev.passed,
                          exit_code=ev.exit_code, timed_out=ev.timed_out, threshold=threshold,
                          coverage=ev.coverage, error=_clip(ev.error, 500), failures=failures, tail=tail)


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
        + (": " + "; ".join(_clip(f, 300) or "" for f in p.failures[:5]) if p.failures else ""))
    return IntegrityInput(enforced=guard.enforced, changed=guard.changed[:30], deleted=guard.deleted[:30],
                          added=guard.added[:30], census=[census(e.index, e.census) for e in evidence],
                          pristine=pristine,
                          issues=[_clip(f"{i.kind}: {i.subject}: {i.detail}", 300) or "" for i in guard.issues[:10]])


def _past(it: Iteration) -> PastIteration:
    v = it.verdict
    return PastIteration(
        number=it.number, converged=v.converged if v else None,
        reasons=[_clip(r, 300) or "" for r in v.reasons[:3]] if v else [],
        next_hint=(_clip(v.next_hint, 600) or "") if v else "", judge_error=_clip(it.judge_error, 300),
        action=it.decision.action,
        # 12 hex digits tell "same as before" apart as well as 64 do, at a fifth of the tokens.
        condition_fingerprints=[c.fingerprint[:12] for c in it.conditions],
        tree_fingerprint=it.tree_fingerprint[:12],
    )


# pytest "FAILED path::test - message", unittest "FAIL: test (mod.Class)", go "--- FAIL: TestX (0.01s)".
_TEST_ID = re.compile(r"^(FAILED|ERROR|FAIL:|ERROR:|--- FAIL:)\s+(.+?)(?:\s+-\s+.*)?$")
_GO_TIME = re.compile(r"\s+\(\d+(?:\.\d+)?m?s\)$")


def compact_failures(lines: list[str], budget: int) -> list[str]:
    """The failure lines, deduplicated, in at most about ``budget`` characters. When they do not
    fit, every failing test is still named (grouped by file, without its message) and the
    messages and details fill what room is left."""
    lines = list(dict.fromkeys(s.strip() for s in lines if s.strip()))
    if sum(len(s) + 4 for s in lines) <= budget:
        return lines
    groups: dict[tuple[str, str], list[str]] = {}
    others: list[str] = []
    for line in lines:
        m = _TEST_ID.match(line)
        if not m:
            others.append(line)
            continue
        name = _GO_TIME.sub("", m.group(2))
        where, sep, test = name.partition("::")
        key = (m.group(1), where + sep if sep else "")
        groups.setdefault(key, []).append(test if sep else name)
    named = [f"{kind} {where}{', '.join(tests)}" if where else f"{kind} {', '.join(tests)}"
             for (kind, where), tests in groups.items()]
    out = [cut(s, max(200, budget - 200)) for s in named]
    room = budget - sum(len(s) + 4 for s in out)
    for line in others + [s for s in lines if _TEST_ID.match(s)]:
        if len(line) + 4 <= room:
            out.append(line)
            room -= len(line) + 4
    return out


def _clip(text: str | None, limit: int, head: int = 0) -> str | None:
    """At most ``limit`` characters: the first ``head`` and the rest from the end, which is where
    runners and makers put their summaries."""
    if text is None or len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    marker = f"\n... ({len(text) - limit} characters cut) ...\n"
    keep = max(0, limit - len(marker))
    first = min(head, keep)
    return text[:first] + marker + text[len(text) - (keep - first):]


# ---- the verdict ----------------------------------------------------------------------------


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


def _verdict(doc: dict[str, Any]) -> Verdict:
    problems = schema.errors(doc, "verdict")
    if problems:
        raise BadAnswer("it does not match the verdict schema: " + "; ".join(problems[:5]))
    try:
        return Verdict.model_validate(doc)
    except ValidationError as exc:
        raise BadAnswer(f"it is not a valid verdict: {exc.errors()[0]['msg']}") from None


def parse_verdict(text: str) -> Verdict:
    """A verdict from a model's text answer: one JSON object, fenced or bare, that matches the schema."""
    return _verdict(_json_object(text))


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
            return _verdict(doc)
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
        err = exc.errors()[0]
        raise BadAnswer(f"{'.'.join(map(str, err['loc'])) or 'the object'}: {err['msg']}") from None
    raise BadAnswer('expected {"converged": ...} (verdict.schema.json), {"ok": bool, "reason": str} '
                    'or {"decision": "done"|"continue"|"replan", "reason": str}')


# ---- the prompt -----------------------------------------------------------------------------


def _schema_text() -> str:
    """The verdict schema without "$schema" and "$id": they mean nothing to a model, and Claude
    Code's validator refuses a schema that names draft 2020-12's meta-schema."""
    doc = {k: v for k, v in schema.load("verdict").items() if k not in ("$schema", "$id")}
    return json.dumps(doc, separators=(",", ":"))


def system_prompt(tools: str) -> str:
    """The oracle's instructions: static, so the API can cache them."""
    return f"""You are the oracle of goal-convergence: an independent judge with read-only tools. A coding \
agent, the maker, works toward an objective in this project and has just tried to stop. You did not \
write its code and you do not take its summary on trust: you check.

The input, as JSON: the objective; each stopping condition (its command, whether it passed, exit code, \
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
- Judge the objective, not only the checks: when the checks pass but the objective is not met, the \
goal has not converged.
- nextHint: one concrete next step for the maker: the file, the function, the failing test, and what \
to change. Leave it empty only when the goal has converged.
- unfixable: only when the goal cannot be reached in this project by changing its code (it needs a \
credential, a service, or a decision only the user can make), with the evidence; otherwise leave it out.
- confidence: how sure you are, from 0 to 1.
- {tools} Use at most {MAX_TOOL_ROUNDS} rounds of tools, and only what you need.

Answer with one JSON object that matches this JSON Schema, and nothing else:
{_schema_text()}"""


_API_TOOLS = ("Tools: read_file, list_files, grep and git are read-only and confined to the project root; "
              "rerun_condition runs one of the goal's own conditions again (by index).")
_CLI_TOOLS = "Tools: Read, Grep and Glob, inside the project folder only."


def user_message(oracle_input: OracleInput) -> str:
    return f"Judge this iteration.\n\n```json\n{oracle_input.to_json()}\n```"


def _repair_message(problem: BadAnswer) -> str:
    return (f"Your answer is not a valid verdict: {problem}. Answer again with only the JSON object, "
            "matching the schema, and no other text.")


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


def _upper_bound(price: pricing.Price, base_tokens: int) -> float:
    """The most one judge call can cost: every tool round used, each round's results and output fed
    back as input, every call answering ``MAX_OUTPUT_TOKENS``, a repair round, and no cache hit."""
    calls = MAX_TOOL_ROUNDS + 2
    grow = ROUND_RESULT_CHARS // 4 + MAX_OUTPUT_TOKENS
    if price.long_context and base_tokens + (calls - 1) * grow > (price.long_context_above or 0):
        price = price.long_context
    tokens_in = calls * base_tokens + grow * calls * (calls - 1) // 2
    per_in = max(price.input, price.cache_write_5m, price.cache_write_1h)
    return (tokens_in * per_in + calls * MAX_OUTPUT_TOKENS * price.output) / 1e6


# ---- providers ------------------------------------------------------------------------------


class Oracle(Protocol):
    name: str

    def judge(self, oracle_input: OracleInput) -> Judgement: ...

    def estimate_cost(self, oracle_input: OracleInput) -> float: ...


def _setting(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
        if value < 0:
            raise ValueError
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a number of {'seconds' if 'TIMEOUT' in name else 'retries'}; "
                           f"unset it or give e.g. {default:g}") from None
    return value


def oracle_timeout() -> float:
    """Seconds one API call may take (GOAL_CONVERGENCE_ORACLE_TIMEOUT)."""
    return _setting("GOAL_CONVERGENCE_ORACLE_TIMEOUT", DEFAULT_TIMEOUT)


def oracle_retries() -> int:
    """Retries of a call that failed with 429, 5xx, 529 or a timeout (GOAL_CONVERGENCE_ORACLE_RETRIES)."""
    return int(_setting("GOAL_CONVERGENCE_ORACLE_RETRIES", DEFAULT_RETRIES))


class AnthropicOracle:
    """The Messages API, with read-only tools. The SDK reads ANTHROPIC_API_KEY (or
    ANTHROPIC_AUTH_TOKEN) and ANTHROPIC_BASE_URL, and retries with backoff itself."""

    name = "anthropic"

    def __init__(self, model: str, root: Path, rerun: Callable[[int], ConditionEvidence] | None = None, *,
                 timeout: float | None = None, max_retries: int | None = None) -> None:
        self.model = model
        self.price = pricing.price_for(model)  # an unknown price fails now, not after a paid call
        self.toolbox = Toolbox(root, rerun)
        self.timeout = oracle_timeout() if timeout is None else timeout
        self.max_retries = oracle_retries() if max_retries is None else max_retries
        # Sampling parameters are never sent: Haiku 5.5 rejects temperature, top_p and top_k.
        self.system = [{"type": "text", "text": system_prompt(_API_TOOLS), "cache_control": {"type": "ephemeral"}}]

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        base = (_tokens(self.system[0]["text"]) + _tokens(json.dumps(self.toolbox.definitions))
                + _tokens(user_message(oracle_input)))
        return _upper_bound(self.price, base)

    def judge(self, oracle_input: OracleInput) -> Judgement:
        import anthropic

        client = anthropic.Anthropic(timeout=self.timeout, max_retries=self.max_retries)
        messages: list[dict[str, Any]] = [{"role": "user", "content": user_message(oracle_input)}]
        spent, rounds, notes = Cost(), 0, []
        repaired = False
        while True:
            extra: dict[str, Any] = {"tool_choice": {"type": "none"}} if rounds >= MAX_TOOL_ROUNDS else {}
            try:
                reply = client.messages.create(model=self.model, max_tokens=MAX_OUTPUT_TOKENS, system=self.system,
                                               tools=self.toolbox.definitions, messages=messages, **extra)
            except anthropic.APIError as exc:
                raise JudgeError(self._failure(exc), spent) from None
            usage = reply.usage.model_dump()
            spent = spent + Cost(dollars=pricing.usage_cost(self.model, usage), tokens=pricing.usage_tokens(usage))
            content = [b.model_dump(mode="json", exclude_none=True) for b in reply.content]
            # The API refuses an empty assistant turn in the history, and a repair round needs one.
            messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no answer)"}]})
            calls = [b for b in reply.content if b.type == "tool_use"]
            if calls:
                if rounds >= MAX_TOOL_ROUNDS:
                    raise JudgeError(f"the oracle still asked for tools after its {MAX_TOOL_ROUNDS} rounds; "
                                     "it gave no verdict", spent)
                rounds += 1
                messages.append({"role": "user", "content": self._run_tools(calls, last=rounds == MAX_TOOL_ROUNDS)})
                continue
            if reply.stop_reason == "refusal":
                raise JudgeError("the oracle model refused to judge this iteration; look at the objective and "
                                 "the evidence, or choose another --oracle-model", spent)
            try:
                verdict = parse_verdict("".join(b.text for b in reply.content if b.type == "text"))
            except BadAnswer as exc:
                if repaired:
                    raise JudgeError(f"the oracle's answer was not a valid verdict, twice: {exc}", spent) from None
                repaired = True
                notes.append(f"the first answer was not a valid verdict ({cut(str(exc), 200)}); asked again")
                messages.append({"role": "user", "content": _repair_message(exc)})
                continue
            if rounds:
                notes.append(f"{rounds} tool round(s)")
            return Judgement(verdict=verdict, cost=spent, model=self.model, notes=notes)

    def _run_tools(self, calls: list[Any], last: bool) -> list[dict[str, Any]]:
        left = ROUND_RESULT_CHARS
        results: list[dict[str, Any]] = []
        for call in calls:
            if left < 200:
                text, error = "skipped: this round's tool output budget is spent; ask again in the next round", True
            else:
                text, error = self.toolbox.run(call.name, call.input, limit=min(MAX_RESULT_CHARS, left))
                left -= len(text)
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": text,
                            **({"is_error": True} if error else {})})
        if last:
            results.append({"type": "text", "text": "That was your last tool round: answer now with the verdict."})
        return results

    def _failure(self, exc: Exception) -> str:
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return (f"the oracle API did not answer within {self.timeout:g} s ({self.max_retries} retries); "
                    "raise GOAL_CONVERGENCE_ORACLE_TIMEOUT or try again later")
        if isinstance(exc, anthropic.AuthenticationError):
            return "the oracle API refused the credentials (401): check ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            retried = status in (408, 409, 429) or status >= 500
            body = exc.body if isinstance(exc.body, dict) else {}
            error = body.get("error") if isinstance(body.get("error"), dict) else {}
            detail = f"{error.get('type', 'error')}: {error['message']}" if error.get("message") else exc.message
            return (f"the oracle API answered {status}{f' after {self.max_retries} retries' if retried else ''} "
                    f"({cut(detail, 300)}); "
                    + ("try again later, or raise GOAL_CONVERGENCE_ORACLE_RETRIES" if retried else
                       f"check --oracle-model ({self.model}) and the API settings"))
        return f"could not reach the oracle API ({exc}); check the network and ANTHROPIC_BASE_URL"


class ClaudeCliOracle:
    """The user's own Claude Code, through its login: ``claude -p`` in safe, restricted mode with
    only Read, Grep and Glob, the verdict schema as structured output, and its own cost figure."""

    name = "claude-cli"

    def __init__(self, model: str, root: Path, claude: str, *, timeout: float | None = None,
                 max_retries: int | None = None) -> None:
        self.model = model
        self.price = pricing.price_for(model)
        self.root = Path(root)
        self.claude = claude
        self.timeout = oracle_timeout() if timeout is None else timeout
        self.max_retries = oracle_retries() if max_retries is None else max_retries
        self.system = system_prompt(_CLI_TOOLS)

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        base = CLAUDE_CODE_OVERHEAD_TOKENS + _tokens(self.system) + _tokens(user_message(oracle_input))
        return _upper_bound(self.price, base)

    def command(self, oracle_input: OracleInput) -> list[str]:
        return [self.claude, "-p", "--safe-mode", "--restricted", "--model", self.model,
                "--tools", "Read,Grep,Glob", "--json-schema", _schema_text(), "--output-format", "json",
                "--no-session-persistence", "--system-prompt", self.system,
                "--max-turns", str(MAX_TOOL_ROUNDS + 2),
                "--max-budget-usd", f"{self.estimate_cost(oracle_input):.4f}"]

    def judge(self, oracle_input: OracleInput) -> Judgement:
        # Inside a Claude Code session these would tie the nested run to the outer session.
        env = claude_code.detached_env()
        env.update(API_TIMEOUT_MS=str(int(self.timeout * 1000)), CLAUDE_CODE_MAX_RETRIES=str(self.max_retries))
        wall = self.timeout * (MAX_TOOL_ROUNDS + 2)
        try:
            done = subprocess.run(self.command(oracle_input), input=user_message(oracle_input), cwd=self.root,
                                  env=env, capture_output=True, text=True, timeout=wall)
        except subprocess.TimeoutExpired:
            raise JudgeError(f"claude -p gave no verdict within {wall:g} s; raise GOAL_CONVERGENCE_ORACLE_TIMEOUT "
                             "or try again later") from None
        except OSError as exc:
            raise JudgeError(f"could not run {self.claude} ({exc}); check the Claude Code install") from None
        try:
            result = claude_code.PrintResult.model_validate_json(done.stdout.strip() or "{}")
        except ValidationError:
            raise JudgeError(f"claude -p exited {done.returncode} without a result: "
                             f"{cut((done.stderr or done.stdout).strip(), 500) or 'no output'}; "
                             "run `claude -p hi` to check the login") from None
        spent = Cost(dollars=result.total_cost_usd,
                     tokens=result.tokens)
        if result.is_error or result.subtype != "success":
            detail = "; ".join(map(str, result.errors)) or result.result or "no detail"
            how = "an error" if result.subtype == "success" else result.subtype
            raise JudgeError(f"claude -p ended with {how}: {cut(detail, 500)}", spent)
        try:
            if isinstance(result.structured_output, dict):
                verdict = _verdict(result.structured_output)
            else:  # the model wrote its verdict as text instead of calling StructuredOutput
                verdict = parse_verdict(result.result or "")
        except BadAnswer as exc:
            raise JudgeError(f"claude -p gave no valid verdict (structured output): {exc}", spent) from None
        return Judgement(verdict=verdict, cost=spent, model=self.model,
                         notes=[f"claude -p, {result.num_turns} turn(s)"])


class CommandOracle:
    """A program of the user's: the input as JSON on stdin, a verdict on stdout, run in the project
    root. Its own spending is unknown to us and not counted."""

    name = "command"

    def __init__(self, command: str, root: Path, *, timeout: float | None = None) -> None:
        self.command = command
        self.root = Path(root)
        self.timeout = (oracle_timeout() if timeout is None else timeout) * (MAX_TOOL_ROUNDS + 2)

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return 0.0

    def judge(self, oracle_input: OracleInput) -> Judgement:
        try:
            done = subprocess.run(self.command, shell=True, input=oracle_input.to_json(), cwd=self.root,
                                  capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise JudgeError(f"the oracle command gave no verdict within {self.timeout:g} s: {self.command}") from None
        if done.returncode != 0:
            stderr = cut(done.stderr.strip(), 500) or "no stderr"
            raise JudgeError(f"the oracle command exited {done.returncode}: {stderr}; it must print a verdict "
                             f"and exit 0 ({self.command})")
        try:
            verdict = parse_foreign_verdict(done.stdout)
        except BadAnswer as exc:
            raise JudgeError(f"the oracle command's output is not a verdict: {exc} ({self.command})") from None
        return Judgement(verdict=verdict, model=f"command: {cut(self.command, 100)}",
                         notes=["the command oracle's own cost is not counted"])


class ConditionsOracle:
    """No model: the conditions decide, and ``expect`` (a regex the maker's last message must match)
    can only add a requirement. Chosen explicitly, never as a silent fallback."""

    name = "conditions"

    def __init__(self, expect: str | None = None) -> None:
        try:
            self.expect = re.compile(expect, re.MULTILINE) if expect else None
        except re.error as exc:
            raise InvalidInput(f"--expect {expect!r} is not a valid regular expression ({exc})") from None

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return 0.0

    def judge(self, oracle_input: OracleInput) -> Judgement:
        failing = [c for c in oracle_input.conditions if not c.passed]
        reasons = [f"[{c.index}] {c.type} `{c.command}` failed ({_how(c)})" for c in failing]
        hint = _hint(failing)
        claimed = self.expect is None or bool(self.expect.search(oracle_input.maker_summary or ""))
        if not claimed:
            assert self.expect is not None
            reasons.append(f"the maker's last message does not match --expect {self.expect.pattern!r}")
            hint = hint or ("When the work is done, say so in your last message in words that match "
                            f"{self.expect.pattern!r}.")
        if not reasons:
            reasons.append("every stopping condition passed" + (" and the maker's message matches --expect"
                                                                 if self.expect else ""))
        verdict = Verdict(converged=not failing and claimed,
                          condition_results=[ConditionResult(type=c.type, passed=c.passed,
                                                             output=c.failures[0] if c.failures else "")
                                             for c in oracle_input.conditions],
                          reasons=reasons, next_hint=hint, confidence=1.0)
        return Judgement(verdict=verdict, model="conditions",
                         notes=["no independent judge: the verdict is the conditions alone"])


def _how(c: ConditionInput) -> str:
    if c.error:
        return cut(c.error, 200)
    if c.timed_out:
        return "timed out"
    if c.coverage is not None and c.threshold is not None and c.coverage < c.threshold:
        return f"coverage {c.coverage:g}% is below {c.threshold:g}%"
    return f"exit {c.exit_code}"


def _hint(failing: list[ConditionInput]) -> str:
    if not failing:
        return ""
    parts = [f"[{c.index}] `{c.command}`: " + ("; ".join(c.failures[:5]) or _how(c)) for c in failing]
    return cut("Make the failing checks pass. " + " | ".join(parts), 1_500)


# ---- choosing one ---------------------------------------------------------------------------


SET_UP = ("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) for the anthropic oracle, or install Claude Code and "
          "log in (`npm install -g @anthropic-ai/claude-code`, then `claude`) for the claude-cli oracle; or choose "
          "`--oracle command --oracle-cmd CMD`, or `--oracle conditions` to judge by the conditions alone")


def get_oracle(config: OracleConfig, goal: Goal, *,
               rerun: Callable[[int], ConditionEvidence] | None = None) -> Oracle:
    """The judge ``config`` asks for. ``auto`` is anthropic when an API key is set, else claude-cli
    when Claude Code is installed. Raises OracleUnavailable (and PriceUnknown for a model with no price)."""
    root = Path(goal.project_root)
    has_key = bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))
    provider = config.provider
    if provider == "auto":
        provider = "anthropic" if has_key else "claude-cli" if claude_code.binary() else ""
        if not provider:
            raise OracleUnavailable(f"no oracle can run here: {SET_UP}")
    if provider == "anthropic":
        if not has_key:
            raise OracleUnavailable(f"the anthropic oracle needs an API key: {SET_UP}")
        return AnthropicOracle(config.model, root, rerun)
    if provider == "claude-cli":
        claude = claude_code.binary()
        if not claude:
            raise OracleUnavailable(f"the claude-cli oracle needs Claude Code on PATH (or CLAUDE_BIN): {SET_UP}")
        return ClaudeCliOracle(config.model, root, claude)
    if provider == "command":
        if not config.command:
            raise OracleUnavailable("the command oracle needs a program: pass --oracle-cmd CMD")
        return CommandOracle(config.command, root)
    return ConditionsOracle(config.expect)
