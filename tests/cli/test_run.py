"""Real headless loops: `goal run` through the click CLI in-process, command makers, real git repos,
and the scripted Messages API as the oracle. `goal run` is a subprocess only where the process
boundary is the point (kill -9, the process's exit code); budgets of time run on an injected clock,
never on sleeps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from goal_convergence.cli.app import cli
from goal_convergence.errors import GoalConvergenceError
from goal_convergence.goals import moves
from goal_convergence.loop import engine, makers, runner
from goal_convergence.storage.store import Store
from tests.fakeapi import delay, error, text
from tests.fakes import Clock

GOAL = [sys.executable, "-m", "goal_convergence"]

CALC = "def add(a, b):\n    return a - b  # BUG\n\n\ndef mul(a, b):\n    return a + b  # BUG\n"
CHECK = "python -c \"import calc; assert calc.add(2, 3) == 5, 'add is wrong'; assert calc.mul(2, 3) == 6, 'mul is wrong'\""
FIX_ONE = """
import os, pathlib, sys
log = pathlib.Path(os.environ["MAKER_LOG"])
with log.open("a") as fh:
    fh.write(os.environ["GOAL_ITERATION"] + "\\t" + os.environ.get("GOAL_HINT", "").replace("\\n", " ") + "\\n")
src = pathlib.Path("calc.py")
lines = src.read_text().splitlines(keepends=True)
for i, line in enumerate(lines):
    if "# BUG" in line:
        lines[i] = line.replace("a - b", "a + b").replace("a + b  # BUG", "a * b") if "mul" in lines[i - 1] \\
            else line.replace("a - b  # BUG", "a + b")
        break
