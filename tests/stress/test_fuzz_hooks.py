"""Fuzzed hook input: arbitrary JSON, wrong types, huge strings, NUL bytes, lone surrogates, broken JSON and
odd transcript paths (a FIFO, a directory, a path with a NUL...), fed to `goal hook <event>` in this process
(claude_code.dispatch, the `goal hook` entry) while a goal is bound to the session, so the slow path runs.
Every call exits 0 within its time bound and prints nothing or one JSON answer, no exception it did not
expect reaches the safety net, and the goal file stays valid. The transcript paths that can only be read
for ever (/dev/zero, /dev/urandom, a huge sparse file) are met by real hook processes, bounded in memory."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from goal_convergence.agents.claude_code import dispatch, hooks
from goal_convergence.agents.claude_code.fast import EVENTS
from goal_convergence.goals import creation, moves, specs
from goal_convergence.storage.store import Store
from goal_convergence.system import index
from tests.conftest import REPO

from . import invariants as inv
from .report import assert_clean
from .scale import sized

pytestmark = pytest.mark.stress

SESSION = "s-fuzz"
PAYLOADS = sized(1000, 150)
BOUND = 10.0  # seconds a hook may take in this process (its checks are one `false`)
HANGS_TO_GIVE_UP = 3  # each costs BOUND seconds: past a few, the attack has made its point
FIELDS = ("session_id", "transcript_path", "cwd", "hook_event_name", "stop_hook_active", "last_assistant_message",
          "source", "command_name", "command_args", "reason", "permission_mode")


class Hang(BaseException):
    """Raised by the alarm in a hook call that ran past its bound (the hooks' safety net catches it too)."""


@contextlib.contextmanager
def time_bound(seconds: float):
    def ring(signum, frame):
        raise Hang(f"ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def hook_in_process(event: str, data: bytes) -> tuple[int | None, str, float]:
    """`goal hook EVENT` with ``data`` on stdin, in this process: exit code, stdout, seconds."""
    out, saved = io.StringIO(), sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    started, code = time.monotonic(), None
    try:
        with contextlib.redirect_stdout(out):
            try:
                with time_bound(BOUND):
                    code = dispatch.main([event])
            except Hang:
                pass
    finally:
        sys.stdin = saved
    return code, out.getvalue(), time.monotonic() - started


@pytest.fixture
def bound(git_repo, gc_home):
    """A goal bound to SESSION whose one check fails, made again whenever the fuzz ended or paused it."""
    def arm() -> str:
        store = Store()
        summaries = store.summaries()
        active = index.bound_to_session(summaries, SESSION)
        if active:
            return active[0]["goalId"]
        for s in index.bound_to_session(summaries, SESSION, ("paused",)):
            moves.move(store, s["goalId"], "abandon")
        spec = specs.GoalSpec(objective="survive the fuzz", project=git_repo, checks=["false"],
                              oracle_provider="conditions", max_iterations=1000, stuck_after=1000, session_id=SESSION)
        return creation.new_goal(store, spec).goal_id

    return arm


def transcript_paths(tmp: Path, project: Path) -> list[str]:
    good = tmp / "good.jsonl"
    good.write_text("".join(json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00Z", "message": {
        "id": f"m{n}", "model": "claude-sonnet-5", "usage": {"input_tokens": 10, "output_tokens": 1}}}) + "\n"
        for n in range(3)) + '{"type": "assistant", "message": {"id": ')
    fifo = tmp / "fifo.jsonl"
    os.mkfifo(fifo)
    (tmp / "folder.jsonl").mkdir()
    os.symlink(tmp / "loop-b", tmp / "loop-a")
    os.symlink(tmp / "loop-a", tmp / "loop-b")
    (tmp / "binary.jsonl").write_bytes(bytes(range(256)) * 64)
    (tmp / "surrogates.jsonl").write_bytes(b'{"type": "assistant", "message": {"id": "\\ud800", "model": "\\udfff", '
                                           b'"usage": {"input_tokens": 1e400, "output_tokens": -1}}}\n')
    return [str(good), str(fifo), str(tmp / "folder.jsonl"), str(tmp / "loop-a"), str(tmp / "binary.jsonl"),
            str(tmp / "surrogates.jsonl"), str(tmp / "missing.jsonl"), "relative.jsonl", "", "/dev/null",
            "with\0nul.jsonl", "/" + "x" * 5000, str(project), str(tmp)]


