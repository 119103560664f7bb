"""Runs a goal's stopping conditions: all at once, each bounded in time and in memory.

Each condition is a shell command line run by the user's shell in its own process group, with
the project root as cwd and no stdin. On timeout the whole group gets SIGTERM, then SIGKILL, so
grandchildren go too (processes that start their own session escape any group and are out of
reach). Output is read as it comes and never held whole: the first and last few KB, the byte
count, the lines that matter (``extract``), the test runners' counts (``census``) and, for
coverage, the lines the parsers need (``coverage``).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TextIO

from . import census
from .coverage import CoverageLines, parse_coverage
from .errors import GoalConvergenceError, InvalidInput
from .extract import PASS_FINGERPRINT, FailureScanner, decode_output, fingerprint
from .models import ConditionEvidence, Goal, StoppingCondition

HEAD_BYTES = 4096
TAIL_BYTES = 8192
DEFAULT_TIMEOUT = 600.0

_READ_BYTES = 1 << 20
# Between SIGTERM and SIGKILL: enough for a test runner to flush, short enough that everything is
# gone well within timeout + 2 s.
_TERM_GRACE = 1.0
# After SIGKILL, reading stops this soon even if a process outside the group holds the pipe.
_DRAIN = 0.3
# When the shell has exited but a background child still holds the output open, how long we wait
# for it before ending the group (a test server left running must not hang the check).
_LINGER = 1.0
# Without a pidfd, how often the child's exit is looked for.
_TICK = 0.02
_CANCEL_TICK = 0.1
_PROGRESS_EVERY = 0.1
# Lines of output kept as failure lines when no rule recognised any.
_LAST_WORDS = 5
# The longest stretch without a newline kept before scanning it as one line.
_MAX_CARRY = 1 << 16

Progress = list[tuple[int, str, float, bool | None]]
ProgressCallback = Callable[[Progress], None]


def user_shell() -> str:
    shell = os.environ.get("SHELL")
    if shell and os.path.isfile(shell) and os.access(shell, os.X_OK):
        return shell
    return "/bin/sh"


class _Capture:
    """The bounded record of one command's output."""

    def __init__(self, failures: FailureScanner | None = None, coverage: CoverageLines | None = None,
                 tests: census.CensusScanner | None = None) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.failures = failures
        self.coverage = coverage
        self.tests = tests
        self._carry = b""

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        rest = chunk
        if len(self.head) < HEAD_BYTES:
            room = HEAD_BYTES - len(self.head)
            self.head += chunk[:room]
            rest = chunk[room:]
        if len(rest) >= TAIL_BYTES:
            self.tail = bytearray(rest[-TAIL_BYTES:])
        elif rest:
            self.tail += rest
            del self.tail[:-TAIL_BYTES]
        data = self._carry + chunk
        cut = data.rfind(b"\n") + 1
        if not cut and len(data) > _MAX_CARRY:
            cut = len(data)
        self._carry = data[cut:]
        if cut:
            self._scan(data[:cut])

    def close(self) -> None:
        if self._carry:
            self._scan(self._carry)
            self._carry = b""

    def _scan(self, block: bytes) -> None:
        if self.failures is not None:
            self.failures.feed(block)
        if self.coverage is not None:
            self.coverage.feed(block)
        if self.tests is not None:
            self.tests.feed(block)

    def head_text(self) -> str:
        return decode_output(bytes(self.head))

    def tail_text(self) -> str:
        """The output after the head, its last TAIL_BYTES at most."""
        return _decode_tail(bytes(self.tail))

    def last_text(self) -> str:
        """The last TAIL_BYTES of the output, wherever the head ends."""
        if self.total <= HEAD_BYTES + TAIL_BYTES:
            return _decode_tail((bytes(self.head) + bytes(self.tail))[-TAIL_BYTES:])
        return self.tail_text()

    def failure_lines(self) -> list[str]:
        lines = self.failures.lines if self.failures is not None else []
        if lines:
            return lines
        # Nothing any runner's rules recognise: a failing command's last words are what it said.
        return [line for line in self.last_text().splitlines() if line.strip()][-_LAST_WORDS:]


def _decode_tail(tail: bytes) -> str:
    # The cut may fall inside a UTF-8 sequence: drop its orphaned continuation bytes.
    skip = 0
    while skip < min(3, len(tail)) and 0x80 <= tail[skip] < 0xC0:
        skip += 1
    return decode_output(tail[skip:])


