"""Child processes: the one place that starts them (conditions, makers, notify commands).

A child runs in its own process group (its own session), with the given folder as cwd and no
stdin unless it is given input. Its output is read as it comes and never held whole: a
``Capture`` keeps the first and last few KB and the byte count, and hands every read to its
consumers (the scanners that find failures, coverage and test counts). On a timeout, a cancel or
an interrupt the whole group gets SIGTERM, then SIGKILL, so grandchildren go too (processes that
start their own session escape any group and are out of reach).

If we are killed outright (SIGKILL), on Linux the kernel kills each child with us (PR_SET_PDEATHSIG);
its own children are out of that reach, so every live child's group is handed to the watchers
``watching`` installs (`goal run`: a watchdog that reaps them the moment the run dies, and a record the
next run reaps from if the watchdog died too; orphans.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from ..errors import GoalConvergenceError
from . import orphans
from .lines import decode_output

HEAD_BYTES = 4096
TAIL_BYTES = 8192

_READ_BYTES = 1 << 20
# Between SIGTERM and SIGKILL: enough for a test runner to flush, short enough that everything is
# gone well within timeout + 2 s.
_TERM_GRACE = 1.0
# After SIGKILL, reading stops this soon even if a process outside the group holds the pipe.
_DRAIN = 0.3
# When the child has exited but a background child of its own still holds the output open, how
# long we wait for it before ending the group (a test server left running must not hang the check).
_LINGER = 1.0
# Without a pidfd, how often the child's exit is looked for.
_TICK = 0.02
_CANCEL_TICK = 0.1


class Consumer(Protocol):
    """Reads a stream as it comes: each read as it was cut (``feed``), then its end (``close``)."""

    def feed(self, chunk: bytes) -> None: ...

    def close(self) -> None: ...


# ---- children that die with us, and the groups of the live ones ------------------------------------

_PR_SET_PDEATHSIG = 1
Groups = list[tuple[int, int | None]]  # (process group id, its leader's start time), see orphans.py
_live: dict[int, int | None] = {}
_live_lock = threading.RLock()
_watchers: list[Callable[[Groups], None]] = []


def _prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
    except (OSError, AttributeError):
        return None


PRCTL = _prctl()  # looked up here: the child between fork and exec must not load libraries


def _die_with_parent(parent: int, wanted: bool) -> Callable[[], None] | None:
    if PRCTL is None or not wanted:
        return None

    def preexec() -> None:
        PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the request was made
            os._exit(1)

    return preexec


@contextlib.contextmanager
def watching(watcher: Callable[[Groups], None]) -> Iterator[None]:
    """Hand ``watcher`` the groups of the live children whenever a child starts or ends (in order:
    under a lock, so a newer list is never overwritten by an older one)."""
    with _live_lock:
        _watchers.append(watcher)
    try:
        yield
    finally:
        with _live_lock:
            _watchers.remove(watcher)


@contextlib.contextmanager
def held() -> Iterator[set[int]]:
    """The process groups of the live children; no child starts or ends while the block runs."""
    with _live_lock:
        yield set(_live)


def _tell(pid: int, start: int | None, *, ended: bool) -> None:
    with _live_lock:
        if ended:
            _live.pop(pid, None)
        else:
            _live[pid] = start
        groups = list(_live.items())
        for watcher in _watchers:
            watcher(groups)


def user_shell() -> str:
    shell = os.environ.get("SHELL")
    if shell and os.path.isfile(shell) and os.access(shell, os.X_OK):
        return shell
    return "/bin/sh"


def shell(command: str) -> list[str]:
    """The program and arguments that run the command line ``command`` in the user's shell."""
    return [user_shell(), "-c", command]


