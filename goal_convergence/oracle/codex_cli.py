"""The ``codex-cli`` judge: the user's own Codex CLI (``codex exec``) in its read-only sandbox, for a goal
judged by an OpenAI model. Like every judge with a model, its model must differ from the maker's."""

from __future__ import annotations

from pathlib import Path

from ..models import Cost, codex_exec
from ..storage import cost as pricing
from ..storage import rollout
from ..storage.config import env_settings
from ..system import process
from ..system.text import cut
from .input import OracleInput
from .prompt import MAX_TOOL_ROUNDS, call_estimate, system_prompt, token_estimate, user_message
from .verdict import BadAnswer, JudgeError, Judgement, parse_verdict

# Codex's own instructions and tool definitions, sent with every call (measured on 0.171.0: about 10k tokens).
CODEX_OVERHEAD_TOKENS = 11_000
_TOOLS = ("Tools: Codex's shell, in a read-only sandbox rooted at the project folder: read files and run "
          "read-only commands (cat, ls, grep); nothing you run can change a file. Answer with only the JSON object.")


class CodexCliOracle:
    """`codex exec --json` in the project with ``--sandbox read-only``, hooks off (a judge runs none of the
    plugin's hooks), nothing saved (``--ephemeral``); its verdict is its last message, its cost the turn's
    usage at the model's price."""

    name = "codex-cli"

    def __init__(self, model: str, root: Path, codex: str, *, timeout: float | None = None) -> None:
        self.model = model
        self.price = pricing.price_for(model)
        self.root = Path(root)
        self.codex = codex
        self.timeout = env_settings().oracle_timeout if timeout is None else timeout
        self.system = system_prompt(_TOOLS)

    def _input_tokens(self, oracle_input: OracleInput) -> int:
        return CODEX_OVERHEAD_TOKENS + token_estimate(self.system) + token_estimate(user_message(oracle_input))

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return call_estimate(self.price, self._input_tokens(oracle_input))

    def command(self) -> list[str]:
        return [self.codex, "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--ephemeral",
                "--disable", "hooks", "--model", self.model, "--cd", str(self.root), "-"]

    def judge(self, oracle_input: OracleInput) -> Judgement:
        wall = self.timeout * (MAX_TOOL_ROUNDS + 2)
        prompt = f"{self.system}\n\n{user_message(oracle_input)}"
        try:
            done = process.run_read(self.command(), self.root, input=prompt.encode(), timeout=wall)
        except OSError as exc:
            raise JudgeError(f"could not run {self.codex} ({exc}); check the Codex CLI install") from None
        if done.exit.timed_out:
            raise JudgeError(f"codex exec gave no verdict within {wall:g} s; raise GOAL_CONVERGENCE_ORACLE_TIMEOUT "
                             "or try again later")
        result = codex_exec.parse(done.stdout)
        counts = rollout.usage_counts(result.usage())
        spent = Cost(dollars=pricing.counts_cost(pricing.applies(self.price, counts), counts), tokens=sum(counts))
        if done.exit.code != 0 or result.error or not result.completed:
            detail = result.error or cut((done.stderr or done.stdout).strip(), 500) or "no output"
            raise JudgeError(f"codex exec exited {done.exit.code} without a verdict: {cut(detail, 500)}; "
                             "run `codex exec hi` to check its login", spent)
        notes = ["codex exec, read-only sandbox"]
        try:
            verdict = parse_verdict(result.message or "", notes)
        except BadAnswer as exc:
            raise JudgeError(f"codex exec gave no valid verdict: {exc}", spent) from None
        return Judgement(verdict=verdict, cost=spent, model=self.model, notes=notes)
