"""The condition runner, with real shells and real processes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from goal_convergence.checks.conditions import check_goal_conditions, run_condition, run_conditions
from goal_convergence.checks.extract import PASS_FINGERPRINT, FailureScanner
from goal_convergence.errors import GoalConvergenceError, InvalidInput
from goal_convergence.models import Budget, Goal, OracleConfig, StoppingCondition, now_iso
from goal_convergence.system.process import HEAD_BYTES, TAIL_BYTES

SAMPLES = Path(__file__).parents[1] / "samples"
PY = shlex.quote(sys.executable)


def cond(command: str, type: str = "test_pass", **kw) -> StoppingCondition:
    return StoppingCondition(type=type, command=command, **kw)


def gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie waiting for a reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def gone_by(pid: int, deadline: float) -> bool:
    """True when the process is gone by ``deadline`` (a SIGKILLed process takes a moment to exit)."""
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return gone(pid)


def wait_for_file(path: Path, timeout: float = 5.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_a_passing_command(tmp_path):
    e = run_condition(cond("echo hello; echo world"), 3, tmp_path)
    assert (e.index, e.passed, e.exit_code, e.timed_out, e.error) == (3, True, 0, False, None)
    assert e.output_head == "hello\nworld\n"
    assert e.output_tail == ""
    assert e.output_bytes == 12
    assert e.failure_lines == []
    assert e.fingerprint == PASS_FINGERPRINT


def test_a_failing_pytest_run_gives_its_failures(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_ok():\n    pass\n\ndef test_bad():\n    assert 1 + 1 == 3\n")
    command = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PY} -m pytest -q -p no:cacheprovider test_x.py"
    e = run_condition(cond(command), 0, tmp_path)
    assert not e.passed
    assert e.exit_code == 1
    assert e.failure_lines[0] == "FAILED test_x.py::test_bad - assert (1 + 1) == 3"
    assert any(line.startswith("1 failed, 1 passed in ") for line in e.failure_lines)
    assert e.fingerprint not in ("", PASS_FINGERPRINT)


def test_a_failure_no_rule_recognises_keeps_the_last_lines(tmp_path):
    e = run_condition(cond("echo step one; echo 3 items left; exit 4"), 0, tmp_path)
    assert (e.passed, e.exit_code) == (False, 4)
    assert e.failure_lines == ["step one", "3 items left"]


def test_the_shell_runs_in_the_root_with_no_stdin_in_its_own_process_group(tmp_path):
    script = "import os, sys; print(os.getcwd()); print(os.getpgrp()); print(repr(sys.stdin.read()))"
    e = run_condition(cond(f"{PY} -c {shlex.quote(script)}", timeout_seconds=10), 0, tmp_path)
    cwd, pgid, stdin = e.output_head.splitlines()
    assert Path(cwd).resolve() == tmp_path.resolve()
    assert int(pgid) != os.getpgrp()
    assert stdin == "''"
    assert e.duration_seconds < 5


def test_the_users_shell_is_used_when_it_can_run(monkeypatch, tmp_path):
    monkeypatch.setenv("SHELL", "/bin/bash")
    assert run_condition(cond("echo ${BASH_VERSION:+bash}"), 0, tmp_path).output_head == "bash\n"
    monkeypatch.setenv("SHELL", str(tmp_path / "no-such-shell"))
    assert run_condition(cond("echo fine"), 0, tmp_path).passed


def test_all_conditions_run_at_once_and_come_back_in_index_order(tmp_path):
    conditions = [cond("sleep 0.6; echo a"), cond("sleep 0.6; exit 1"), cond("sleep 0.6; echo c")]
    start = time.monotonic()
    evidence = run_conditions(conditions, tmp_path)
    assert time.monotonic() - start < 1.5
    assert [e.index for e in evidence] == [0, 1, 2]
    assert [e.passed for e in evidence] == [True, False, True]
    assert [e.output_head for e in evidence] == ["a\n", "", "c\n"]


def test_only_some_indexes(tmp_path):
    conditions = [cond("echo 0"), cond("exit 1"), cond("echo 2")]
    evidence = run_conditions(conditions, tmp_path, only=[2, 0])
    assert [(e.index, e.command) for e in evidence] == [(0, "echo 0"), (2, "echo 2")]
    with pytest.raises(InvalidInput, match="there is no condition 3: this goal has 3, numbered 0 to 2"):
        run_conditions(conditions, tmp_path, only=[3])


def test_a_missing_root_is_an_error_that_says_what_to_do(tmp_path):
    with pytest.raises(GoalConvergenceError, match=r"project root .* is not a folder; restore it"):
        run_conditions([cond("true")], tmp_path / "gone")


def test_timeout_kills_the_group_including_a_grandchild_that_ignores_term(tmp_path):
    command = ("sh -c 'trap \"\" TERM; echo $$ > grandchild.pid; exec sleep 60' & "
               "echo started; wait")
    start = time.monotonic()
    e = run_condition(cond(command, timeout_seconds=1), 0, tmp_path)
    elapsed = time.monotonic() - start
    pid = int(wait_for_file(tmp_path / "grandchild.pid"))
    assert e.timed_out and not e.passed
    assert "timed out after 1s; raise the condition's timeoutSeconds" in e.error
    assert elapsed <= 1 + 2
    assert gone_by(pid, start + 1 + 2)
    assert e.output_head == "started\n"


def test_the_default_timeout_applies_when_the_condition_has_none(tmp_path):
    e = run_condition(cond("sleep 30"), 0, tmp_path, default_timeout=0.3)
    assert e.timed_out
    assert e.duration_seconds < 2.5


def test_a_background_child_holding_the_output_does_not_hang_the_check(tmp_path):
    start = time.monotonic()
    e = run_condition(cond("sleep 60 & echo $! > bg.pid; echo done"), 0, tmp_path)
    assert e.passed and not e.timed_out
    assert e.duration_seconds < 3
    assert gone_by(int((tmp_path / "bg.pid").read_text()), start + 3)


def test_huge_output_is_bounded_in_memory_and_in_the_evidence(tmp_path):
    script = textwrap.dedent("""
        import json, resource, sys
        from pathlib import Path
        from goal_convergence.checks.conditions import run_condition
        from goal_convergence.models import StoppingCondition
        command = ("yes 'tests/test_mod.py::test_case PASSED' | head -c 50000000; echo; "
                   "echo 'FAILED tests/test_end.py::test_last - assert 0'; exit 1")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        e = run_condition(StoppingCondition(type="test_pass", command=command), 0, Path(sys.argv[1]))
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(json.dumps({"grown_kb": grown, "evidence": e.dump()}))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    e = report["evidence"]
    assert e["outputBytes"] == 50_000_000 + len("\nFAILED tests/test_end.py::test_last - assert 0\n")
    assert len(e["outputHead"]) <= HEAD_BYTES and len(e["outputTail"]) <= TAIL_BYTES
    assert e["outputTail"].endswith("\nFAILED tests/test_end.py::test_last - assert 0\n")
    assert e["failureLines"] == ["FAILED tests/test_end.py::test_last - assert 0"]
    assert len(json.dumps(e)) < 20_000
    assert report["grown_kb"] < 30_000  # the output alone is 50 MB


