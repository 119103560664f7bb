"""The clocks: the wall clock for stamps a person reads, the monotonic clock for every duration.

A wall clock steps (a laptop waking, an NTP correction, a host whose clock is off): time measured by it
is charged wrongly, or lost. Linux's monotonic clock never steps and is one clock for every process of
a boot, so ``now`` hands out wall times that also carry the monotonic reading and the boot they were
read in (``Instant``); a duration between two of them of the same boot is measured on the monotonic
clock (rules/budget.py), and only across boots or hosts on the wall clock.

Tests hand the loop a clock of their own (engine.Edges.now), or run a process whose ``datetime`` is
off (tests/skewclock.py). Standard library only.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class Instant(datetime):
    """A wall-clock time that knows the monotonic clock's reading at that moment, and of which boot."""

    mono: float | None = None
    boot: str | None = None


def at(wall: datetime, mono: float | None, boot: str | None) -> Instant:
    """``wall`` as an Instant read at ``mono`` in ``boot``."""
    instant = Instant(wall.year, wall.month, wall.day, wall.hour, wall.minute, wall.second, wall.microsecond,
                      tzinfo=wall.tzinfo or UTC)
    instant.mono, instant.boot = mono, boot
    return instant


def now() -> Instant:
    """The wall clock now (UTC), with the monotonic clock's reading."""
    mono = time.monotonic()
    return at(datetime.now(UTC), mono, boot())


@cache
def boot() -> str | None:
    """This boot's id: monotonic readings compare only within one boot (None where it cannot be told)."""
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip() or None
    except OSError:
        return None
