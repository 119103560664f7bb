"""The ``anthropic`` judge: the Messages API, with read-only tools confined to the project root.

The SDK is imported only inside the calls that use it: the hooks import this package on every stop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, NonNegativeInt, Tag, ValidationError

from ..models import ConditionEvidence, Cost
from ..storage import cost as pricing
from ..storage.config import env_settings
from ..system import deadline
from ..system.text import cut
from .input import OracleInput
from .prompt import (MAX_OUTPUT_TOKENS, MAX_TOOL_ROUNDS, ROUND_RESULT_CHARS, call_estimate, repair_message,
                     system_prompt, token_estimate, user_message)
from .tools import MAX_RESULT_CHARS, Toolbox
from .verdict import BadAnswer, JudgeError, Judgement, parse_verdict

# A reply larger than this is no verdict worth reading: a broken proxy or a hostile server.
MAX_REPLY_BYTES = 1 << 20
_TOOLS = ("Tools: read_file, list_files, grep and git are read-only and confined to the project root; "
          "rerun_condition runs one of the goal's own conditions again (by index).")


class _Block(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


class _Text(_Block):
    type: Literal["text"]
    text: str


class _ToolUse(_Block):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class _Usage(BaseModel):
    model_config = ConfigDict(extra="allow")
    input_tokens: NonNegativeInt
    output_tokens: NonNegativeInt


def _kind(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else getattr(block, "type", None)
    return kind if kind in ("text", "tool_use") else "other"


class _Reply(BaseModel):
    """A 200 reply as it must be to be judged: what the SDK does not check (it builds its objects unchecked)."""

    model_config = ConfigDict(extra="allow")
    content: list[Annotated[Annotated[_Text, Tag("text")] | Annotated[_ToolUse, Tag("tool_use")]
                            | Annotated[_Block, Tag("other")], Discriminator(_kind)]]
    stop_reason: str | None = None


class _TooLarge(Exception):
    pass


class _Broken(Exception):
    """The connection failed while the reply's body was read (the SDK maps only what it reads itself)."""