def test_binary_and_invalid_utf8_output(tmp_path):
    command = ("head -c 300000 /dev/urandom; "
               r"printf '\nbad \377\376 bytes\000 and caf\303\251\n'; "
               r"printf 'an error here \303\050\n'; exit 2")
    e = run_condition(cond(command), 0, tmp_path)
    assert (e.passed, e.exit_code, e.output_bytes > 300_000) == (False, 2, True)
    text = e.output_head + e.output_tail + "".join(e.failure_lines)
    assert "\x00" not in text
    assert "bad \ufffd\ufffd bytes and café" in e.output_tail
    assert "an error here \ufffd(" in e.failure_lines
    json.dumps(e.dump())


def test_a_command_that_is_not_found(tmp_path):
    e = run_condition(cond("definitely-not-a-command-xyz --flag"), 0, tmp_path)
    assert (e.passed, e.exit_code) == (False, 127)
    assert e.error == "command not found: definitely-not-a-command-xyz; check the condition's command"


def test_a_file_that_is_not_executable(tmp_path):
    (tmp_path / "run.sh").write_text("echo hi\n")
    e = run_condition(cond("./run.sh"), 0, tmp_path)
    assert (e.passed, e.exit_code) == (False, 126)
    assert "not executable" in e.error


def test_same_failures_in_two_real_runs_with_different_timings_give_one_fingerprint(tmp_path):
    (tmp_path / "test_t.py").write_text(textwrap.dedent("""
        import os, random, time

        class Box:
            pass

        def test_slow_box(tmp_path):
            time.sleep(random.uniform(0, 0.3))
            assert Box() == str(tmp_path)

        def test_other():
            assert os.environ.get("WHICH", "a") == "a"
    """))
    command = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PY} -m pytest -p no:cacheprovider test_t.py"
    one, two = run_conditions([cond(command), cond(command)], tmp_path)
    assert one.output_head != two.output_head  # addresses, temp paths and timings differ
    assert "FAILED test_t.py::test_slow_box" in one.failure_lines[0]
    assert one.fingerprint == two.fingerprint
    three = run_condition(cond(f"WHICH=b {command}"), 0, tmp_path)
    assert three.fingerprint != one.fingerprint