class Capture:
    """The bounded record of one output stream, each read also handed to the consumers."""

    def __init__(self, consumers: Sequence[Consumer] = (), *, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.head = bytearray()  # the first ``head`` bytes
        self.tail = bytearray()  # the last ``tail`` bytes after the head
        self.total = 0
        self._head, self._tail = head, tail
        self._consumers = consumers

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        rest = chunk
        if len(self.head) < self._head:
            room = self._head - len(self.head)
            self.head += chunk[:room]
            rest = chunk[room:]
        if len(rest) >= self._tail:
            self.tail = bytearray(rest[len(rest) - self._tail :])
        elif rest:
            self.tail += rest
            del self.tail[: -self._tail]
        for consumer in self._consumers:
            consumer.feed(chunk)

    def close(self) -> None:
        for consumer in self._consumers:
            consumer.close()

    def head_text(self) -> str:
        return decode_output(bytes(self.head))

    def tail_text(self) -> str:
        """The output after the head, its last ``tail`` bytes at most."""
        return _decode_tail(bytes(self.tail))

    def last_text(self) -> str:
        """The last ``tail`` bytes of the output, wherever the head ends."""
        if self.total <= self._head + self._tail:
            return _decode_tail((bytes(self.head) + bytes(self.tail))[-self._tail :])
        return self.tail_text()


def _decode_tail(tail: bytes) -> str:
    # The cut may fall inside a UTF-8 sequence: drop its orphaned continuation bytes.
    skip = 0
    while skip < min(3, len(tail)) and 0x80 <= tail[skip] < 0xC0:
        skip += 1
    return decode_output(tail[skip:])


class _Child:
    """A running child: its output pipes and its exit, watched together."""

    def __init__(self, proc: subprocess.Popen[bytes], captures: Mapping[int, Capture]) -> None:
        self.proc = proc
        self.exited_at: float | None = None
        self._open = dict(captures)  # output pipes not at their end yet, by fd
        self._captures = list(captures.values())
        self._poller = select.poll()
        for fd in self._open:
            os.set_blocking(fd, False)
            with contextlib.suppress(AttributeError, OSError):
                # Fewer, larger reads: big outputs cost less Python time (Linux only; best effort).
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _READ_BYTES)
            self._poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(proc.pid)
            self._poller.register(self._pidfd, select.POLLIN)

    @property
    def finished(self) -> bool:
        return not self._open and self.exited_at is not None

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
                if fd in self._open:
                    self._read(fd)
                else:
                    self._poller.unregister(fd)  # a pidfd stays readable once the process ended
            if self.exited_at is None and self._leader_exited():
                self.exited_at = time.monotonic()

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, _READ_BYTES)
        except BlockingIOError:
            return
        if chunk:
            self._open[fd].feed(chunk)
        else:
            del self._open[fd]
            self._poller.unregister(fd)

    def _leader_exited(self) -> bool:
        # WNOWAIT leaves the child a zombie, so its pid (the group id) cannot be reused before we
        # are done signalling the group.
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # reaped behind our back (SIGCHLD ignored by the host program)
            return True

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop_group(self) -> None:
        try:
            self.signal_group(signal.SIGTERM)
            self.pump(time.monotonic() + _TERM_GRACE)
        finally:
            # Unconditional: a grandchild may ignore SIGTERM with its output closed or redirected.
            self.signal_group(signal.SIGKILL)
        self.pump(time.monotonic() + _DRAIN)

    def close(self) -> int | None:
        for capture in self._captures:
            capture.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        try:
            return self.proc.wait(timeout=_DRAIN if self.exited_at is None else None)
        except subprocess.TimeoutExpired:
            return None


@dataclass(frozen=True)
class Exit:
    """How a child ended."""

    code: int | None  # None when it had to be killed and still had not exited
    timed_out: bool
    cancelled: bool
    seconds: float


