"""The ``gemini-cli`` judge: Gemini CLI (``gemini -p``) in its read-only mode, for a judge from another vendor.

Gemini CLI's ``--approval-mode plan`` is read-only: its tools read and search the project, and nothing that
writes or runs is allowed. The oracle's instructions replace Gemini CLI's own (``GEMINI_SYSTEM_MD`` names a file
holding them), the iteration's input comes on stdin, and the verdict is the JSON object of the answer. What
the call spent is priced from the tokens Gemini CLI reports (``stats``), as for the gemini maker.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from ..models import Cost
from ..models.gemini_result import GeminiResult
from ..storage import cost as pricing
from ..storage.config import env_settings
from ..system import geminimode, process
from ..system.text import cut
from .input import OracleInput
from .prompt import MAX_TOOL_ROUNDS, call_estimate, system_prompt, token_estimate, user_message
from .verdict import BadAnswer, JudgeError, Judgement, parse_verdict

_TOOLS = "Tools: Gemini CLI's read-only tools (read, search, list), inside the project folder only."
ASK = "Judge the iteration given above, and answer with the verdict's JSON object only."


class GeminiCliOracle:
    name = "gemini-cli"

    def __init__(self, model: str, root: Path, gemini: str, *, timeout: float | None = None) -> None:
        self.model = model
        self.price = pricing.price_for(model)
        self.root = Path(root)
        self.gemini = gemini
        self.timeout = env_settings().oracle_timeout if timeout is None else timeout
        self.system = system_prompt(_TOOLS)

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return call_estimate(self.price, token_estimate(self.system) + token_estimate(user_message(oracle_input)))

    def command(self) -> list[str]:
        return [self.gemini, "-p", ASK, "--approval-mode", "plan", "--output-format", "json", "--model", self.model]

    def judge(self, oracle_input: OracleInput) -> Judgement:
        wall = self.timeout * (MAX_TOOL_ROUNDS + 2)
        with tempfile.TemporaryDirectory(prefix="goal-oracle-") as folder:
            instructions = Path(folder) / "system.md"
            instructions.write_text(self.system, encoding="utf-8")
            env = {**os.environ, **geminimode.ENV, "GEMINI_SYSTEM_MD": str(instructions)}
            try:
                done = process.run_read(self.command(), self.root, input=user_message(oracle_input).encode(),
                                        env=env, timeout=wall)
            except OSError as exc:
                raise JudgeError(f"could not run {self.gemini} ({exc}); check the Gemini CLI install") from None
        if done.exit.timed_out:
            raise JudgeError(f"gemini -p gave no verdict within {wall:g} s; raise GOAL_CONVERGENCE_ORACLE_TIMEOUT "
                             "or try again later")
        try:
            result = GeminiResult.from_output(done.stdout.encode(), done.stderr)
        except ValidationError:
            result = GeminiResult()
        dollars, tokens, unpriced = pricing.priced({m: [pricing.gemini_counts(*c)] for m, c in result.calls.items()})
        spent = Cost(dollars=dollars + sum(unpriced.values()) * max(self.price.input, self.price.output) / 1e6,
                     tokens=tokens)  # a side model with no price: at the judge's own dearer price, never $0
        if result.error is not None or result.response is None:
            detail = result.error or cut((done.stderr or done.stdout).strip(), 500) or "no output"
            raise JudgeError(f"gemini -p exited {done.exit.code} without a verdict: {detail}; run "
                             "`gemini -p hi` to check the login", spent)
        notes = [f"gemini -p ({self.model}), read-only (approval mode plan)"]
        try:
            verdict = parse_verdict(result.response, notes)
        except BadAnswer as exc:
            raise JudgeError(f"gemini -p gave no valid verdict: {exc}", spent) from None
        return Judgement(verdict=verdict, cost=spent, model=self.model, notes=notes)
