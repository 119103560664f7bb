"""`python tests/skewclock.py ARGS...` is `python -m goal_convergence ARGS...` with a wall clock that is off, and
on another host if asked: what `faketime` would do, for the one process. From the environment:

- SKEW_SECONDS: added to the wall clock from the start (a host whose clock is ahead, or behind);
- STEP_WHEN and STEP_SECONDS: each time the file STEP_WHEN appears (a maker makes it as it starts), it is taken
  away and the clock steps by the next of STEP_SECONDS (comma-separated, forward or back: a laptop waking, an NTP
  step), for the rest of the process's life;
- FAKE_HOST: the host name the process goes by.

The monotonic clock is left alone, as the kernel leaves it when the wall clock steps. ``datetime.datetime`` is
replaced before the package is imported, so every ``datetime.now`` in it reads the skewed clock."""

from __future__ import annotations

import datetime as _datetime
import os
import runpy
import socket
import sys

_SKEW = float(os.environ.get("SKEW_SECONDS") or 0)
_STEPS = [float(s) for s in (os.environ.get("STEP_SECONDS") or "").split(",") if s]
_STEP_WHEN = os.environ.get("STEP_WHEN")
_stepped = 0.0


def offset() -> _datetime.timedelta:
    global _stepped
    if _STEP_WHEN and _STEPS and os.path.exists(_STEP_WHEN):
        os.unlink(_STEP_WHEN)
        _stepped += _STEPS.pop(0)
    return _datetime.timedelta(seconds=_SKEW + _stepped)


class SkewedDatetime(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        return super().now(tz) + offset()

    @classmethod
    def utcnow(cls):  # type: ignore[override]
        return super().utcnow() + offset()


_datetime.datetime = SkewedDatetime  # type: ignore[misc]
if os.environ.get("FAKE_HOST"):
    socket.gethostname = lambda: os.environ["FAKE_HOST"]  # type: ignore[assignment]

sys.argv = ["goal", *sys.argv[1:]]
runpy.run_module("goal_convergence", run_name="__main__", alter_sys=True)