def payloads(paths: list[str], project: Path):
    leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70), st.floats(),
                     st.text(max_size=30), st.sampled_from(["\0", "\ud800", "x" * 300_000, "\0" * 50_000]))
    junk = st.recursive(leaf, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                                                        max_size=4), max_leaves=10)
    def mostly(valid):  # a field of the right type seven times in eight, else anything
        return st.one_of(*[valid] * 7, junk)

    values = {
        "cwd": mostly(st.one_of(st.just(str(project)), st.sampled_from(paths))),
        "hook_event_name": mostly(st.sampled_from(["Stop", "SessionEnd", "SessionStart"])),
        "stop_hook_active": st.one_of(st.booleans(), junk),
        "last_assistant_message": mostly(st.one_of(st.text(), st.sampled_from(["\0", "x" * 300_000]))),
        "source": mostly(st.sampled_from(["startup", "resume", "compact", "clear"])),
        "command_name": mostly(st.sampled_from(["goal-convergence:goal", "goal-convergence:triage", "x"])),
        "command_args": mostly(st.sampled_from(["status", "list", "pause", "resume", "help", "abandon", "check", "",
                                                "status goal-00000000", "resume ../../etc"])),
        "reason": junk, "permission_mode": junk,
    }
    # Mostly the bound session with an odd transcript (the slow path's work), sometimes anything at all.
    likely = {"session_id": mostly(st.just(SESSION)), "transcript_path": mostly(st.sampled_from(paths))}
    doc = st.one_of(st.fixed_dictionaries(likely, optional=values), st.fixed_dictionaries(likely, optional=values),
                    st.fixed_dictionaries({}, optional={**likely, **values})).flatmap(
        lambda d: st.dictionaries(st.text(max_size=10), junk, max_size=3).map(lambda extra: {**extra, **d}))
    return st.one_of(
        doc.map(lambda d: json.dumps(d).encode()),
        doc.map(lambda d: json.dumps(d).encode()),
        doc.map(lambda d: json.dumps(d).encode()),
        st.tuples(doc, st.integers(min_value=1, max_value=200)).map(lambda t: json.dumps(t[0]).encode()[: t[1]]),
        junk.map(lambda j: json.dumps(j).encode()),
        st.binary(max_size=300),
        st.sampled_from([b"", b"null", b"[]", b"{}", b"[" * 100_000, b'{"a":' * 50_000, b"\xff\xfe" * 10,
                         b'{"session_id": "' + SESSION.encode() + b'", "session_id": 7}']),
    )


def test_fuzzed_hook_input_never_crashes_hangs_or_breaks_the_goal(bound, git_repo, gc_home, tmp_path, tally):
    row = tally("fuzzed hook payloads (hypothesis)")
    paths = transcript_paths(tmp_path, git_repo)
    hangs: list[str] = []

    @settings(max_examples=PAYLOADS, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(event=st.sampled_from([*EVENTS, "stop", "stop", "stop", "session-end", "bogus"]),
           data=payloads(paths, git_repo))
    def one(event: str, data: bytes) -> None:
        if len(hangs) >= HANGS_TO_GIVE_UP:
            return
        goal_id = bound()
        with row.attempt(f"{event} {data[:150]!r}"):
            code, out, seconds = hook_in_process(event, data)
            if seconds >= BOUND:
                hangs.append(event)
            inv.check_hook_answer(code, out, seconds, BOUND)
            quarantined = sorted(os.listdir(gc_home / "quarantine")) if (gc_home / "quarantine").is_dir() else []
            assert not quarantined, f"a goal file went bad: {quarantined}"
            inv.check_ledger(inv.goal_doc(gc_home, goal_id))

    one()
    assert_clean(row)


# Read for ever, or a GB at a time: in a process of their own, with a memory limit and a time bound.
ENDLESS = ["/dev/zero", "/dev/urandom", "sparse", "fifo", "folder", "nul"]
HOOK_PROCESS_BOUND = 15.0


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("event", ["stop", "session-end"][:sized(2, 1)])
def test_endless_transcripts_are_bounded_and_the_iteration_still_runs(event, bound, git_repo, gc_home, tmp_path,
                                                                      tally):
    row = tally("odd transcript paths (real hook processes)")
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 30)
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    where = {"sparse": str(sparse), "fifo": str(tmp_path / "fifo.jsonl"), "folder": str(tmp_path / "folder.jsonl"),
             "nul": str(tmp_path / "a\0b.jsonl")}
    for name in ENDLESS:
        goal_id = bound()
        before = inv.goal_doc(gc_home, goal_id)
        payload = {"session_id": SESSION, "transcript_path": where.get(name, name), "cwd": str(git_repo),
                   "hook_event_name": event, "last_assistant_message": "done"}
        with row.attempt(f"{event} with transcript_path {name}"):
            started = time.monotonic()
            try:
                done = subprocess.run([sys.executable, "-m", "goal_convergence", "hook", event],
                                      input=json.dumps(payload).encode(), capture_output=True,
                                      timeout=HOOK_PROCESS_BOUND, preexec_fn=_limit_memory,
                                      env={**os.environ, "PYTHONPATH": str(REPO)})
            except subprocess.TimeoutExpired:
                raise AssertionError(f"the hook ran past {HOOK_PROCESS_BOUND:g} s") from None
            answer = inv.check_hook_answer(done.returncode, done.stdout.decode("utf-8", "replace"),
                                           time.monotonic() - started, HOOK_PROCESS_BOUND)
            after = inv.goal_doc(gc_home, goal_id)
            inv.check_ledger(after)
            if event == "stop":  # a bad path is reported, and the iteration runs all the same
                assert after["spent"]["iterations"] == before["spent"]["iterations"] + 1, \
                    f"no iteration ran; the hook answered {answer}"
                assert hooks.feedback(answer), answer  # the session carries on
    assert_clean(row)
