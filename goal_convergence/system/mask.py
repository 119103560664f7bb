"""Masking secrets in what is kept or sent: the output of a project's commands can print a key.

Known token shapes (Anthropic, OpenAI-style ``sk-``, AWS access key ids and secret keys, GitHub,
Slack, private key blocks) and the values of this process's environment variables whose names
look secret (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL; values of 8 characters or more) are
replaced by ``[masked <kind>]``. Applied where captured output enters what is stored or sent
(condition evidence, the maker's summary, the oracle's input and tool results, triage items, the
Stop hook's reason, notifications), not at every print.
"""

from __future__ import annotations

import os
import re
from typing import Any

_SHAPES = [
    ("private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)"),
    ("anthropic key", r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    ("api key", r"\bsk-[A-Za-z0-9_\-]{20,}"),
    ("aws access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("slack token", r"\bxox[abposr]-[A-Za-z0-9\-]{8,}"),
]
_TOKENS = re.compile("|".join(f"(?P<g{i}>{pattern})" for i, (_, pattern) in enumerate(_SHAPES)), re.S)
# The secret key follows its name (a credentials file, `env` output, an error message).
_AWS_SECRET = re.compile(r"(?i)(aws_secret_access_key|secret_?access_?key)([\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
_MIN_VALUE = 8

_env_cache: tuple[tuple[str, ...], re.Pattern[str] | None] = ((), None)


def _env_values() -> re.Pattern[str] | None:
    """One pattern for the secret-named variables' values (rebuilt when they change)."""
    global _env_cache
    values = tuple(sorted({v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_VALUE},
                          key=lambda v: (-len(v), v)))
    if values != _env_cache[0]:
        _env_cache = (values, re.compile("|".join(map(re.escape, values))) if values else None)
    return _env_cache[1]


def _shape(match: re.Match[str]) -> str:
    return f"[masked {_SHAPES[int(match.lastgroup[1:])][0]}]"  # type: ignore[index]


def text(value: str) -> str:
    """``value`` with every secret it holds masked."""
    return _text(value, _env_values())


def _text(value: str, env: re.Pattern[str] | None) -> str:
    if not value:
        return value
    if env is not None:
        value = env.sub("[masked environment secret]", value)
    value = _AWS_SECRET.sub(lambda m: f"{m[1]}{m[2]}[masked aws secret key]", value)
    return _TOKENS.sub(_shape, value)


def data(value: Any) -> Any:
    """A JSON-like value with every string in it masked."""
    # The environment is read once for the whole value: evidence holds thousands of failure lines.
    return _data(value, _env_values())


def _data(value: Any, env: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return _text(value, env)
    if isinstance(value, dict):
        return {k: _data(v, env) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_data(v, env) for v in value]
    return value
