"""Choosing the judge a goal asks for, and what every judge answers to."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..errors import OracleUnavailable
from ..models import ConditionEvidence, Goal, OracleConfig
from ..system import codexmode, geminimode, printmode
from .conditions_only import ConditionsOracle
from .input import OracleInput
from .verdict import Judgement


class Oracle(Protocol):
    name: str

    def judge(self, oracle_input: OracleInput) -> Judgement: ...

    def estimate_cost(self, oracle_input: OracleInput) -> float: ...


SET_UP = ("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) for the anthropic oracle, or install Claude Code and "
          "log in (`npm install -g @anthropic-ai/claude-code`, then `claude`) for the claude-cli oracle; or choose "
          "`--oracle command --oracle-cmd CMD`, or `--oracle conditions` to judge by the conditions alone")


def _has_key() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def resolve(provider: str) -> str | None:
    """The provider ``auto`` stands for here (None: none can run); any other provider is itself."""
    if provider != "auto":
        return provider
    return "anthropic" if _has_key() else "claude-cli" if printmode.binary() else None


def runs_here(provider: str) -> str | None:
    """The provider that judges here for ``provider`` (``auto`` resolved), or None when it cannot run here."""
    resolved = resolve(provider)
    if resolved == "anthropic":
        return resolved if _has_key() else None
    if resolved == "claude-cli":
        return resolved if printmode.binary() else None
    return resolved


def get_oracle(config: OracleConfig, goal: Goal, *,
               rerun: Callable[[int], ConditionEvidence] | None = None) -> Oracle:
    """The judge ``config`` asks for. ``auto`` is anthropic when an API key is set, else claude-cli
    when Claude Code is installed. Raises OracleUnavailable (and PriceUnknown for a model with no price)."""
    root = Path(goal.project_root)
    has_key = _has_key()
    provider = resolve(config.provider)
    if not provider:
        raise OracleUnavailable(f"no oracle can run here: {SET_UP}")
    if provider == "anthropic":
        if not has_key:
            raise OracleUnavailable(f"the anthropic oracle needs an API key: {SET_UP}")
        from .api import AnthropicOracle  # each judge's modules only when it judges: a Stop imports this

        return AnthropicOracle(config.model, root, rerun, may_read=config.may_read or ())
    if provider == "claude-cli":
        claude = printmode.binary()
        if not claude:
            raise OracleUnavailable(f"the claude-cli oracle needs Claude Code on PATH (or CLAUDE_BIN): {SET_UP}")
        from .claude_cli import ClaudeCliOracle

        return ClaudeCliOracle(config.model, root, claude)
    if provider == "codex-cli":
        codex = codexmode.binary()
        if not codex:
            raise OracleUnavailable("the codex-cli oracle needs Codex CLI on PATH (or CODEX_BIN): install it with "
                                    "`npm install -g @openai/codex` and log in (`codex login`)")
        from .codex_cli import CodexCliOracle

        return CodexCliOracle(config.model, root, codex)
    if provider == "gemini-cli":
        return _gemini(config, root)
    if provider == "command":
        if not config.command:
            raise OracleUnavailable("the command oracle needs a program: pass --oracle-cmd CMD")
        from .command import CommandOracle

        return CommandOracle(config.command, root)
    return ConditionsOracle()


def _gemini(config: OracleConfig, root: Path) -> Oracle:
    from .gemini_cli import GeminiCliOracle

    gemini = geminimode.binary()
    if not gemini:
        raise OracleUnavailable("the gemini-cli oracle needs Gemini CLI on PATH (or GEMINI_BIN): npm install -g "
                                f"@google/gemini-cli@{geminimode.PIN}")
    if not config.model.startswith("gemini"):
        raise OracleUnavailable(f"the gemini-cli oracle judges with a Gemini model, not {config.model}: pass "
                                "--oracle-model, e.g. --oracle-model gemini-2.5-pro")
    return GeminiCliOracle(config.model, root, gemini)
