"""Measured goals: a number a command prints, and the target it must reach (``--metric CMD --target '<= 0'``).

A metric condition passes when its command exits 0 and the number it prints meets the target
(models/target.py). The number is the last one in the output, or the first group of ``metricRegex``; a
benchmark's noise is tamed by ``runs``: the command runs that many times and the median counts.
"""

from __future__ import annotations

import re
import statistics

# A number as programs print it: "12", "-3.5", "1,234", "2.5e3" ("1,234" reads as 1234).
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def read_number(output: str, regex: str | None = None) -> float | None:
    """The number ``output`` reports: the first group of ``regex`` (its last match), else the last number."""
    if regex:
        found = [m.group(1) if m.groups() else m.group(0) for m in re.finditer(regex, output, re.M)]
        text = found[-1] if found else None
    else:
        numbers = _NUMBER.findall(output)
        text = numbers[-1] if numbers else None
    try:
        return float(text.replace(",", "")) if text is not None else None
    except ValueError:
        return None


def median(values: list[float]) -> float:
    return float(statistics.median(values))