class AnthropicOracle:
    """The Messages API, with read-only tools. The SDK reads ANTHROPIC_API_KEY (or
    ANTHROPIC_AUTH_TOKEN) and ANTHROPIC_BASE_URL, and retries with backoff itself.

    Each call has a deadline for the whole of it (connect, headers, body and the SDK's retries):
    the oracle timeout, or less when the process's budget (the Stop hook's) has less left
    (deadline.py). Redirects are not followed: the judge is the server configured, not one it
    points to, and the body is read up to ``MAX_REPLY_BYTES``."""

    name = "anthropic"

    def __init__(self, model: str, root: Path, rerun: Callable[[int], ConditionEvidence] | None = None, *,
                 timeout: float | None = None, max_retries: int | None = None, may_read: Sequence[str] = ()) -> None:
        self.model = model
        self.price = pricing.price_for(model)  # an unknown price fails now, not after a paid call
        self.toolbox = Toolbox(root, rerun, may_read)
        self.timeout = env_settings().oracle_timeout if timeout is None else timeout
        self.max_retries = env_settings().oracle_retries if max_retries is None else max_retries
        # Sampling parameters are never sent: Haiku 5.5 rejects temperature, top_p and top_k.
        self.system = [{"type": "text", "text": system_prompt(_TOOLS), "cache_control": {"type": "ephemeral"}}]

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        base = (token_estimate(self.system[0]["text"]) + token_estimate(json.dumps(self.toolbox.definitions))
                + token_estimate(user_message(oracle_input)))
        return call_estimate(self.price, base)

    def judge(self, oracle_input: OracleInput) -> Judgement:
        import anthropic

        client = anthropic.Anthropic(timeout=self.timeout, max_retries=self.max_retries,
                                     http_client=anthropic.DefaultHttpxClient(follow_redirects=False))
        messages: list[dict[str, Any]] = [{"role": "user", "content": user_message(oracle_input)}]
        spent, rounds, notes = Cost(), 0, []
        repaired = False
        while True:
            extra: dict[str, Any] = {"tool_choice": {"type": "none"}} if rounds >= MAX_TOOL_ROUNDS else {}
            limit = deadline.Deadline(deadline.bounded(self.timeout) or 0.0)
            try:
                body = deadline.within(limit, lambda: self._call(client, limit, messages, extra), cut=client.close)
            except (anthropic.APIError, deadline.Late) as exc:
                raise JudgeError(self._failure(exc, limit), spent) from None
            except _Broken as exc:
                raise JudgeError(f"the connection to the oracle API broke while its reply was read "
                                 f"({cut(str(exc), 200)}); try again later, or check the network and ANTHROPIC_BASE_URL", spent) from None
            except _TooLarge:
                raise JudgeError(f"the oracle API's reply was over {MAX_REPLY_BYTES >> 20} MB, which no verdict "
                                 "needs; check ANTHROPIC_BASE_URL (a proxy in the way?)",
                                 spent + self._read(b"", messages)[1]) from None
            reply, call_cost = self._read(body, messages)
            spent = spent + call_cost
            if reply is None:
                raise JudgeError("the oracle API answered 200 with a reply that is not a well-formed message "
                                 f"({cut(body.decode('utf-8', 'replace'), 120) or 'an empty body'}); try again "
                                 "later, or check ANTHROPIC_BASE_URL (a proxy in the way?)", spent)
            content = [b.model_dump(mode="json", exclude_none=True) for b in reply.content]
            # The API refuses an empty assistant turn in the history, and a repair round needs one.
            messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no answer)"}]})
            calls = [b for b in reply.content if isinstance(b, _ToolUse)]
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
                verdict = parse_verdict("".join(b.text for b in reply.content if isinstance(b, _Text)), notes)
            except BadAnswer as exc:
                if repaired:
                    raise JudgeError(f"the oracle's answer was not a valid verdict, twice: {exc}", spent) from None
                repaired = True
                notes.append(f"the first answer was not a valid verdict ({cut(str(exc), 200)}); asked again")
                messages.append({"role": "user", "content": repair_message(exc)})
                continue
            if rounds:
                notes.append(f"{rounds} tool round(s)")
            return Judgement(verdict=verdict, cost=spent, model=self.model, notes=notes)

    def _call(self, client: Any, limit: deadline.Deadline, messages: list[dict[str, Any]],
              extra: dict[str, Any]) -> bytes:
        """One Messages call's body, read as it comes: it stops once ``limit`` has passed or the body
        is over ``MAX_REPLY_BYTES``. Runs in ``deadline.within``'s thread."""
        with client.messages.with_streaming_response.create(
                model=self.model, max_tokens=MAX_OUTPUT_TOKENS, system=self.system, tools=self.toolbox.definitions,
                messages=messages, timeout=max(limit.left(), 0.001), **extra) as raw:
            body = bytearray()
            try:
                for chunk in raw.iter_bytes():
                    if limit.passed:
                        raise deadline.Late("gave up")
                    body += chunk
                    if len(body) > MAX_REPLY_BYTES:
                        raise _TooLarge
            except (deadline.Late, _TooLarge):
                raise
            except Exception as exc:  # noqa: BLE001 - the HTTP client's own error, whichever client the SDK uses
                raise _Broken(str(exc)) from None
            return bytes(body)

    def _read(self, body: bytes, messages: list[dict[str, Any]]) -> tuple[_Reply | None, Cost]:
        """The reply (None when it is not a well-formed message) and what the call cost: its usage,
        or when that is missing or garbled, the most the call could have cost (money is never zero)."""
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        usage = doc.get("usage") if isinstance(doc, dict) else None
        try:
            counted, well_formed = _Usage.model_validate(usage).model_dump(), True
        except ValidationError:
            sent = json.dumps([self.system, self.toolbox.definitions, messages])
            counted = {"input_tokens": token_estimate(sent), "output_tokens": MAX_OUTPUT_TOKENS}
            well_formed = False  # a reply whose usage is garbled is not a message to trust either
        cost = Cost(dollars=pricing.usage_cost(self.model, counted), tokens=pricing.usage_tokens(counted))
        try:
            return (_Reply.model_validate(doc) if well_formed else None), cost
        except ValidationError:
            return None, cost

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

    def _failure(self, exc: Exception, limit: deadline.Deadline) -> str:
        import anthropic

        if isinstance(exc, (anthropic.APITimeoutError, deadline.Late)):
            if limit.seconds < self.timeout:
                return (f"the oracle API did not answer within the {limit.seconds:g} s left of this hook's budget; "
                        "the next stop tries again (GOAL_CONVERGENCE_STOP_BUDGET sets the budget)")
            return (f"the oracle API did not answer within {self.timeout:g} s (the whole call, its "
                    f"{self.max_retries} retries included); raise GOAL_CONVERGENCE_ORACLE_TIMEOUT or try again later")
        if isinstance(exc, anthropic.AuthenticationError):
            return "the oracle API refused the credentials (401): check ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"
        if isinstance(exc, anthropic.APIStatusError) and 300 <= exc.status_code < 400:
            where = exc.response.headers.get("location") or "elsewhere"
            return (f"the oracle API answered {exc.status_code}, a redirect to {cut(where, 200)}, which is not "
                    "followed (the judge is the server configured, no other); set ANTHROPIC_BASE_URL to the API's "
                    "own address")
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