src.write_text("".join(lines))
print("fixed one bug; everything should pass now")
"""


def verdict(converged: bool, hint: str = "", reasons: list[str] | None = None, **usage):
    doc = {"converged": converged, "conditionResults": [], "reasons": reasons or ["scripted"],
           "nextHint": hint, "confidence": 0.9}
    return text(json.dumps(doc), usage=usage or None)


@pytest.fixture
def project(git_repo: Path, monkeypatch) -> Path:
    (git_repo / "calc.py").write_text(CALC)
    monkeypatch.chdir(git_repo)
    return git_repo


@pytest.fixture
def env(fake_api, tmp_path, monkeypatch) -> dict[str, str]:
    """The oracle is the scripted API; the environment of this process (for `goal` in-process and the
    makers it starts) and of a `goal` subprocess."""
    for name, value in {"ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "x",
                        "GOAL_CONVERGENCE_ORACLE_RETRIES": "0", "GOAL_CONVERGENCE_ORACLE_TIMEOUT": "20",
                        "MAKER_LOG": str(tmp_path / "maker.log")}.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def goal(*args: str) -> Ran:
    """`goal ARGS` in-process. standalone_mode=False as in `cli.main`, so the exit code is the command's
    own, or the one `cli.main` gives the error it raised (its ``exit_code``)."""
    result = CliRunner().invoke(cli, list(args), standalone_mode=False)
    exc = result.exception
    if exc is None:
        return Ran(result.return_value if isinstance(result.return_value, int) else 0, result.stdout, result.stderr)
    if isinstance(exc, GoalConvergenceError | click.ClickException):
        return Ran(exc.exit_code, result.stdout, result.stderr + f"Error: {exc}\n")
    raise exc


def goal_process(*args: str, env: dict, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*GOAL, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def new_goal(*flags: str) -> str:
    done = goal("new", "fix calc.py so its checks pass", "--check", CHECK, *flags, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["goalId"]


def load(goal_id: str) -> dict:
    return json.loads((Path(os.environ["GOAL_CONVERGENCE_HOME"]) / "goals" / f"{goal_id}.json").read_text())


def maker_script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "maker.py"
    path.write_text(body)
    return f"{sys.executable} {path}"


def assert_ledger_exact(doc: dict) -> None:
    numbers = [it["number"] for it in doc["history"]]
    assert numbers == list(range(1, len(numbers) + 1))
    assert doc["spent"]["iterations"] == len(numbers)
    assert doc["pending"] is None


def test_converges_in_two_and_the_hint_reaches_the_maker(project, env, fake_api, tmp_path):
    fake_api.enqueue(verdict(False, "mul() in calc.py adds instead of multiplying: return a * b"), verdict(True))
    gid = new_goal()
    run = goal("run", gid, "--maker-cmd", maker_script(tmp_path, FIX_ONE), "--json")
    ledger = json.loads(run.stdout)
    assert run.returncode == 0, run.stderr
    assert (ledger["met"], ledger["stop"], ledger["turns"]) == (True, "converged", 2)
    assert [e["passing"] for e in ledger["evidence"]] == [0, 1]
    log = Path(env["MAKER_LOG"]).read_text().splitlines()
    assert log[1] == "2\tmul() in calc.py adds instead of multiplying: return a * b"
    doc = load(gid)
    assert doc["state"] == "converged" and doc["stopReason"] == "converged"
    assert_ledger_exact(doc)
    oracle_calls = fake_api.messages
    assert len(oracle_calls) == 2 and oracle_calls[0].body["model"] == "claude-haiku-5-5"


def test_claim_only_maker_ends_stuck_with_a_triage_item(project, env, fake_api):
    fake_api.set_responder(lambda body: verdict(False, "add() still subtracts"))
    gid = new_goal()
    run = goal("run", gid, "--maker-cmd", "echo 'All done, every test passes!'", "--json")
    assert run.returncode == 2, run.stderr
    ledger = json.loads(run.stdout)
    assert ledger["stop"] == "stuck" and ledger["turns"] == 3
    items = json.loads(goal("triage", "list", "--json").stdout)
    assert len(items) == 1 and items[0]["goalId"] == gid and items[0]["stopReason"] == "stuck"
    assert items[0]["failingConditions"][0]["firstFailure"]
    assert load(gid)["escalation"]["triageId"] == items[0]["triageId"]


def test_busy_maker_that_fixes_nothing_ends_at_the_ceiling(project, env, fake_api):
    fake_api.set_responder(lambda body: verdict(False, "calc.py is still wrong"))
    gid = new_goal("--max-iterations", "4")
    # a real `goal` process: the stop reason is its exit code
    run = goal_process("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json", env=env, cwd=project)
    assert run.returncode == 4, run.stderr
    assert json.loads(run.stdout)["turns"] == 4


@dataclass
class Clocked:
    """A real maker whose every turn takes ``seconds`` on the injected clock; ``then`` runs after each turn."""

    inner: makers.Maker
    clock: Clock
    seconds: float
    then: Callable[[], object] | None = None
    timeouts: list[float | None] = field(default_factory=list)
    name: str = "clocked"

    def work(self, goal, hint, timeout):
        self.timeouts.append(timeout)
        report = self.inner.work(goal, hint, timeout)
        self.clock.advance(self.seconds)
        if self.then:
            self.then()
        return report


def test_wall_time_budget_ends_with_timeout(project, env, fake_api):
    fake_api.set_responder(lambda body: verdict(False, "keep going"))
    gid = new_goal("--max-duration", "2m")
    clock = Clock()
    maker = Clocked(makers.CommandMaker("date +%s%N >> notes.txt"), clock, seconds=50)
    result = runner.run_goal(Store(), gid, maker, edges=engine.Edges(now=clock.now))
    assert (result.exit_code, result.stop) == (3, "timeout")
    assert maker.timeouts == [120, 70, 20]  # the maker is given what is left of the budget
    assert load(gid)["spent"]["activeSeconds"] == 150


def test_dollar_budget_ends_with_budget_exhausted(project, env, fake_api):
    # 1M output tokens on claude-haiku-5-5 cost $0.50 a call
    fake_api.set_responder(lambda body: verdict(False, "keep going", input_tokens=1000, output_tokens=1_000_000))
    gid = new_goal("--max-dollars", "1.2")
    run = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
    assert run.returncode == 5, run.stdout + run.stderr
    spent = load(gid)["spent"]
    assert 0.99 <= spent["oracleDollars"] <= 1.51


def test_paused_time_is_not_charged(project, env, fake_api, tmp_path):
    fake_api.enqueue(verdict(False, "fix mul"), verdict(True))
    gid = new_goal()
    clock, store = Clock(), Store()
    edges = engine.Edges(now=clock.now)
    fix_one = makers.CommandMaker(maker_script(tmp_path, FIX_ONE))
    pause = Clocked(fix_one, clock, seconds=40, then=lambda: moves.move(store, gid, "pause", now=clock.now()))
    first = runner.run_goal(store, gid, pause, edges=edges)
    assert (first.exit_code, first.goal.state) == (75, "paused")  # paused while it ran
    clock.advance(3600)
    moves.resume(store, gid, now=clock.now())
    second = runner.run_goal(store, gid, Clocked(fix_one, clock, seconds=30), edges=edges)
    assert (second.exit_code, second.stop) == (0, "converged")
    doc = load(gid)
    # the three turns of work count (40 + 30 + 30 s), never the hour the goal spent paused
    assert doc["spent"]["activeSeconds"] == 100
    assert_ledger_exact(doc)


def _wait_for(predicate, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _kill_tree(pid_file: Path) -> None:
    if pid_file.exists():
        try:
            os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        except (ProcessLookupError, ValueError, IndexError):
            pass


@pytest.mark.parametrize("when", ["checks", "oracle", "after-persist"])
def test_kill_9_then_run_again_loses_and_doubles_nothing(project, env, fake_api, tmp_path, when):
    mark, armed = tmp_path / "mark", tmp_path / "armed"
    # armed once the goal exists: the start run of `goal new` must not be the run that hangs
    slow_check = (f"if [ -e {armed} ] && [ ! -e {mark} ]; then echo $$ > {mark}; sleep 30; fi; {CHECK}"
                  if when == "checks" else CHECK)
    done = goal("new", "fix calc.py", "--check", slow_check, "--json")
    gid = json.loads(done.stdout)["goalId"]
    armed.write_text("")
    maker = FIX_ONE
    if when == "after-persist":  # the second maker run starts right after iteration 1 was persisted
        maker += (f"\nimport time\nif os.environ['GOAL_ITERATION'] == '2' and not pathlib.Path({str(mark)!r}).exists():\n"
                  f"    pathlib.Path({str(mark)!r}).write_text(str(os.getpgrp()))\n    time.sleep(30)\n")
    if when == "oracle":
        fake_api.enqueue(delay(30, verdict(False, "never seen")))
    fake_api.enqueue(verdict(False, "fix mul() in calc.py"), verdict(True))
    cmd = maker_script(tmp_path, maker)
    proc = subprocess.Popen([*GOAL, "run", gid, "--maker-cmd", cmd], env=env, cwd=project,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if when == "oracle":
            _wait_for(lambda: len(fake_api.messages) == 1)
            mark.write_text("")
        else:
            _wait_for(lambda: mark.exists() and mark.read_text().strip() != "")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        _kill_tree(mark)
    before = load(gid)
    again = goal("run", gid, "--maker-cmd", cmd, "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    doc = load(gid)
    assert_ledger_exact(doc)
    assert doc["spent"]["iterations"] == 2 and doc["state"] == "converged"
    assert doc["history"][: len(before["history"])] == before["history"], "recorded iterations were rewritten"
    runs = [line.split("\t")[0] for line in Path(env["MAKER_LOG"]).read_text().splitlines()]
    # the maker's work is recorded before the checks: only a maker killed mid-run is run again
    assert runs == (["1", "2", "2"] if when == "after-persist" else ["1", "2"])


def test_flaky_condition_is_confirmed_before_it_converges(project, env, fake_api, tmp_path):
    counter = tmp_path / "count"
    flaky = (f"n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo $n > {counter}; "
             f"[ $((n % 2)) -eq 0 ] || {{ echo 'FAILED test_flaky - odd run'; exit 1; }}")
    fake_api.set_responder(lambda body: verdict(True))
    done = goal("new", "make the flaky check pass", "--check", flaky, "--json")
    gid = json.loads(done.stdout)["goalId"]
    counter.unlink()  # the start run at `goal new` counted once: start the parity afresh
    run = goal("run", gid, "--maker-cmd", "echo trying", "--json")
    assert run.returncode == 2, run.stdout  # never converged on a pass that a re-run contradicted
    second = load(gid)["history"][1]
    cond = second["conditions"][0]
    assert cond["rerun"] is not None and cond["rerun"]["passed"] is False and cond["passed"] is False
    assert any("flaky" in n for n in second["decision"]["notes"])


def test_an_oracle_that_keeps_failing_ends_with_judge_error(project, env, fake_api):
    fake_api.set_responder(lambda body: error(500, "api_error", "scripted outage"))
    gid = new_goal()
    run = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
    assert run.returncode == 7, run.stdout + run.stderr
    doc = load(gid)
    assert [it["judgeError"] is not None for it in doc["history"]] == [True, True, True]
    assert doc["state"] == "escalated" and doc["stopReason"] == "judge-error"


def test_an_unfixable_verdict_ends_the_loop(project, env, fake_api):
    unfixable = {"converged": False, "reasons": ["needs a licence key"], "nextHint": "",
                 "unfixable": {"reason": "the tests call a paid API", "evidence": ["calc.py needs LICENSE_KEY"]}}
    fake_api.enqueue(text(json.dumps(unfixable)))
    gid = new_goal()
    run = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
    assert run.returncode == 1, run.stdout + run.stderr
    assert load(gid)["stopReason"] == "unfixable"


def test_triage_act_reopens_with_a_raised_budget_and_dismiss_closes(project, env, fake_api, tmp_path):
    fake_api.set_responder(lambda body: verdict(False, "keep going"))
    gid = new_goal("--max-iterations", "1")
    assert goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt").returncode == 4
    item = json.loads(goal("triage", "list", "--json").stdout)[0]
    shown = goal("triage", "show", item["triageId"])
    assert shown.returncode == 0 and "ceiling" in shown.stdout and gid in shown.stdout
    refused = goal("triage", "act", item["triageId"])
    assert refused.returncode == 65 and "--max-iterations" in refused.stderr  # still at its ceiling
    acted = goal("triage", "act", item["triageId"], "goal", "--max-iterations", "3", "--json")
    assert acted.returncode == 0, acted.stderr
    assert json.loads(acted.stdout)["state"] == "active"
    fake_api.set_responder(None)
    fake_api.enqueue(verdict(True))
    rerun = goal("run", gid, "--maker-cmd", maker_script(tmp_path, FIX_ONE.replace("break", "")), "--json")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert json.loads(goal("triage", "list", "--json").stdout) == []
    listed = json.loads(goal("triage", "list", "--all", "--json").stdout)
    assert [i["status"] for i in listed] == ["acted"]
    again = goal("triage", "dismiss", item["triageId"])
    assert again.returncode == 65 and "already acted" in again.stderr


def test_an_oracle_call_that_could_not_be_paid_for_is_not_made(project, env, fake_api):
    # one call on claude-haiku-5-5 costs about a tenth of a cent: more than this budget holds
    gid = new_goal("--max-dollars", "0.0002")
    run = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
    assert run.returncode == 5, run.stdout + run.stderr
    assert fake_api.messages == []
    doc = load(gid)
    assert doc["spent"]["oracleDollars"] == 0 and doc["history"][0]["verdict"] is None
    assert any("could not be paid for" in n for n in doc["history"][0]["decision"]["notes"])


def test_flags_given_with_an_existing_goal_apply_and_are_recorded(project, tmp_path, monkeypatch):
    # No oracle can run here: the refusal suggests --oracle conditions, and that is true for `goal run ID`.
    monkeypatch.setenv("CLAUDE_BIN", "")
    monkeypatch.setenv("MAKER_LOG", str(tmp_path / "maker.log"))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")
    gid = new_goal("--max-iterations", "1")
    refused = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt")
    assert refused.returncode == 69 and "`--oracle conditions`" in refused.stderr, refused.stderr
    assert goal("run", gid, "--oracle", "conditions", "--maker-cmd", "date +%s%N >> notes.txt").returncode == 4
    item = load(gid)["escalation"]["triageId"]
    # The ceiling reached, the same command with a raised budget re-opens the goal and carries on.
    fixer = maker_script(tmp_path, FIX_ONE.replace("break", ""))
    done = goal("run", gid, "--max-iterations", "3", "--stuck-after", "2", "--maker-cmd", fixer, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = load(gid)
    assert (doc["state"], doc["oracle"]["provider"], doc["budget"]["maxIterations"], doc["stuckAfter"]) == (
        "converged", "conditions", 3, 2)
    assert [(h["via"], [(c["setting"], c["before"], c["after"]) for c in h["changes"]])
            for h in doc["settingsHistory"]] == [("goal run", [("oracle", "auto", "conditions")]),
                                                 ("goal run", [("maxIterations", 1, 3), ("stuckAfter", 3, 2)])]
    assert "settings changed" in goal("status", gid).stdout
    # Its triage item was resolved with it: acting on it again is refused as done, not a failure to run.
    assert [i["status"] for i in json.loads(goal("triage", "list", "--all", "--json").stdout)] == ["acted"]
    again = goal("triage", "act", item)
    assert again.returncode == 65 and "already acted" in again.stderr and gid in again.stderr


def test_flags_an_existing_goal_cannot_take_are_refused_never_ignored(project, env):
    gid = new_goal("--max-iterations", "1")
    before = load(gid)
    for flags, named in ((["--test", "pytest"], "--test"), (["--check", "true", "--protect", "*.py"], "--check, --protect"),
                         (["--tests-may-change"], "--tests-may-change")):
        done = goal("run", gid, *flags, "--maker-cmd", "true")
        assert done.returncode == 64 and f"{named} cannot change on an existing goal" in done.stderr, done.stderr
    same = goal("run", gid, "--maker-model", "claude-haiku-5-5", "--maker-cmd", "true")
    assert same.returncode == 65 and "is the maker's model" in same.stderr
    assert load(gid) == before


@pytest.mark.parametrize("route", ["cli", "slash"])
def test_resuming_an_escalated_goal_resolves_its_triage_item(project, env, fake_api, tmp_path, route):
    from goal_convergence.agents.claude_code.slash import run_command

    fake_api.set_responder(lambda body: verdict(False, "keep going"))
    gid = new_goal("--max-iterations", "1")
    assert goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt").returncode == 4
    item = load(gid)["escalation"]["triageId"]
    if route == "cli":
        assert goal("resume", gid, "--max-iterations", "2").returncode == 0
    else:  # /goal-convergence:goal resume ID --max-iterations N, in a session
        assert "resumed" in run_command("goal", f"resume {gid} --max-iterations 2", session_id="s-1",
                                        cwd=str(project)).text
    assert [i["status"] for i in json.loads(goal("triage", "list", "--all", "--json").stdout)] == ["acted"]
    assert [(c["setting"], c["before"], c["after"]) for c in load(gid)["settingsHistory"][0]["changes"]] == [
        ("maxIterations", 1, 2)]
    assert goal("abandon", gid).returncode == 0
    again = goal("triage", "act", item, "goal", "--max-iterations", "5")
    assert again.returncode == 65 and "already acted" in again.stderr


@pytest.mark.parametrize("dollars", ["0.01", "0.02"])
def test_a_few_cents_pay_for_the_calls_they_can_and_overshoot_by_at_most_one(project, env, fake_api, dollars):
    # 40k tokens in on claude-haiku-5-5 is $0.004 a call: more than the estimate from the request's real size,
    # so the budget is overshot, by at most the one call it could not foresee (or, when what is left is below
    # even the estimate, the run stops with less than a call's worth unspent).
    fake_api.set_responder(lambda body: verdict(False, "keep going", input_tokens=40_000, output_tokens=200))
    gid = new_goal("--max-dollars", dollars, "--max-iterations", "30", "--stuck-after", "30")
    run = goal("run", gid, "--maker-cmd", "date +%s%N >> notes.txt", "--json")
    assert run.returncode == 5, run.stdout + run.stderr
    doc = load(gid)
    costs = [it["oracleCost"]["dollars"] for it in doc["history"] if it["verdict"]]
    assert len(costs) == len(fake_api.messages) >= int(float(dollars) / 0.0041)
    # every call it could pay for was made (less than one call's worth is left), and at most one overshot
    assert float(dollars) - max(costs) < doc["spent"]["oracleDollars"] <= float(dollars) + max(costs)
