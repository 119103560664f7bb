"""`python tests/skewclock.py ARGS...` is `python -m goal_convergence ARGS...` with a wall clock that is off, and
on another host if asked: what `faketime` would do, for the one process. From the environment:

- SKEW_SECONDS: added to the wall clock from the start (a host whose clock is ahead, or behind);
- STEP_WHEN and STEP_SECONDS: once the file STEP_WHEN exists (a maker makes it as it starts), STEP_SECONDS more
  for the rest of the process's life (a laptop waking, an NTP step), forward or back;
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
_STEP = float(os.environ.get("STEP_SECONDS") or 0)
_STEP_WHEN = os.environ.get("STEP_WHEN")
_stepped = False


def offset() -> _datetime.timedelta:
    global _stepped
    _stepped = _stepped or bool(_STEP_WHEN and os.path.exists(_STEP_WHEN))
    return _datetime.timedelta(seconds=_SKEW + (_STEP if _stepped else 0.0))


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
