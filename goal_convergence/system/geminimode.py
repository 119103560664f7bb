"""Gemini CLI in headless mode (`gemini -p`): where its binary is, and the version this was checked against.
What it prints is read by models/gemini_result.py."""

from __future__ import annotations

import os
import shutil

PIN = "0.61.0"  # the Gemini CLI version checked against (.ci/run installs it)
# A Gemini CLI we start runs in this process, not in a child it relaunches with more memory.
ENV = {"GEMINI_CLI_NO_RELAUNCH": "true"}


def binary() -> str | None:
    """The Gemini CLI binary: $GEMINI_BIN, else `gemini` on PATH."""
    return os.environ.get("GEMINI_BIN") or shutil.which("gemini")
