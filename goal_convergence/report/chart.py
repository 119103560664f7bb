"""The geometry of the report's SVG: the convergence chart (one small panel a measure, sharing the iteration
axis) and the budget gauges. Pure: numbers in, coordinates and path data out; the template only places them.

Each iteration owns a band of the x axis, so a pointer over the chart maps to exactly one iteration. Every
drawn series also carries its numbers (``values``) and its scale (``top``), so a reader (and the browser
tests) can check that what is drawn is what the goal file says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

WIDTH = 960
LEFT, RIGHT = 72, 20  # room for the y labels; a little air on the right
TITLE_H, PLOT_H, GAP_H, AXIS_H, STRIP_H = 24, 84, 14, 26, 10
MARKERS_UP_TO = 60  # iterations: beyond this a dot for each point only clutters the line


@dataclass(frozen=True)
class Series:
    key: str
    title: str
    values: list[float | None]
    top: float
    label: Callable[[float], str]
    step: bool = False  # a count that holds for its whole band (conditions passing)
    whole: bool = False  # a count: no tick between whole numbers
    threshold: float | None = None
    threshold_label: str = ""


@dataclass
class Panel:
    key: str
    title: str
    y: float  # the top of the plot area
    path: str
    values: str  # the numbers drawn, comma-separated; empty where nothing was measured
    top: float
    ticks: list[tuple[float, str]]
    markers: list[tuple[float, float]] = field(default_factory=list)
    threshold: tuple[float, str] | None = None

    @property
    def bottom(self) -> float:
        return self.y + PLOT_H


@dataclass
class Chart:
    width: int
    height: float
    left: float
    right: float
    band: float  # the width of one iteration's band
    first: int  # the first iteration's number
    panels: list[Panel]
    strips: dict[str, str]  # kind -> path of that kind's marks
    xticks: list[tuple[float, str]]
    axis_y: float


def nice_top(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``value`` (1 for nothing)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value - 1e-12)


def number(v: float) -> str:
    """A value as drawn and as carried in ``values``: whole numbers bare, others to 6 decimals."""
    return str(int(v)) if float(v).is_integer() else repr(round(v, 6))


def _xy(x: float, y: float) -> str:
    return f"{x:.2f} {y:.2f}"


def _panel(s: Series, y: float, left: float, band: float) -> Panel:
    bottom = y + PLOT_H

    def at(v: float) -> float:
        return bottom - min(max(v, 0.0), s.top) / s.top * PLOT_H

    parts, markers, pen_down = [], [], False
    for i, v in enumerate(s.values):
        if v is None:
            pen_down = False
            continue
        x0, yv = left + i * band, at(v)
        if s.step:  # the whole band at its value, joined to the next band's by a riser
            parts.append(f"{'L' if pen_down else 'M'}{_xy(x0, yv)}L{_xy(x0 + band, yv)}")
        else:
            parts.append(f"{'L' if pen_down else 'M'}{_xy(x0 + band / 2, yv)}")
            if len(s.values) <= MARKERS_UP_TO:
                markers.append((round(x0 + band / 2, 2), round(yv, 2)))
        pen_down = True
    ticks = [(round(at(t), 2), s.label(t)) for t in (0, s.top / 2, s.top) if not s.whole or float(t).is_integer()]
    threshold = (round(at(s.threshold), 2), s.threshold_label) if s.threshold is not None else None
    return Panel(s.key, s.title, y, "".join(parts), ",".join("" if v is None else number(v) for v in s.values),
                 s.top, ticks, markers, threshold)


def xticks(n: int, first: int, left: float, band: float, most: int = 10) -> list[tuple[float, str]]:
    """Iteration numbers under the axis: the first, the last and evenly spaced round ones between."""
    if n == 0:
        return []
    every = nice_top(n / most) if n > most else 1
    every = max(1, int(every))
    picked = sorted({0, n - 1, *range(every - (first % every), n, every)} & set(range(n)))
    # keep labels apart: drop a round one that would sit on top of the last
    picked = [i for i in picked if i in (0, n - 1) or (n - 1 - i) * band > 28 and i * band > 28]
    return [(round(left + (i + 0.5) * band, 2), str(first + i)) for i in picked]


def chart(series: list[Series], kinds: list[str], first: int = 1, width: int = WIDTH) -> Chart:
    """Panels stacked top to bottom in the order given, then a strip of marks, one a iteration, coloured by
    what the iteration decided (``kinds``), then the iteration axis."""
    n = len(kinds)
    left, right = LEFT, width - RIGHT
    band = (right - left) / max(n, 1)
    panels, y = [], 0.0
    for s in series:
        panels.append(_panel(s, y + TITLE_H, left, band))
        y += TITLE_H + PLOT_H + GAP_H
    strip_y = y
    strips: dict[str, list[str]] = {}
    for i, k in enumerate(kinds):
        strips.setdefault(k, []).append(f"M{left + i * band:.2f} {strip_y:.2f}h{max(band - 0.4, 0.6):.2f}v{STRIP_H}h"
                                        f"-{max(band - 0.4, 0.6):.2f}z")
    axis_y = strip_y + STRIP_H + 14
    return Chart(width, axis_y + AXIS_H - 10, left, right, round(band, 4), first, panels,
                 {k: "".join(v) for k, v in strips.items()}, xticks(n, first, left, band), axis_y)


@dataclass(frozen=True)
class Gauge:
    key: str
    label: str
    text: str  # "7 / 15", "$0.42 / $10.00"
    spent: float
    limit: float | None
    parts: list[tuple[str, float, float]]  # (css class, x fraction, width fraction) of the bar, stacked
    over: bool

    @property
    def left(self) -> str:
        return "no limit" if self.limit is None else f"{max(self.limit - self.spent, 0) / self.limit:.0%} left"


def gauge(key: str, label: str, text: str, parts: list[tuple[str, float]], limit: float | None) -> Gauge:
    """A bar of ``limit``, filled by ``parts`` ((class, amount), stacked left to right). With no limit the bar
    is the spend itself, split the same way."""
    spent = sum(amount for _, amount in parts)
    scale = limit if limit else (spent or 1.0)
    stacked, x = [], 0.0
    for cls, amount in parts:
        w = min(amount / scale, max(1.0 - x, 0.0))
        stacked.append((cls, round(x, 4), round(w, 4)))
        x += w
    return Gauge(key, label, text, spent, limit, stacked, bool(limit) and spent >= limit)