def run(args: Sequence[str], cwd: Path, out: Capture | BinaryIO, *, err: Capture | None = None,
        input: bytes | None = None, timeout: float | None = None, cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None, with_us: bool = True) -> Exit:
    """Run ``args`` to its end, its timeout, a cancel or an interrupt, its output read into ``out``.

    ``out`` is a Capture, or a file: then the child is done when it exits, and background children
    of its own that still write there are left running. stderr goes to ``err``, else with stdout.
    ``input`` is the child's stdin (none by default). Raises OSError when it cannot be started. ``with_us``
    False: not killed when we die (which takes a full fork, 3 ms more a child), for a git call that ends soon."""
    start = time.monotonic()
    piped = isinstance(out, Capture)
    with tempfile.TemporaryFile() if input is not None else contextlib.nullcontext() as stdin:
        if stdin is not None:
            # A file, not a pipe: a child that never reads its input cannot block us.
            stdin.write(input)
            stdin.seek(0)
        with _live_lock:  # recorded as it starts: a hunt for strays (subreaper.py) never takes it for one
            proc = subprocess.Popen(list(args), cwd=cwd, env=env, stdin=subprocess.DEVNULL if stdin is None else stdin,
                                    stdout=subprocess.PIPE if piped else out,
                                    stderr=subprocess.STDOUT if err is None else subprocess.PIPE,
                                    start_new_session=True, preexec_fn=_die_with_parent(os.getpid(), with_us))
            _tell(proc.pid, orphans.started(proc.pid), ended=False)
    captures: dict[int, Capture] = {}
    if piped:
        captures[proc.stdout.fileno()] = out  # type: ignore[union-attr]
    if err is not None:
        captures[proc.stderr.fileno()] = err  # type: ignore[union-attr]
    child = _Child(proc, captures)
    try:
        child.pump(start + (math.inf if timeout is None else timeout), cancel, linger=_LINGER)
        cancelled = cancel is not None and cancel.is_set() and child.exited_at is None
        timed_out = child.exited_at is None and not cancelled
        if not child.finished:
            child.stop_group()
    except BaseException:
        # Ctrl-C reaches only this process: the child runs in a session of its own.
        child.stop_group()
        raise
    finally:
        code = child.close()
        _tell(proc.pid, None, ended=True)
    return Exit(code, timed_out, cancelled, time.monotonic() - start)


def detached(args: Sequence[str], input: bytes, env: Mapping[str, str], keep: int | None = None) -> None:
    """Start a child that outlives us, not waited for: its own session (a kill of our group misses it), not
    made to die with us, its input a file and its output nowhere (a pipe of ours may be gone before it is
    done). It inherits the descriptor ``keep`` (a lock it holds while it lives)."""
    with tempfile.TemporaryFile() as stdin:
        stdin.write(input)
        stdin.seek(0)
        subprocess.Popen(list(args), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                         start_new_session=True, pass_fds=() if keep is None else (keep,))


@dataclass(frozen=True)
class Output:
    """A child's stdout (at most ``limit`` bytes of it) and the end of its stderr."""

    exit: Exit
    stdout: str
    stderr: str


def run_read(args: Sequence[str], cwd: Path, *, input: bytes | None = None, timeout: float | None = None,
             env: Mapping[str, str] | None = None, limit: int = 1 << 20) -> Output:
    """``run`` for a child whose whole answer is read (a judge's verdict): stdout through a file, so
    a big answer costs no memory past ``limit``. Raises OSError when it cannot be started."""
    err = Capture()
    with tempfile.TemporaryFile() as out:
        done = run(args, cwd, out, err=err, input=input, timeout=timeout, env=env)
        out.seek(0)
        stdout = decode_output(out.read(limit))
    return Output(done, stdout, err.last_text())


# dash and bash name the command before "not found", zsh after it (after its line number: "zsh:1: ").
_NOT_FOUND = re.compile(r"([^\s:]+): (?:command )?not found(?!:)|command not found: (\S+)")


def missing_command(output: str, command: str) -> str:
    """The command a shell that exited 127 did not find, from what it said."""
    found = _NOT_FOUND.findall(output)
    if found:
        return next(name for name in found[-1] if name)
    return command.split()[0] if command.split() else command


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
                env: Mapping[str, str] | None = None, cancel: threading.Event | None = None) -> CommandResult:
    """Run a shell command line as conditions run (own process group, no stdin, bounded output).

    ``timeout`` None waits for as long as the command runs; ``cancel`` set ends its group early. Makers use it."""
    capture = Capture()
    try:
        done = run(shell(command), Path(root), capture, timeout=timeout, env=env, cancel=cancel)
    except OSError as e:
        raise GoalConvergenceError(f"could not start {command!r} in {root} ({e}); check that the folder exists "
                                   "and is readable") from e
    return CommandResult(done.code, done.timed_out, round(done.seconds, 3), capture.total, capture.head_text(),
                         capture.last_text())