class _Child:
    """A running condition: its output pipe and its exit, watched together."""

    def __init__(self, proc: subprocess.Popen[bytes], capture: _Capture) -> None:
        self.proc = proc
        self.capture = capture
        self.eof = False
        self.exited_at: float | None = None
        self._fd = proc.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(self._fd, False)
        with contextlib.suppress(AttributeError, OSError):
            # Fewer, larger reads: big outputs cost less Python time (Linux only; best effort).
            fcntl.fcntl(self._fd, fcntl.F_SETPIPE_SZ, _READ_BYTES)
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(proc.pid)
            self._poller.register(self._pidfd, select.POLLIN)

    @property
    def finished(self) -> bool:
        return self.eof and self.exited_at is not None

    def pump(self, until: float, cancel: threading.Event | None = None, linger: float | None = None) -> None:
        """Read output and watch for the exit until both are done, ``until`` passes, or cancel."""
        tick = _CANCEL_TICK if self._pidfd is not None else _TICK
        while not self.finished:
            limit = until
            if linger is not None and self.exited_at is not None:
                limit = min(limit, self.exited_at + linger)
            now = time.monotonic()
            if now >= limit or (cancel is not None and cancel.is_set()):
                return
            for fd, _ in self._poller.poll(max(0.0, min(limit - now, tick)) * 1000):
                if fd == self._fd:
                    self._read()
                else:
                    self._poller.unregister(fd)  # a pidfd stays readable once the process ended
            if self.exited_at is None and self._leader_exited():
                self.exited_at = time.monotonic()

    def _read(self) -> None:
        try:
            chunk = os.read(self._fd, _READ_BYTES)
        except BlockingIOError:
            return
        if chunk:
            self.capture.feed(chunk)
        else:
            self.eof = True
            self._poller.unregister(self._fd)

    def _leader_exited(self) -> bool:
        # WNOWAIT leaves the shell a zombie, so its pid (the group id) cannot be reused before we
        # are done signalling the group.
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # reaped behind our back (SIGCHLD ignored by the host program)
            return True

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop_group(self) -> None:
        self.signal_group(signal.SIGTERM)
        self.pump(time.monotonic() + _TERM_GRACE)
        # Unconditional: a grandchild may ignore SIGTERM with its output closed or redirected.
        self.signal_group(signal.SIGKILL)
        self.pump(time.monotonic() + _DRAIN)

    def close(self) -> int | None:
        self.capture.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
        self.proc.stdout.close()  # type: ignore[union-attr]
        try:
            return self.proc.wait(timeout=_DRAIN if self.exited_at is None else None)
        except subprocess.TimeoutExpired:
            return None


_NOT_FOUND = re.compile(r"([^\s:]+): (?:command )?not found|command not found: (\S+)")


def _missing_command(output: str, command: str) -> str:
    found = _NOT_FOUND.findall(output)
    if found:
        return next(name for name in found[-1] if name)
    return command.split()[0] if command.split() else command


