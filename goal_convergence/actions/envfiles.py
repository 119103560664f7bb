"""The files a GitHub runner reads back after a step: ``GITHUB_OUTPUT`` (step outputs),
``GITHUB_STEP_SUMMARY`` (the job summary, Markdown), ``GITHUB_ENV`` and ``GITHUB_PATH``.

Values go in the multi-line form (``name<<DELIMITER``), with a delimiter that cannot occur in the
value, so an objective or a hint with newlines (or a line that looks like ``other=value``) cannot
set an output it does not own. Outside a runner (a variable unset) each write goes nowhere.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from ..errors import InvalidInput


def _append(variable: str, text: str) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)


def _pairs(values: Mapping[str, object]) -> str:
    out = []
    for name, value in values.items():
        text = "" if value is None else str(value)
        delimiter = f"GOAL_EOF_{secrets.token_hex(8)}"
        if delimiter in text:  # never in practice: 64 random bits; refused rather than written broken
            raise InvalidInput(f"the value of {name} holds the delimiter {delimiter}; run the step again")
        out.append(f"{name}<<{delimiter}\n{text}\n{delimiter}\n")
    return "".join(out)


def set_outputs(values: Mapping[str, object]) -> None:
    _append("GITHUB_OUTPUT", _pairs(values))


def set_env(values: Mapping[str, object]) -> None:
    """Variables for the steps after this one (a runner reads GITHUB_ENV between steps)."""
    _append("GITHUB_ENV", _pairs(values))


def add_path(folder: Path) -> None:
    _append("GITHUB_PATH", f"{folder}\n")


def add_summary(markdown: str) -> None:
    _append("GITHUB_STEP_SUMMARY", markdown.rstrip("\n") + "\n\n")