def test_a_sample_streamed_through_a_pipe_gives_the_same_lines_as_in_memory(tmp_path):
    sample = SAMPLES / "pytest_fail.txt"
    e = run_condition(cond(f"cat {shlex.quote(str(sample))}; exit 1"), 0, tmp_path)
    scanner = FailureScanner()
    scanner.feed(sample.read_bytes())
    scanner.close()
    assert e.failure_lines == scanner.lines


def test_a_slow_writer_cutting_its_lines_anywhere_gives_the_same_evidence(tmp_path):
    # A writer that flushes mid-line and mid-character, pausing so that each piece is a read of its own.
    data = "".join((SAMPLES / name).read_text() for name in ("jest_fail.txt", "jest_coverage.txt"))
    script = ("import sys, time\n"
              f"data = {data.encode()!r}\n"
              "for i in range(0, len(data), 97):\n"
              "    sys.stdout.buffer.write(data[i:i + 97]); sys.stdout.flush(); time.sleep(0.002)\n"
              "sys.exit(1)\n")
    (tmp_path / "slow.py").write_text(script)
    (tmp_path / "out.txt").write_text(data)
    slow = run_condition(cond(f"{PY} slow.py", "coverage_threshold", threshold=10), 0, tmp_path)
    whole = run_condition(cond("cat out.txt; exit 1", "coverage_threshold", threshold=10), 0, tmp_path)
    assert (slow.failure_lines, slow.coverage, slow.fingerprint) == (whole.failure_lines, 25.0, whole.fingerprint)
    assert "Expected: 90" in slow.failure_lines


# ---- coverage ---------------------------------------------------------------------------------

def coverage_cond(sample: str, threshold: float, **kw) -> StoppingCondition:
    return cond(f"cat {shlex.quote(str(SAMPLES / sample))}", "coverage_threshold", threshold=threshold, **kw)


def test_coverage_at_or_above_the_threshold_passes(tmp_path):
    e = run_condition(coverage_cond("coverage_py.txt", 67), 0, tmp_path)
    assert (e.passed, e.coverage, e.error, e.fingerprint) == (True, 67.0, None, PASS_FINGERPRINT)


def test_coverage_below_the_threshold_fails_and_says_by_how_much(tmp_path):
    e = run_condition(coverage_cond("jest_coverage.txt", 80), 0, tmp_path)
    assert (e.passed, e.coverage) == (False, 25.0)
    assert e.error == "coverage 25% is below the threshold 80%"


def test_unreadable_coverage_is_a_failure_that_suggests_coverage_regex(tmp_path):
    e = run_condition(cond("echo all good", "coverage_threshold", threshold=50), 0, tmp_path)
    assert not e.passed and e.coverage is None
    assert "could not read a coverage figure" in e.error and "coverageRegex" in e.error


def test_coverage_regex(tmp_path):
    e = run_condition(cond("echo 'lines covered: 91.5 percent'", "coverage_threshold", threshold=90,
                           coverage_regex=r"covered: ([\d.]+) percent"), 0, tmp_path)
    assert (e.passed, e.coverage) == (True, 91.5)
    bad = run_condition(cond("echo 1", "coverage_threshold", threshold=90, coverage_regex="(["), 0, tmp_path)
    assert not bad.passed and "coverageRegex" in bad.error and bad.output_bytes == 0


def test_high_coverage_does_not_pass_a_failing_command(tmp_path):
    e = run_condition(cond(f"cat {shlex.quote(str(SAMPLES / 'coverage_py.txt'))}; exit 1", "coverage_threshold",
                           threshold=10), 0, tmp_path)
    assert (e.passed, e.coverage, e.exit_code) == (False, 67.0, 1)


def test_coverage_table_longer_than_the_tail_still_parses(tmp_path):
    script = ("print('File      | % Stmts | % Branch | % Funcs | % Lines |'); "
              "print('All files |   91.2 |   80 |   90 |   88.8 |'); "
              "[print(f' src/m{i}.js |  100 |  100 |  100 |  100 |') for i in range(3000)]")
    e = run_condition(cond(f"{PY} -c {shlex.quote(script)}", "coverage_threshold", threshold=85), 0, tmp_path)
    assert e.output_bytes > HEAD_BYTES + TAIL_BYTES
    assert (e.passed, e.coverage) == (True, 88.8)