def _execute(command: str, root: Path, timeout: float | None, cancel: threading.Event | None, capture: _Capture,
             env: Mapping[str, str] | None = None) -> tuple[int | None, bool, bool, float]:
    """Run ``command`` to its end, its timeout or a cancel: (exit code, timed out, cancelled, seconds).

    Raises OSError when the shell cannot be started at all."""
    start = time.monotonic()
    proc = subprocess.Popen([user_shell(), "-c", command], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    child = _Child(proc, capture)
    try:
        child.pump(start + (math.inf if timeout is None else timeout), cancel, linger=_LINGER)
        cancelled = cancel is not None and cancel.is_set() and child.exited_at is None
        timed_out = child.exited_at is None and not cancelled
        if not child.finished:
            child.stop_group()
    finally:
        exit_code = child.close()
    return exit_code, timed_out, cancelled, time.monotonic() - start


def _run(condition: StoppingCondition, index: int, root: Path, timeout: float,
         cancel: threading.Event | None, base_env: Mapping[str, str] | None = None) -> ConditionEvidence:
    def evidence(**fields: object) -> ConditionEvidence:
        return ConditionEvidence(index=index, type=condition.type, command=condition.command, **fields)

    try:
        coverage = CoverageLines(condition.coverage_regex) if condition.type == "coverage_threshold" else None
    except InvalidInput as e:
        return evidence(passed=False, error=str(e), fingerprint=fingerprint([str(e)], None, False))
    tests = census.CensusScanner()
    capture = _Capture(FailureScanner(), coverage, tests)
    # pytest writes its JUnit XML here (census.runner_env), in a folder of this run's own.
    try:
        folder: Path | None = Path(tempfile.mkdtemp(prefix="goal-census-"))
    except OSError:  # no writable temp folder: the census comes from the output alone
        folder = None
    try:
        env = census.runner_env(os.environ if base_env is None else base_env, folder) if folder else base_env
        exit_code, timed_out, cancelled, duration = _execute(condition.command, root, timeout, cancel, capture, env)
        test_census = census.collect(tests, folder) if folder else tests.result()
    except OSError as e:
        error = f"could not start the command ({e}); check that the project root {root} is readable"
        return evidence(passed=False, error=error, fingerprint=fingerprint([error], None, False))
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)

    output = capture.head_text() + "\n" + capture.tail_text()
    error = None
    if cancelled:
        error = "cancelled before it finished"
    elif timed_out:
        error = f"timed out after {timeout:g}s; raise the condition's timeoutSeconds or make the command faster"
    elif exit_code == 127:
        error = f"command not found: {_missing_command(output, condition.command)}; check the condition's command"
    elif exit_code == 126:
        error = "command found but not executable (permission denied?); check the condition's command"
    passed = exit_code == 0 and error is None
    value = None
    if coverage is not None:
        value = parse_coverage(coverage.text(), condition.coverage_regex)
        threshold = condition.threshold or 0.0
        if value is None and passed:
            passed = False
            error = ("could not read a coverage figure from the output; make the command print its coverage "
                     "report, or set coverageRegex to a regular expression whose first group is the percentage")
        elif value is not None and value < threshold and error is None:
            passed = False
            error = f"coverage {value:g}% is below the threshold {threshold:g}%"
    failure_lines = [] if passed else capture.failure_lines()
    return evidence(
        passed=passed,
        exit_code=exit_code,
        timed_out=timed_out,
        duration_seconds=round(duration, 3),
        output_head=capture.head_text(),
        output_tail=capture.tail_text(),
        output_bytes=capture.total,
        failure_lines=failure_lines,
        coverage=value,
        census=test_census,
        fingerprint=(PASS_FINGERPRINT if passed
                     else fingerprint(failure_lines + ([error] if error else []), exit_code, timed_out)),
        error=error,
    )


def run_condition(condition: StoppingCondition, index: int, root: Path, *, default_timeout: float = DEFAULT_TIMEOUT,
                  env: Mapping[str, str] | None = None) -> ConditionEvidence:
    """Run one condition now (``index`` is its place in the goal) and return its evidence.

    ``env`` is the command's environment (this process's by default), pytest's JUnit request added."""
    return _run(condition, index, Path(root), condition.timeout_seconds or default_timeout, None, env)


@dataclass(frozen=True)
class CommandResult:
    """What one shell command did, its output bounded like a condition's."""

    exit_code: int | None
    timed_out: bool
    duration_seconds: float
    output_bytes: int
    head: str  # the first HEAD_BYTES of the output
    tail: str  # the last TAIL_BYTES (the whole output when it is short)


def run_command(command: str, root: Path, *, timeout: float | None = None,
                env: Mapping[str, str] | None = None) -> CommandResult:
    """Run any shell command as conditions run (own process group, no stdin, bounded output).

    ``timeout`` None waits for as long as the command runs. Makers use it."""
    capture = _Capture()
    try:
        exit_code, timed_out, _, duration = _execute(command, Path(root), timeout, None, capture, env)
    except OSError as e:
        raise GoalConvergenceError(f"could not start {command!r} in {root} ({e}); check that the folder exists "
                                   "and is readable") from e
    return CommandResult(exit_code, timed_out, round(duration, 3), capture.total, capture.head_text(),
                         capture.last_text())


