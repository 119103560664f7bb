"""Claude Code in print mode (`claude -p`): where its binary is, and the environment a nested run needs.
What it prints is read by models/print_result.py."""

from __future__ import annotations

import os
import shutil

# Inside a Claude Code session these would tie a nested `claude -p` to the outer session.
SESSION_VARS = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_PROJECT_DIR",
                "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDE_ENV_FILE")


def binary() -> str | None:
    """The Claude Code binary: $CLAUDE_BIN, else `claude` on PATH."""
    return os.environ.get("CLAUDE_BIN") or shutil.which("claude")


def detached_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SESSION_VARS}
