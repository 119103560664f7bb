"""How hard the stress suite attacks: GOAL_STRESS_SCALE=full (the default) or short (what .ci/run runs)."""

from __future__ import annotations

import os

SCALE = os.environ.get("GOAL_STRESS_SCALE", "full")
if SCALE not in ("full", "short"):
    raise ValueError(f"GOAL_STRESS_SCALE={SCALE!r}: use full or short")


def sized(full: int, short: int) -> int:
    return short if SCALE == "short" else full