def run_conditions(conditions: list[StoppingCondition], root: Path, *, only: list[int] | None = None,
                   on_progress: Callable[[Progress], None] | None = None,
                   default_timeout: float = DEFAULT_TIMEOUT,
                   env: Mapping[str, str] | None = None) -> list[ConditionEvidence]:
    """Run the conditions (or the ``only`` indexes) all at once; evidence in index order.

    ``on_progress`` gets ``(index, command, elapsed seconds, passed or None while running)`` for
    each condition, about ten times a second and once at the end. ``env`` as for ``run_condition``.
    """
    root = Path(root)
    if not root.is_dir():
        raise GoalConvergenceError(f"cannot run the conditions: the project root {root} is not a folder; "
                                   "restore it, or start the goal again from the project's folder")
    indexes = sorted(set(range(len(conditions)) if only is None else only))
    for i in indexes:
        if not 0 <= i < len(conditions):
            raise InvalidInput(f"there is no condition {i}: this goal has {len(conditions)}, "
                               f"numbered 0 to {len(conditions) - 1}")
    cancel = threading.Event()
    started: dict[int, float] = {}
    results: dict[int, ConditionEvidence] = {}
    crashes: list[BaseException] = []

    def work(i: int) -> None:
        started[i] = time.monotonic()
        cond = conditions[i]
        try:
            results[i] = _run(cond, i, root, cond.timeout_seconds or default_timeout, cancel, env)
        except BaseException as e:  # re-raised in the calling thread, where it can be handled
            crashes.append(e)

    def progress() -> Progress:
        now = time.monotonic()
        return [(i, conditions[i].command,
                 results[i].duration_seconds if i in results else now - started.get(i, now),
                 results[i].passed if i in results else None) for i in indexes]

    threads = [threading.Thread(target=work, args=(i,), name=f"condition-{i}") for i in indexes]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                if on_progress is not None:
                    on_progress(progress())
                t.join(_PROGRESS_EVERY)
    except BaseException:
        # Ctrl-C reaches only this process: the conditions run in their own sessions and would
        # otherwise carry on until their timeouts.
        cancel.set()
        for t in threads:
            t.join()
        raise
    if crashes:
        raise crashes[0]
    if on_progress is not None:
        on_progress(progress())
    return [results[i] for i in indexes]


def check_goal_conditions(goal: Goal, *,
                          on_progress: Callable[[Progress], None] | None = None) -> list[ConditionEvidence]:
    """Run every stopping condition of ``goal`` in its project root."""
    return run_conditions(goal.stopping_conditions, Path(goal.project_root), on_progress=on_progress)


# ---- showing results --------------------------------------------------------------------------

def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _result(e: ConditionEvidence) -> str:
    return "TIMEOUT" if e.timed_out else "PASS" if e.passed else "FAIL"


def render_table(evidence: list[ConditionEvidence]) -> str:
    """A plain-text table: condition, result, duration, coverage, first failure line."""
    header = ("#", "condition", "result", "duration", "coverage", "first failure")
    rows = [header]
    for e in evidence:
        first = e.first_failure
        rows.append((str(e.index), _clip(f"{e.type}: {e.command}", 48), _result(e), f"{e.duration_seconds:.2f}s",
                     "-" if e.coverage is None else f"{e.coverage:.1f}%", _clip(first, 100) if not e.passed else ""))
    widths = [max(len(r[c]) for r in rows) for c in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    passed = sum(e.passed for e in evidence)
    lines.append(f"{passed}/{len(evidence)} conditions pass")
    return "\n".join(line.rstrip() for line in lines)


class LiveProgress:
    """An ``on_progress`` that redraws one line a condition, with its elapsed time, on a terminal.

    It draws nothing when the stream (stderr by default) is not a terminal."""

    _MARKS: ClassVar[dict[bool | None, str]] = {None: "…", True: "✓", False: "✗"}

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._drawn = 0
        try:
            self.enabled = self._stream.isatty()
        except (AttributeError, ValueError):
            self.enabled = False

    def __call__(self, states: Progress) -> None:
        if not self.enabled:
            return
        # One line each, never wrapped: the cursor moves back up by the number of lines drawn.
        width = max(20, shutil.get_terminal_size().columns - 1)
        out = [f"\x1b[{self._drawn}F"] if self._drawn else []
        for index, command, elapsed, passed in states:
            line = f"{self._MARKS[passed]} [{index}] {elapsed:6.1f}s  {command}"
            out.append("\x1b[2K" + _clip(line, width) + "\n")
        # A progress display that cannot write (closed terminal) must not stop the check itself.
        with contextlib.suppress(OSError, ValueError):
            self._stream.write("".join(out))
            self._stream.flush()
            self._drawn = len(states)
