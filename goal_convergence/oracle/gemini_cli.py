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
from ..system import geminimode
from ..system.text import cut
from .cli_judge import CliJudge
from .input import OracleInput
from .prompt import user_message
from .verdict import JudgeError, Judgement, parse_verdict

ASK = "Judge the iteration given above, and answer with the verdict's JSON object only."


class GeminiCliOracle(CliJudge):
    name, label, product = "gemini-cli", "gemini -p", "Gemini CLI"
    tools = "Tools: Gemini CLI's read-only tools (read, search, list), inside the project folder only."

    def command(self) -> list[str]:
        return [self.binary, "-p", ASK, "--approval-mode", "plan", "--output-format", "json", "--model", self.model]

    def judge(self, oracle_input: OracleInput) -> Judgement:
        with tempfile.TemporaryDirectory(prefix="goal-oracle-") as folder:
            instructions = Path(folder) / "system.md"
            instructions.write_text(self.system, encoding="utf-8")
            env = {**os.environ, **geminimode.ENV, "GEMINI_SYSTEM_MD": str(instructions)}
            done = self.run(self.command(), user_message(oracle_input), self.wall(), env)
        try:
            result = GeminiResult.from_output(done.stdout.encode(), done.stderr)
        except ValidationError:
            result = GeminiResult()
        dollars, tokens, unpriced = pricing.priced({m: [pricing.gemini_counts(*c)] for m, c in result.calls.items()})
        spent = Cost(dollars=dollars + sum(unpriced.values()) * max(self.price.input, self.price.output) / 1e6,
                     tokens=tokens)  # a side model with no price: at the judge's own dearer price, never $0
        response = result.response
        if result.error is not None or response is None:
            detail = result.error or cut((done.stderr or done.stdout).strip(), 500) or "no output"
            raise JudgeError(f"gemini -p exited {done.exit.code} without a verdict: {detail}; run "
                             "`gemini -p hi` to check the login", spent)
        return self.judgement(lambda notes: parse_verdict(response, notes),
                              [f"gemini -p ({self.model}), read-only (approval mode plan)"], spent)
