"""The ``claude-cli`` judge: the user's own Claude Code (``claude -p``), for a login without an API key."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..models import Cost
from ..models.print_result import PrintResult
from ..storage import cost as pricing
from ..storage.config import env_settings
from ..system import deadline, printmode, process
from ..system.text import cut
from .input import OracleInput
from .prompt import (MAX_TOOL_ROUNDS, call_estimate, cost_upper_bound, schema_text, system_prompt, token_estimate,
                     user_message)
from .tools import SECRET_GLOBS
from .verdict import BadAnswer, JudgeError, Judgement, check_verdict, parse_verdict

# Claude Code's own system prompt remnant and its Read/Grep/Glob/StructuredOutput tool definitions.
CLAUDE_CODE_OVERHEAD_TOKENS = 4_000
_TOOLS = "Tools: Read, Grep and Glob, inside the project folder only."
# Claude Code's Read rules cover Grep and Glob too: what our own tools refuse as secrets, it refuses.
_SECRETS_DENIED = ",".join(f"Read(**/{name})" for name in (*SECRET_GLOBS, ".git/**"))


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
        self.timeout = env_settings().oracle_timeout if timeout is None else timeout
        self.max_retries = env_settings().oracle_retries if max_retries is None else max_retries
        self.system = system_prompt(_TOOLS)

    def _input_tokens(self, oracle_input: OracleInput) -> int:
        return CLAUDE_CODE_OVERHEAD_TOKENS + token_estimate(self.system) + token_estimate(user_message(oracle_input))

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return call_estimate(self.price, self._input_tokens(oracle_input))

    def command(self, oracle_input: OracleInput) -> list[str]:
        return [self.claude, "-p", "--safe-mode", "--restricted", "--model", self.model,
                "--tools", "Read,Grep,Glob", "--disallowedTools", _SECRETS_DENIED,
                "--json-schema", schema_text(any_tasks=True), "--output-format", "json",
                "--no-session-persistence", "--system-prompt", self.system,
                "--max-turns", str(MAX_TOOL_ROUNDS + 2),
                # The cap is the worst case, every round used: a call that needs its tools may finish.
                "--max-budget-usd", f"{cost_upper_bound(self.price, self._input_tokens(oracle_input)):.4f}"]

    def judge(self, oracle_input: OracleInput) -> Judgement:
        # Inside a Claude Code session these would tie the nested run to the outer session.
        env = printmode.detached_env()
        env.update(API_TIMEOUT_MS=str(int(self.timeout * 1000)), CLAUDE_CODE_MAX_RETRIES=str(self.max_retries))
        wall = deadline.bounded(self.timeout * (MAX_TOOL_ROUNDS + 2)) or 0.0  # a stop's budget may leave less
        try:
            done = process.run_read(self.command(oracle_input), self.root, input=user_message(oracle_input).encode(),
                                    env=env, timeout=wall)
        except OSError as exc:
            raise JudgeError(f"could not run {self.claude} ({exc}); check the Claude Code install") from None
        if done.exit.timed_out:  # its process group is gone with it, tools and all
            raise JudgeError(f"claude -p gave no verdict within {wall:g} s; raise GOAL_CONVERGENCE_ORACLE_TIMEOUT "
                             "or try again later")
        try:
            result = PrintResult.model_validate_json(done.stdout.strip() or "{}")
        except ValidationError:
            raise JudgeError(f"claude -p exited {done.exit.code} without a result: "
                             f"{cut((done.stderr or done.stdout).strip(), 500) or 'no output'}; "
                             "run `claude -p hi` to check the login") from None
        spent = Cost(dollars=result.total_cost_usd,
                     tokens=result.tokens)
        if result.is_error or result.subtype != "success":
            detail = "; ".join(map(str, result.errors)) or result.result or "no detail"
            how = "an error" if result.subtype == "success" else result.subtype
            raise JudgeError(f"claude -p ended with {how}: {cut(detail, 500)}", spent)
        notes = [f"claude -p, {result.num_turns} turn(s)"]
        try:
            if isinstance(result.structured_output, dict):
                verdict = check_verdict(result.structured_output, notes)
            else:  # the model wrote its verdict as text instead of calling StructuredOutput
                verdict = parse_verdict(result.result or "", notes)
        except BadAnswer as exc:
            raise JudgeError(f"claude -p gave no valid verdict (structured output): {exc}", spent) from None
        return Judgement(verdict=verdict, cost=spent, model=self.model, notes=notes)
