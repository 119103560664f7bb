"""`python tests/skewclock.py ARGS...` is `python -m goal_convergence ARGS...` with a wall clock that is off, and
on another host if asked: what `faketime` would do, for the one process. From the environment:

- SKEW_SECONDS: added to the wall clock from the start (a host whose clock is ahead, or behind);
- STEP_AFTER and STEP_SECONDS: after STEP_AFTER s of the process's life, STEP_SECONDS more (a laptop waking,
  an NTP step), forward or back;
- FAKE_HOST: the host name the process goes by.

The monotonic clock is left alone, as the kernel leaves it when the wall clock steps. ``datetime.datetime`` is
replaced before the package is imported, so every ``datetime.now`` in it reads the skewed clock."""

from __future__ import annotations

import datetime as _datetime
import os
import runpy
import socket
import sys
import time

_START = time.monotonic()
_SKEW = float(os.environ.get("SKEW_SECONDS") or 0)
_STEP_AFTER = float(os.environ.get("STEP_AFTER") or 0)
_STEP = float(os.environ.get("STEP_SECONDS") or 0)


def offset() -> _datetime.timedelta:
    stepped = _STEP if _STEP and time.monotonic() - _START >= _STEP_AFTER else 0.0
    return _datetime.timedelta(seconds=_SKEW + stepped)


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
