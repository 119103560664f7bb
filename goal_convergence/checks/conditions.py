"""Runs a goal's stopping conditions: all at once, each bounded in time and in memory, and says
what each one's outcome means (pass or fail, coverage against its threshold, test census, failures).

Each condition is a shell command line run by ``process`` in its own process group, with the
project root as cwd and no stdin, killed with its group on timeout. Its output is read as it comes
and never held whole: the first and last few KB, the byte count, the lines that matter
(``extract``), the test runners' counts (``census``) and, for coverage, the lines the parsers need
(``coverage``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from ..errors import GoalConvergenceError, InvalidInput
from ..models import Census, ConditionEvidence, Goal, StoppingCondition, target
from ..system import deadline, mask
from ..system.lines import LineScanners
from ..system.process import Capture, missing_command, run, shell
from . import census, metric, pycache
from .coverage import CoverageLines, parse_coverage
from .extract import PASS_FINGERPRINT, FailureScanner, fingerprint

DEFAULT_TIMEOUT = 600.0

_PROGRESS_EVERY = 0.1
# Lines of output kept as failure lines when no rule recognised any.
_LAST_WORDS = 5
_SHELL = re.compile(r"[;&|<>`$()\n]")

Progress = list[tuple[int, str, float, bool | None]]
ProgressCallback = Callable[[Progress], None]


def _failure_lines(failures: FailureScanner, capture: Capture) -> list[str]:
    if failures.lines:
        return failures.lines
    # Nothing any runner's rules recognise: a failing command's last words are what it said.
    return [line for line in capture.last_text().splitlines() if line.strip()][-_LAST_WORDS:]


def shared_runs(conditions: list[StoppingCondition]) -> dict[int, int]:
    """{test condition: coverage condition} for each test command a coverage command only adds arguments to
    (`pytest -q` and `pytest -q --cov`, `npm test` and `npm test -- --coverage`): the coverage run is the
    test run with coverage on, so it runs once and the test condition reads its outcome."""
    found: dict[int, int] = {}
    for j, cov in enumerate(conditions):
        for i, test in enumerate(conditions):
            extra = cov.command.strip()[len(test.command.strip()):]
            if (cov.type == "coverage_threshold" and test.type == "test_pass" and i not in found
                    and cov.command.strip().startswith(test.command.strip()) and extra.startswith(" ")
                    and not _SHELL.search(extra)):
                found[i] = j
    return found


def _run(condition: StoppingCondition, index: int, root: Path, timeout: float,
         cancel: threading.Event | None, base_env: Mapping[str, str] | None = None,
         riders: list[tuple[int, StoppingCondition]] | None = None,
         expected: Callable[[], Collection[str]] | None = None) -> list[ConditionEvidence]:
    """The evidence of ``condition``, and of each test condition in ``riders`` its run is also (shared_runs)."""
    own, timeout = timeout, deadline.bounded(timeout) or 0.0  # a stop's budget may leave less (deadline.py)

    def evidence(**fields: object) -> ConditionEvidence:
        # Output is kept in the goal file and sent to the oracle: a printed key stops here.
        return ConditionEvidence(index=index, type=condition.type, command=condition.command, **mask.data(fields))

    try:
        coverage = CoverageLines(condition.coverage_regex) if condition.type == "coverage_threshold" else None
    except InvalidInput as e:
        return [evidence(passed=False, error=str(e), fingerprint=fingerprint([str(e)], None, False))]
    failures, tests = FailureScanner(), census.CensusScanner(expected)
    # The failure scanner last: its last keys (path lines, a warning's heading in most outputs) are then
    # the last tried, and a line they find is asked of no other scanner (sieve.Sieve).
    capture = Capture([LineScanners([tests] + ([coverage] if coverage is not None else []) + [failures])])
    # pytest writes its JUnit XML here (census.runner_env), in a folder of this run's own. Both names are
    # unguessable, so code under test cannot find the report by a pattern; what it could still write is
    # held to pytest's own summary (census.collect).
    report = f"{secrets.token_hex(16)}.xml"
    try:
        folder: Path | None = Path(tempfile.mkdtemp(prefix=secrets.token_hex(8)))
    except OSError:  # no writable temp folder: the census comes from the output alone
        folder = None
    try:
        env = census.runner_env(os.environ if base_env is None else base_env, folder, report) if folder else base_env
        if folder and "COVERAGE_FILE" not in (env or {}):  # coverage.py's data file, out of the project
            env = {**(env or os.environ), "COVERAGE_FILE": str(folder / ".coverage")}
        done = run(shell(condition.command), root, capture, timeout=timeout, cancel=cancel, env=env)
        test_census = census.collect(tests, folder, report) if folder else tests.result()
    except OSError as e:
        error = f"could not start the command ({e}); check that the project root {root} is readable"
        return [evidence(passed=False, error=error, fingerprint=fingerprint([error], None, False))]
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)

    output = capture.head_text() + "\n" + capture.tail_text()
    error = None
    if done.cancelled:
        error = "cancelled before it finished"
    elif done.timed_out:
        error = (f"timed out after {timeout:g}s; raise the condition's timeoutSeconds or make the command faster"
                 if timeout >= own else f"stopped after {timeout:g}s, all that was left of this stop's budget "
                 "(GOAL_CONVERGENCE_STOP_BUDGET); make the checks faster, or raise the budget and the Stop hook's "
                 "timeout together")
    elif done.code == 127:
        error = f"command not found: {missing_command(output, condition.command)}; check the condition's command"
    elif done.code == 126:
        error = "command found but not executable (permission denied?); check the condition's command"
    passed = done.code == 0 and error is None
    ran = passed, error  # the run's own outcome, before any coverage figure is read: the tests' outcome
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
    measured = None
    if condition.type == "metric" and error is None:
        measured, error = _measure(condition, output, root, timeout, cancel, env)
        passed = passed and error is None
    def outcome(passed: bool, error: str | None, **fields: object) -> dict:
        lines = [] if passed else _failure_lines(failures, capture)
        return dict(passed=passed, exit_code=done.code, timed_out=done.timed_out,
                    duration_seconds=round(done.seconds, 3), output_head=capture.head_text(),
                    output_tail=capture.tail_text(), output_bytes=capture.total, failure_lines=lines,
                    census=test_census, error=error, failed_tests=_failed_tests(test_census), **fields,
                    fingerprint=(PASS_FINGERPRINT if passed
                                 else fingerprint(lines + ([error] if error else []), done.code, done.timed_out)))

    return [evidence(**outcome(passed, error, coverage=value, metric=measured))] + [
        ConditionEvidence(index=i, type=test.type, command=test.command, **outcome(*ran)) for i, test in riders or []]


FAILED_TESTS_KEPT = 200  # the failing ids a later iteration's regressions are told against (models.Regression)


def _failed_tests(found: Census | None) -> list[str]:
    if found is None:
        return []
    return sorted(i for i, outcome in found.outcomes.items() if outcome == "failed")[:FAILED_TESTS_KEPT]


def _measure(condition: StoppingCondition, output: str, root: Path, timeout: float,
             cancel: threading.Event | None, env: Mapping[str, str] | None) -> tuple[float | None, str | None]:
    """A metric's number (the median of its ``runs``) and whether it meets the target: (number, error)."""
    assert condition.target is not None
    values = [metric.read_number(output, condition.metric_regex)]
    for _ in range((condition.runs or 1) - 1):
        again = Capture()
        done = run(shell(condition.command), root, again, timeout=timeout, cancel=cancel, env=env)
        text = again.head_text() + "\n" + again.tail_text()
        values.append(metric.read_number(text, condition.metric_regex) if done.code == 0 else None)
    if any(v is None for v in values):
        how = f"a group of metricRegex {condition.metric_regex!r}" if condition.metric_regex else "a number"
        return None, (f"could not read {how} from the output of a run; make the command print the number (e.g. "
                      "`... | wc -l`), or set metricRegex to a regular expression whose first group is it")
    value = metric.median([v for v in values if v is not None])
    if not target.meets(value, condition.target):
        return value, f"the metric is {value:g}, and the target is {condition.target.strip()}"
    return value, None


