"""A metric's target: a comparison and a number ("<= 0", ">= 90", "< 200"), and which way is better.

``<=`` and ``<`` want the number down, ``>=`` and ``>`` want it up, ``==`` wants it nearer."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

from .base import TARGET_PATTERN

_TARGET = re.compile(TARGET_PATTERN)
_OPS: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, ">=": operator.ge, "==": operator.eq,
                                                   "<": operator.lt, ">": operator.gt}


def parse_target(text: str) -> tuple[str, float]:
    """``"<= 0"`` as ("<=", 0.0); ValueError saying what a target looks like otherwise."""
    if not _TARGET.match(text or ""):
        raise ValueError(f"{text!r} is not a target; give a comparison and a number, e.g. '<= 0', '>= 90' or '< 200'")
    body = text.strip()
    op = body[:2] if body[:2] in _OPS else body[:1]
    return op, float(body[len(op):])


def meets(value: float, target: str) -> bool:
    op, number = parse_target(target)
    return _OPS[op](value, number)


def better(new: float, old: float, target: str) -> bool:
    """Whether ``new`` is strictly closer to the target's side than ``old``."""
    op, number = parse_target(target)
    if op in ("<=", "<"):
        return new < old
    if op in (">=", ">"):
        return new > old
    return abs(new - number) < abs(old - number)


def shown(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"
