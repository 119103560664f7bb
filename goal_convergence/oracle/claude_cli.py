"""The ``claude-cli`` judge: the user's own Claude Code (``claude -p``), for a login without an API key."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..models import Cost, Verdict
from ..models.print_result import PrintResult
from ..storage.config import env_settings
from ..system import deadline, printmode
from ..system.text import cut
from .cli_judge import CliJudge
from .input import OracleInput
from .prompt import MAX_TOOL_ROUNDS, cost_upper_bound, schema_text, user_message
from .tools import SECRET_GLOBS
from .verdict import JudgeError, Judgement, check_verdict, parse_verdict

# Claude Code's own system prompt remnant and its Read/Grep/Glob/StructuredOutput tool definitions.
CLAUDE_CODE_OVERHEAD_TOKENS = 4_000
# Claude Code's Read rules cover Grep and Glob too: what our own tools refuse as secrets, it refuses.
_SECRETS_DENIED = ",".join(f"Read(**/{name})" for name in (*SECRET_GLOBS, ".git/**"))


class ClaudeCliOracle(CliJudge):
    """The user's own Claude Code, through its login: ``claude -p`` in safe, restricted mode with
    only Read, Grep and Glob, the verdict schema as structured output, and its own cost figure."""

    name, label, product = "claude-cli", "claude -p", "Claude Code"
    tools = "Tools: Read, Grep and Glob, inside the project folder only."
    overhead_tokens = CLAUDE_CODE_OVERHEAD_TOKENS

    def __init__(self, model: str, root: Path, claude: str, *, timeout: float | None = None,
                 max_retries: int | None = None) -> None:
        super().__init__(model, root, claude, timeout=timeout)
        self.max_retries = env_settings().oracle_retries if max_retries is None else max_retries

    def command(self, oracle_input: OracleInput) -> list[str]:
        return [self.binary, "-p", "--safe-mode", "--restricted", "--model", self.model,
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
        wall = deadline.bounded(self.wall()) or 0.0  # a stop's budget may leave less
        done = self.run(self.command(oracle_input), user_message(oracle_input), wall, env)
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

        def verdict(notes: list[str]) -> Verdict:
            if isinstance(result.structured_output, dict):
                return check_verdict(result.structured_output, notes)
            return parse_verdict(result.result or "", notes)  # written as text instead of with StructuredOutput

        return self.judgement(verdict, [f"claude -p, {result.num_turns} turn(s)"], spent, " (structured output)")