# ---- goals, progress and the table -----------------------------------------------------------

def make_goal(root: Path, conditions: list[StoppingCondition]) -> Goal:
    return Goal(goal_id="goal-abcd1234", objective="tests pass", stopping_conditions=conditions,
                budget=Budget(max_iterations=3), oracle=OracleConfig(model="claude-haiku-5-5"),
                project_root=str(root), created_at=now_iso(), updated_at=now_iso())


def test_check_goal_conditions_runs_in_the_project_root(tmp_path):
    (tmp_path / "marker.txt").write_text("here\n")
    evidence = check_goal_conditions(make_goal(tmp_path, [cond("cat marker.txt"), cond("test -f nope.txt")]))
    assert [(e.passed, e.output_head) for e in evidence] == [(True, "here\n"), (False, "")]


def test_progress_reports_running_then_finished(tmp_path):
    seen = []
    run_conditions([cond("sleep 0.4"), cond("exit 1")], tmp_path, on_progress=seen.append)
    assert len(seen) >= 3
    assert seen[0][0][:2] == (0, "sleep 0.4") and seen[0][0][3] is None
    assert [(i, passed) for i, _, _, passed in seen[-1]] == [(0, True), (1, False)]
    assert seen[-1][0][2] >= 0.4


def test_an_interrupt_stops_the_running_conditions_at_once(tmp_path):
    pid = tmp_path / "shell.pid"
    interrupted = []

    def interrupt(states):
        if pid.exists() and pid.read_text().endswith("\n"):  # the shell is running (on a loaded machine, later)
            interrupted.append(time.monotonic())
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_conditions([cond("echo $$ > shell.pid; sleep 60")], tmp_path, on_progress=interrupt)
    assert time.monotonic() - interrupted[0] < 3
    assert gone_by(int(pid.read_text()), interrupted[0] + 3)


# A test runner that counts its runs, fails when told to, and with --cov writes coverage's data file
# where COVERAGE_FILE says (else in the project, as coverage.py does) and prints a TOTAL row.
SUITE = """
import os, pathlib, sys
with open("runs.log", "a") as fh:
    fh.write(" ".join(sys.argv[1:]) + "\\n")
failing = pathlib.Path("FAIL").exists()
print("1 failed" if failing else "3 passed")
if "--cov" in sys.argv:
    pathlib.Path(os.environ.get("COVERAGE_FILE", ".coverage")).write_text("data")
    print("TOTAL    10    2    80%")
sys.exit(1 if failing else 0)
"""


def test_a_coverage_run_that_is_the_test_run_runs_once_and_both_read_it(tmp_path):
    (tmp_path / "suite.py").write_text(SUITE)
    test = f"{PY} suite.py -q"
    conds = [cond(test), cond(f"{test} --cov --cov-report=term", "coverage_threshold", threshold=75)]
    found = run_conditions(conds, tmp_path)
    assert (tmp_path / "runs.log").read_text().splitlines() == ["-q --cov --cov-report=term"]
    assert [(e.index, e.type, e.command, e.passed, e.coverage) for e in found] == [
        (0, "test_pass", test, True, None), (1, "coverage_threshold", conds[1].command, True, 80.0)]
    assert not (tmp_path / ".coverage").exists()  # coverage's data file went to a temp folder
    (tmp_path / "FAIL").write_text("")
    failed = run_conditions(conds, tmp_path)
    assert [e.passed for e in failed] == [False, False] and "1 failed" in failed[0].output_head
    # The test condition alone (a re-check of it) runs its own command; a coverage bar missed fails only coverage.
    (tmp_path / "FAIL").unlink()
    assert run_conditions(conds, tmp_path, only=[0])[0].passed
    assert (tmp_path / "runs.log").read_text().splitlines()[-1] == "-q"
    high = [conds[0], conds[1].model_copy(update={"threshold": 90.0})]
    assert [e.passed for e in run_conditions(high, tmp_path)] == [True, False]


@pytest.mark.parametrize("coverage", ["{test} --cov || true", "{test} --cov; true", "{test}x --cov", "other --cov"])
def test_a_coverage_command_that_is_not_the_test_run_runs_on_its_own(tmp_path, coverage):
    (tmp_path / "suite.py").write_text(SUITE)
    (tmp_path / "FAIL").write_text("")
    test = f"{PY} suite.py"
    conds = [cond(test), cond(coverage.format(test=test), "coverage_threshold", threshold=10)]
    assert not run_conditions(conds, tmp_path)[0].passed
    assert "" in (tmp_path / "runs.log").read_text().splitlines()  # the test command ran as itself
