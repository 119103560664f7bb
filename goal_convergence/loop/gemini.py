"""Gemini CLI as a headless maker: `gemini -p --output-format json`, the objective first, then `--resume` of the
same session with each hint, its edits approved (``auto_edit``, as the claude maker's ``acceptEdits``).

What a turn spent is read from the JSON Gemini CLI prints at the end (``stats.models``: each model's
tokens over the turn) and priced from the price table; a model with no price is charged in tokens and the
goal held to a token budget (engine.MakerReport.unpriced), never counted as $0 without a word.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..errors import MakerError
from ..models import Cost, Goal
from ..models.gemini_result import GeminiResult
from ..storage import cost
from ..system import geminimode, process
from ..system.log import log_error
from .engine import MakerReport
from .makers import SUMMARY_CHARS, first_prompt, hint_prompt, maker_env

_RESULT_BYTES = 16 << 20


@dataclass
class GeminiMaker:
    model: str | None = None
    name: str = "gemini"

    def command(self, goal: Goal, hint: str) -> list[str]:
        found = geminimode.binary()
        if not found:
            raise MakerError("the gemini maker needs Gemini CLI: install it (npm install -g "
                             f"@google/gemini-cli@{geminimode.PIN}) "
                             "or set GEMINI_BIN, or use --maker-cmd CMD")
        session = goal.maker.session_id
        prompt = hint_prompt(goal, hint) if session and hint else first_prompt(goal)
        args = [found, "-p", prompt, "--output-format", "json", "--approval-mode", "auto_edit"]
        if session:
            args += ["--resume", session]
        model = self.model or goal.maker.model
        return args + (["--model", model] if model else [])

    def work(self, goal: Goal, hint: str, timeout: float | None,
             cancel: threading.Event | None = None) -> MakerReport:
        out, err = process.Capture(head=_RESULT_BYTES), process.Capture()
        done = process.run(self.command(goal, hint), Path(goal.project_root), out, err=err, timeout=timeout,
                           env={**os.environ, **geminimode.ENV, **maker_env(goal)}, cancel=cancel)
        if done.cancelled:
            return MakerReport(summary="[gemini -p was stopped: the goal ended in another attempt]", failed=True)
        if done.timed_out:
            return MakerReport(summary="[gemini -p ran out of the goal's time budget]", failed=True)
        try:
            result = GeminiResult.from_output(bytes(out.head), err.last_text())
        except ValidationError:
            tail = (err.last_text() if err.total else out.last_text()).strip()[-500:]
            return MakerReport(summary=f"[gemini -p exited {done.code} without a result: {tail}]", failed=True)
        dollars, tokens, unpriced = cost.priced({m: [cost.gemini_counts(*c)] for m, c in result.calls.items()})
        summary = (result.response or "") if result.error is None else f"[gemini -p failed: {result.error}]"
        if unpriced:
            log_error("gemini maker", cost.unpriced_note(unpriced))
            summary = f"{summary}\n{cost.unpriced_note(unpriced)}"
        return MakerReport(summary=summary[-SUMMARY_CHARS:], cost=Cost(dollars=dollars, tokens=tokens),
                           model=result.main_model, failed=result.error is not None or done.code != 0,
                           session_id=result.session_id, unpriced=bool(unpriced))