def run_condition(condition: StoppingCondition, index: int, root: Path, *, default_timeout: float = DEFAULT_TIMEOUT,
                  env: Mapping[str, str] | None = None,
                  expected: Callable[[], Collection[str]] | None = None) -> ConditionEvidence:
    """Run one condition now (``index`` is its place in the goal) and return its evidence.

    ``env`` is the command's environment (this process's by default), pytest's JUnit request and our
    own bytecode folder (pycache.py) added. ``expected``: its start test ids (census.CensusScanner)."""
    with pycache.prefix(Path(root)) as cache:
        env = {**(os.environ if env is None else env), pycache.ENV: str(cache)}
        return _run(condition, index, Path(root), condition.timeout_seconds or default_timeout, None, env,
                    expected=expected)[0]


def run_conditions(conditions: list[StoppingCondition], root: Path, *, only: list[int] | None = None,
                   on_progress: Callable[[Progress], None] | None = None,
                   default_timeout: float = DEFAULT_TIMEOUT,
                   env: Mapping[str, str] | None = None, bytecode_of: Path | None = None,
                   expected: Callable[[int], Collection[str]] | None = None) -> list[ConditionEvidence]:
    """Run the conditions (or the ``only`` indexes) all at once; evidence in index order.

    ``on_progress`` gets ``(index, command, elapsed seconds, passed or None while running)`` for
    each condition, about ten times a second and once at the end. ``env`` as for ``run_condition``.
    ``bytecode_of`` is the project whose bytecode folder a copy of it runs with (its own bytecode
    dropped afterwards). ``expected`` gives a condition's start test ids (census.CensusScanner).
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
    shared = {i: j for i, j in shared_runs(conditions).items() if i in indexes and j in indexes}
    riders = {j: [(i, conditions[i]) for i, k in shared.items() if k == j] for j in set(shared.values())}

    def work(i: int) -> None:
        started[i] = time.monotonic()
        cond = conditions[i]
        try:
            ids = None if expected is None else (
                lambda: set().union(*(expected(k) for k in [i, *(j for j, _ in riders.get(i, []))])))
            for ev in _run(cond, i, root, cond.timeout_seconds or default_timeout, cancel, env, riders.get(i), ids):
                results[ev.index] = ev
        except BaseException as e:  # re-raised in the calling thread, where it can be handled
            crashes.append(e)

    def progress() -> Progress:
        now = time.monotonic()
        return [(i, conditions[i].command,
                 results[i].duration_seconds if i in results else now - started.get(i, now),
                 results[i].passed if i in results else None) for i in indexes]

    threads = [threading.Thread(target=work, args=(i,), name=f"condition-{i}") for i in indexes if i not in shared]
    with pycache.prefix(bytecode_of or root, forget=root if bytecode_of else None) as cache:
        env = {**(os.environ if env is None else env), pycache.ENV: str(cache)}
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
