"""The oracle's settings from the environment: how long one call may take, how often it is retried."""

from __future__ import annotations

import os

from ..errors import InvalidInput

DEFAULT_TIMEOUT = 120.0
DEFAULT_RETRIES = 4


def _setting(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
        if value < 0:
            raise ValueError
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a number of {'seconds' if 'TIMEOUT' in name else 'retries'}; "
                           f"unset it or give e.g. {default:g}") from None
    return value


def oracle_timeout() -> float:
    """Seconds one API call may take (GOAL_CONVERGENCE_ORACLE_TIMEOUT)."""
    return _setting("GOAL_CONVERGENCE_ORACLE_TIMEOUT", DEFAULT_TIMEOUT)


def oracle_retries() -> int:
    """Retries of a call that failed with 429, 5xx, 529 or a timeout (GOAL_CONVERGENCE_ORACLE_RETRIES)."""
    return int(_setting("GOAL_CONVERGENCE_ORACLE_RETRIES", DEFAULT_RETRIES))
