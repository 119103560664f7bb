"""Codex CLI run headless (`codex exec`): where its binary is, and where it keeps a session's rollout file.
What `codex exec --json` prints is read by loop/makers.py (the maker) and oracle/codex_cli.py (the judge);
what a rollout file says a session spent, by storage/rollout.py."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path


def binary() -> str | None:
    """The Codex CLI: $CODEX_BIN, else `codex` on PATH."""
    return os.environ.get("CODEX_BIN") or shutil.which("codex")


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def rollout_path(thread_id: str) -> Path | None:
    """The rollout file of the session ``thread_id`` (``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``), if any."""
    if not thread_id or "/" in thread_id or "*" in thread_id:
        return None
    found = sorted((codex_home() / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None


def configured_model() -> str | None:
    """The model Codex runs when none is passed: ``model`` in ``$CODEX_HOME/config.toml``, if set."""
    try:
        with (codex_home() / "config.toml").open("rb") as fh:
            model = tomllib.load(fh).get("model")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return model if isinstance(model, str) and model else None
