"""The invariants every attack checks, in one place. A broken one raises AssertionError; one that lost or
double-counted spend or iterations, leaked data or ran a planted program raises ``Lost`` (the table's
"lost" column)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from goal_convergence.models import Goal
from goal_convergence.system import seal

# The fields of a hook's answer that Claude Code reads; a hook prints one JSON object of them, or nothing.
HOOK_FIELDS = {"decision", "reason", "systemMessage", "hookSpecificOutput", "continue", "stopReason",
               "suppressOutput"}
# What fast.failure_line says when an exception no one expected reached the hooks' safety net.
CRASH = "hook failed ("
SPEND = ("iterations", "activeSeconds", "makerDollars", "oracleDollars", "makerTokens", "oracleTokens")


class Lost(AssertionError):
    """Spend or iterations lost or counted twice, data read from outside the project, or a planted program run."""


def goal_doc(home: Path, goal_id: str) -> dict:
    """The goal file, which must exist, hold its seal and validate against the model (the schema's source)."""
    path = Path(home) / "goals" / f"{goal_id}.json"
    assert path.is_file(), f"the goal file {path} is gone (quarantined: {sorted(os.listdir(Path(home) / 'quarantine')) if (Path(home) / 'quarantine').is_dir() else 'none'})"
    raw = path.read_bytes()
    doc = json.loads(raw)
    problem = seal.goal_problem(Path(home), goal_id, raw.decode(), doc)  # takes the seal out of doc
    assert problem is None, f"the goal file's seal does not hold: {problem}"
    try:
        Goal.from_doc(doc)
    except ValueError as exc:
        raise AssertionError(f"the goal file is not valid: {str(exc)[:300]}") from None
    return doc


def check_ledger(doc: dict) -> None:
    """No iteration lost or counted twice: history 1..n, spent.iterations n, a pending iteration n+1."""
    numbers = [it["number"] for it in doc["history"]]
    if numbers != list(range(1, len(numbers) + 1)):
        raise Lost(f"history numbers are not 1..n: {numbers}")
    if doc["spent"]["iterations"] != len(numbers):
        raise Lost(f"spent.iterations is {doc['spent']['iterations']} for {len(numbers)} iterations in history")
    pending = doc.get("pending")
    if pending is not None and pending["number"] != len(numbers) + 1:
        raise Lost(f"the pending iteration is {pending['number']} after {len(numbers)} in history")


def check_never_decreases(before: dict | None, after: dict) -> None:
    """Counters only go up, and the iterations already in history stay as they were."""
    if before is None:
        return
    went_down = [f"{k} {before['spent'][k]} -> {after['spent'].get(k)}" for k in SPEND
                 if after["spent"].get(k, 0) < before["spent"].get(k, 0)]
    if went_down:
        raise Lost("spend went down: " + ", ".join(went_down))
    kept = [(it["number"], it["startedAt"]) for it in after["history"][:len(before["history"])]]
    if kept != [(it["number"], it["startedAt"]) for it in before["history"]]:
        raise Lost("iterations already in history changed or went away")


class ActiveTime:
    """Active time is at most the time some `goal run` was alive (``alive``, added up by the test): the
    downtime between a kill and the next run is never charged. Each overcharge is reported once, at the
    attempt that made it, not again at every later one."""

    def __init__(self, slack: float = 1.0) -> None:
        self.alive, self.slack, self._reported = 0.0, slack, 0.0

    def check(self, doc: dict) -> None:
        over = doc["spent"]["activeSeconds"] - self.alive
        if over > self._reported + self.slack:
            newly, self._reported = over - self._reported, over
            raise Lost(f"active time {doc['spent']['activeSeconds']:.1f} s is {newly:.1f} s more than the runs were "
                       f"alive since the last check (the downtime between a kill and the next run was charged)")


def processes_with(token: str) -> list[int]:
    """Live processes (not zombies) whose environment carries ``STRESS_TOKEN=token``."""
    needle = f"STRESS_TOKEN={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


def reap_survivors(token: str, grace: float = 3.0) -> list[str]:
    """The processes started under ``token`` still alive ``grace`` seconds after their runner died. They are
    killed here, by pid, so that one failure does not spill into the next attempt."""
    deadline = time.monotonic() + grace
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    described = [_cmdline(pid) for pid in left]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return described


def check_no_children(survivors: list[str]) -> None:
    """No child process outlives its `goal run` (``survivors``: what reap_survivors found)."""
    assert not survivors, f"{len(survivors)} child process(es) outlived their `goal run`: {survivors}"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:120]
    except OSError:
        return str(pid)


def check_hook_answer(code: int | None, out: str, seconds: float = 0.0, bound: float = float("inf")) -> dict:
    """A hook exits 0 within ``bound`` seconds and prints nothing or one JSON object of Claude Code's
    fields, and no exception it did not expect reached its safety net. Returns the answer."""
    assert seconds < bound, f"the hook took {seconds:.1f} s (bound {bound:g} s)"
    assert code == 0, f"the hook exited {code}"
    if not out.strip():
        return {}
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"the hook printed {len(lines)} lines: {out[:300]!r}"
    try:
        answer = json.loads(lines[0])
    except ValueError:
        raise AssertionError(f"the hook printed something that is not JSON: {out[:300]!r}") from None
    assert isinstance(answer, dict), f"the hook's answer is not a JSON object: {out[:300]!r}"
    assert set(answer) <= HOOK_FIELDS, f"the hook answered fields Claude Code does not read: {sorted(answer)}"
    assert answer.get("decision") in (None, "block"), f"the hook answered decision {answer.get('decision')!r}"
    message = str(answer.get("systemMessage", ""))
    assert CRASH not in message, f"the hook crashed: {message[:400]}"
    return answer


def check_no_leak(text: str, secrets: list[str], ran: Path) -> None:
    """Nothing from outside the project (or from a secrets file) in ``text``, and no planted program ran
    (each leaves a file in ``ran``; they are removed here, so the next attempt starts clean)."""
    leaked = [s for s in secrets if s in text]
    programs = sorted(os.listdir(ran))
    for name in programs:
        os.remove(ran / name)
    if leaked or programs:
        raise Lost(f"leaked {leaked}, planted programs ran: {programs}; the answer was {text[:300]!r}")
