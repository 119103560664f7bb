"""Gemini CLI as a headless maker: `gemini -p --output-format json`, the objective first, then `--resume` of the
same session with each hint, its edits approved (``auto_edit``, as the claude maker's ``acceptEdits``).

What a turn spent is read from the JSON Gemini CLI prints at the end (``stats.models``: each model's
tokens over the turn) and priced from the price table; a model with no price is charged in tokens and the
goal held to a token budget (engine.MakerReport.unpriced), never counted as $0 without a word.
"""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..errors import MakerError
from ..models import Cost, Goal
from ..models.gemini_result import GeminiResult
from ..storage import cost
from ..system import process
from ..system.log import log_error
from .engine import MakerReport
from .makers import SUMMARY_CHARS, first_prompt, hint_prompt, maker_env

PIN = "0.61.0"  # the Gemini CLI version this was checked against (.ci/run installs it)
_RESULT_BYTES = 16 << 20
# A maker's Gemini CLI must not ask anything of a person that is not there, nor keep a session of ours waiting.
_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true"}


def binary() -> str | None:
    """The Gemini CLI binary: $GEMINI_BIN, else `gemini` on PATH."""
    return os.environ.get("GEMINI_BIN") or shutil.which("gemini")


@dataclass
class GeminiMaker:
    model: str | None = None
    name: str = "gemini"

    def command(self, goal: Goal, hint: str) -> list[str]:
        found = binary()
        if not found:
            raise MakerError(f"the gemini maker needs Gemini CLI: install it (npm install -g @google/gemini-cli@{PIN}) "
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
                           env={**os.environ, **_ENV, **maker_env(goal)}, cancel=cancel)
        if done.cancelled:
            return MakerReport(summary="[gemini -p was stopped: the goal ended in another attempt]", failed=True)
        if done.timed_out:
            return MakerReport(summary="[gemini -p ran out of the goal's time budget]", failed=True)
        try:
            result = GeminiResult.model_validate_json(bytes(out.head).strip() or _error_json(err))
        except ValidationError:
            tail = (err.last_text() if err.total else out.last_text()).strip()[-500:]
            return MakerReport(summary=f"[gemini -p exited {done.code} without a result: {tail}]", failed=True)
        calls = {model: [cost.gemini_counts(t.prompt, t.cached, t.candidates, t.thoughts, t.tool)]
                 for model, t in ((m, s.tokens) for m, s in result.stats.models.items())}
        dollars, tokens, unpriced = cost.priced(calls)
        summary = (result.response or "") if result.error is None else f"[gemini -p failed: {result.error}]"
        if unpriced:
            log_error("gemini maker", cost.unpriced_note(unpriced))
            summary = f"{summary}\n{cost.unpriced_note(unpriced)}"
        return MakerReport(summary=summary[-SUMMARY_CHARS:], cost=Cost(dollars=dollars, tokens=tokens),
                           model=result.main_model, failed=result.error is not None or done.code != 0,
                           session_id=result.session_id, unpriced=bool(unpriced))


def _error_json(err: process.Capture) -> bytes:
    """A failed session prints its JSON (session_id, error) on stderr, after the error's trace."""
    text = err.last_text()
    at = text.rfind('{\n  "session_id"')
    return text[at:].encode() if at >= 0 else b"{}"
