"""Child processes, with real shells and real processes: groups, timeouts, cancels, interrupts, capture."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from goal_convergence.errors import GoalConvergenceError
from goal_convergence.system.process import (HEAD_BYTES, TAIL_BYTES, Capture, missing_command, run, run_command, shell,
                                             user_shell)
from tests.checks.test_conditions import gone_by, wait_for_file

PY = shlex.quote(sys.executable)


class Recorder:
    """A consumer that keeps every read and whether the stream was closed."""

    def __init__(self) -> None:
        self.reads: list[bytes] = []
        self.closed = False

    def feed(self, chunk: bytes) -> None:
        self.reads.append(chunk)

    def close(self) -> None:
        self.closed = True


def test_the_users_shell_is_used_when_it_can_run(monkeypatch, tmp_path):
    monkeypatch.setenv("SHELL", "/bin/bash")
    assert user_shell() == "/bin/bash"
    assert run_command("echo ${BASH_VERSION:+bash}", tmp_path).head == "bash\n"
    monkeypatch.setenv("SHELL", str(tmp_path / "no-such-shell"))
    assert user_shell() == "/bin/sh"
    monkeypatch.delenv("SHELL")
    assert user_shell() == "/bin/sh"
    assert shell("true") == ["/bin/sh", "-c", "true"]


def test_run_command_for_makers_passes_env_and_keeps_the_last_output(tmp_path):
    env = {**os.environ, "GOAL_HINT": "fix it"}
    result = run_command("echo start; echo hint=$GOAL_HINT; exit 3", tmp_path, env=env)
    assert (result.exit_code, result.timed_out, result.output_bytes) == (3, False, 18)
    assert result.tail == result.head == "start\nhint=fix it\n"
    long = run_command(f"{PY} -c \"print('x' * 20000); print('the end')\"", tmp_path)
    assert len(long.head) == HEAD_BYTES and long.tail.endswith("x\nthe end\n") and len(long.tail) <= TAIL_BYTES
    slow = run_command("sleep 30", tmp_path, timeout=0.3)
    assert slow.timed_out and slow.duration_seconds < 2.5


def test_run_command_in_a_missing_folder_says_what_to_do(tmp_path):
    with pytest.raises(GoalConvergenceError, match="check that the folder exists"):
        run_command("true", tmp_path / "missing")


def test_the_consumers_get_every_byte_in_order_and_the_end(tmp_path):
    recorder = Recorder()
    capture = Capture([recorder])
    done = run(shell(f"{PY} -c \"import sys; [print(i) for i in range(100000)]\""), tmp_path, capture)
    assert (done.code, done.timed_out, done.cancelled) == (0, False, False)
    assert b"".join(recorder.reads) == "".join(f"{i}\n" for i in range(100000)).encode()
    assert recorder.closed and capture.total == len(b"".join(recorder.reads))
    assert len(capture.head) == HEAD_BYTES and capture.tail_text().endswith("99998\n99999\n")


def test_a_capture_keeps_its_head_and_tail_bounded():
    capture = Capture(head=4, tail=6)
    for piece in (b"ab", b"cdef", b"ghijklmnop", b"q"):
        capture.feed(piece)
    assert (bytes(capture.head), bytes(capture.tail), capture.total) == (b"abcd", b"lmnopq", 17)
    assert capture.last_text() == "lmnopq"
    short = Capture(head=4, tail=6)
    short.feed(b"abcdef")
    assert (short.head_text(), short.tail_text(), short.last_text()) == ("abcd", "ef", "abcdef")


def test_the_tail_drops_a_character_its_cut_went_through():
    capture = Capture(head=0, tail=4)
    capture.feed("xé✓".encode())  # é is 2 bytes, ✓ 3: the last 4 bytes start inside é
    assert capture.tail_text() == "✓"


def test_stderr_apart_and_input_on_stdin(tmp_path):
    out, err = Capture(), Capture()
    script = "import sys; data = sys.stdin.read(); print(data.upper()); print('warned', file=sys.stderr)"
    done = run([sys.executable, "-c", script], tmp_path, out, err=err, input=b"hello")
    assert done.code == 0
    assert (out.head_text(), err.head_text()) == ("HELLO\n", "warned\n")


def test_without_input_stdin_is_empty(tmp_path):
    out = Capture()
    run(shell("cat; echo end"), tmp_path, out)
    assert out.head_text() == "end\n"


def test_output_to_a_file_leaves_background_children_running(tmp_path):
    with tempfile.TemporaryFile() as file:
        start = time.monotonic()
        done = run(shell("sleep 30 & echo $! > bg.pid; echo said"), tmp_path, file)
        assert done.code == 0 and time.monotonic() - start < 2
        pid = int(wait_for_file(tmp_path / "bg.pid"))
        try:
            assert not gone_by(pid, time.monotonic() + 0.3)
        finally:
            os.kill(pid, 9)
        file.seek(0)
        assert file.read() == b"said\n"


def test_output_to_a_file_still_times_out_with_the_whole_group(tmp_path):
    with tempfile.TemporaryFile() as file:
        start = time.monotonic()
        done = run(shell("sleep 60 & echo $! > bg.pid; sleep 60"), tmp_path, file, timeout=0.5)
        assert done.timed_out and time.monotonic() - start < 3
        assert gone_by(int(wait_for_file(tmp_path / "bg.pid")), start + 3)


def test_a_cancel_stops_the_group(tmp_path):
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    done = run(shell("echo $$ > shell.pid; sleep 60"), tmp_path, Capture(), cancel=cancel)
    assert (done.cancelled, done.timed_out) == (True, False)
    assert gone_by(int(wait_for_file(tmp_path / "shell.pid")), start + 3)


def test_an_interrupt_while_reading_stops_the_group_before_it_goes_on(tmp_path):
    class Interrupting(Recorder):
        def feed(self, chunk: bytes) -> None:
            raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run(shell("echo $$ > shell.pid; sleep 60 & echo $! > bg.pid; echo ready; sleep 60"), tmp_path,
            Capture([Interrupting()]))
    assert time.monotonic() - start < 3
    for name in ("shell.pid", "bg.pid"):
        assert gone_by(int(wait_for_file(tmp_path / name)), start + 3), name


def test_a_program_that_cannot_start_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        run([str(tmp_path / "no-such-program")], tmp_path, Capture())


@pytest.mark.parametrize("said, name", [
    ("sh: 1: frobnicate: not found", "frobnicate"),
    ("bash: line 1: frobnicate: command not found", "frobnicate"),
    ("zsh:1: command not found: frobnicate", "frobnicate"),
    ("", "frobnicate"),  # nothing said: the command line's first word
])
def test_the_missing_command_is_named(said, name):
    assert missing_command(said, "frobnicate --all") == name


def test_a_file_as_the_working_folder_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        run(shell("true"), Path(tmp_path / "file"), Capture())


_DEATH_SIGNAL = ("import ctypes; found = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(found)); "
                 "print(found.value)")  # PR_GET_PDEATHSIG: the signal the child gets when its parent dies


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("with_us, signal_number", [(True, 9), (False, 0)])
def test_a_child_dies_with_us_unless_asked_to_end_on_its_own(tmp_path, with_us, signal_number):
    """Children die with us by default (a maker, a check); a git call is left to end on its own, started
    without a copy of this process (no code of ours between fork and exec)."""
    out = Capture()
    assert run([sys.executable, "-c", _DEATH_SIGNAL], tmp_path, out, with_us=with_us).code == 0
    assert out.last_text().strip() == str(signal_number)
