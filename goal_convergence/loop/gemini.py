"""Gemini CLI as a headless maker: `gemini -p --output-format json`, the objective first, then `--resume` of the
same session with each hint, its edits approved (``auto_edit``, as the claude maker's ``acceptEdits``).

What a turn spent is read from the JSON Gemini CLI prints at the end (``stats.models``: each model's
tokens over the turn) and priced from the price table; a model with no price is charged in tokens and the
goal held to a token budget (engine.MakerReport.unpriced), never counted as $0 without a word.
"""

from __future__ import annotations

import os

from ..models import Cost, Goal
from ..models.gemini_result import GeminiResult
from ..storage import cost
from ..system import geminimode, process
from ..system.log import log_error
from .engine import MakerReport
from .makers import SUMMARY_CHARS, AgentMaker


class GeminiMaker(AgentMaker):
    name, label = "gemini", "gemini -p"
    install = f"Gemini CLI: install it (npm install -g @google/gemini-cli@{geminimode.PIN}) or set GEMINI_BIN"

    def binary(self) -> str | None:
        return geminimode.binary()

    def argv(self, binary: str, prompt: str, session: str | None, model: str | None, goal: Goal) -> list[str]:
        args = [binary, "-p", prompt, "--output-format", "json", "--approval-mode", "auto_edit"]
        if session:
            args += ["--resume", session]
        return args + (["--model", model] if model else [])

    def env(self) -> dict[str, str]:
        return {**os.environ, **geminimode.ENV}

    def parse(self, out: bytes, err: process.Capture) -> GeminiResult:
        return GeminiResult.from_output(out, err.last_text())

    def reported(self, goal: Goal, done: process.Exit, result: GeminiResult) -> MakerReport:
        dollars, tokens, unpriced = cost.priced({m: [cost.gemini_counts(*c)] for m, c in result.calls.items()})
        summary = (result.response or "") if result.error is None else f"[{self.label} failed: {result.error}]"
        if unpriced:
            log_error("gemini maker", cost.unpriced_note(unpriced))
            summary = f"{summary}\n{cost.unpriced_note(unpriced)}"
        return MakerReport(summary=summary[-SUMMARY_CHARS:], cost=Cost(dollars=dollars, tokens=tokens),
                           model=result.main_model, failed=result.error is not None or done.code != 0,
                           session_id=result.session_id, unpriced=bool(unpriced))
