"""`goal wave` in real git repos: real `goal run` children in worktrees, real maker scripts (--maker-cmd) that
log when they start and end, `--oracle conditions`; the wave itself runs in this process (tests.conftest.run_goal)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goal_convergence.models import Goal, Runner, TriageItem, now_iso
from goal_convergence.rules import lifecycle
from goal_convergence.storage.store import Store
from goal_convergence.system import orphans
from tests.conftest import git, run_goal

# The checks read the files through scripts: a file a check's command line names is check-defining, and a
# maker that writes one is blocked by the integrity guard.
HAS = 'grep -q "$2" "out/$1.txt" 2>/dev/null || { echo "FAILED out/$1.txt lacks $2"; exit 1; }\n'
LACKS = '[ ! -e "out/$1.txt" ] || { echo "FAILED out/$1.txt is there"; exit 1; }\n'
MAKER = """import json, os, pathlib, subprocess, sys, time
plan = json.loads(pathlib.Path(sys.argv[1]).read_text())[os.environ["GOAL_OBJECTIVE"]]
def log(what, pid=os.getpid()):
    with open(sys.argv[2], "a") as f:
        f.write(f"{what} {os.environ['GOAL_ID']} {time.time()} {pid} {os.getcwd()}\\n")
log("start")
if plan.get("spawn"):  # a grandchild of `goal run`, in the maker's group: out of reach of the kernel's death signal
    log("spawned", subprocess.Popen(["sleep", "120"]).pid)
time.sleep(plan.get("sleep", 0))
# "meet": N makers must be at work together: wait (20 s at most) until N have started, instead of sleeping long
# enough for them to overlap.
for _ in range(400 if plan.get("meet") else 0):
    with open(sys.argv[2]) as f:
        if sum(line.startswith("start ") for line in f) >= plan["meet"]:
            break
    time.sleep(0.05)
for name, text in plan.get("write", {}).items():
    pathlib.Path(name).parent.mkdir(exist_ok=True)
    pathlib.Path(name).write_text(text)
for name in plan.get("remove", []):
    pathlib.Path(name).unlink()
log("end")
"""


@pytest.fixture
def project(git_repo: Path) -> Path:
    (git_repo / "has.sh").write_text(HAS)
    (git_repo / "lacks.sh").write_text(LACKS)
    (git_repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (git_repo / "out").mkdir()
    (git_repo / "out" / "shared.txt").write_text("base\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "checks")
    return git_repo


class Makers:
    """The maker scripts of a wave: what each goal's maker writes (by objective), and the log of their runs."""

    def __init__(self, folder: Path) -> None:
        self.plan, self.log, self.script = folder / "plan.json", folder / "makers.log", folder / "maker.py"
        self.script.write_text(MAKER)
        self.plans: dict[str, dict] = {}

    def goal(self, project: Path, objective: str, check: str, plan: dict, *flags: str) -> str:
        self.plans[objective] = plan
        self.plan.write_text(json.dumps(self.plans))
        done = run_goal(project, "new", objective, "--check", check, "--oracle", "conditions", *flags, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)["goalId"]

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.plan} {self.log}"

    def runs(self) -> list[tuple[str, str, float, int]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [(what, goal, float(t), int(pid)) for what, goal, t, pid, _ in (line.split(" ", 4) for line in lines)]

    def most_at_once(self) -> int:
        level = most = 0
        for what, *_ in sorted(self.runs(), key=lambda r: r[2]):
            level += {"start": 1, "end": -1}.get(what, 0)
            most = max(most, level)
        return most


@pytest.fixture
def makers(tmp_path) -> Makers:
    return Makers(tmp_path)


def wave(project: Path, makers: Makers, *args: str, code: int = 0) -> dict:
    done = run_goal(project, "wave", *args, "--maker-cmd", makers.command, "--json")
    assert done.returncode == code, done.stdout + done.stderr
    return json.loads(done.stdout)


def assert_nothing_left(project: Path, makers: Makers, gc_home: Path) -> None:
    assert git(project, "worktree", "list").count("\n") == 1  # the user's own only
    assert not any((gc_home / "worktrees").glob("*/wave")) if (gc_home / "worktrees").exists() else True
    assert not [pid for *_, pid in makers.runs() if orphans.alive(pid, None)]


def test_three_goals_two_at_a_time_all_converge_and_merge_in_order(project, makers, gc_home):
    ids = [makers.goal(project, f"write {k}", f"sh has.sh {k} {k}-done", {"write": {f"out/{k}.txt": f"{k}-done\n"},
                                                                          "meet": 2})
           for k in "abc"]
    table = wave(project, makers, *ids, "--parallel", "2")
    assert [(g["goalId"], g["stop"], g["merge"], g["iterations"]) for g in table["goals"]] == \
        [(i, "converged", "merged", 1) for i in ids]
    assert table["exitCode"] == 0 and table["parallel"] == 2
    # merged in the order given, each a merge commit naming its goal, on the user's branch
    merges = git(project, "log", "--merges", "--format=%s").splitlines()
    assert [m.split(":")[0] for m in reversed(merges)] == [f"goal {i}" for i in ids]
    assert git(project, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert all((project / "out" / f"{k}.txt").read_text() == f"{k}-done\n" for k in "abc")
    assert git(project, "status", "--porcelain") == ""
    assert makers.most_at_once() == 2  # K at a time, never more
    # each maker worked in its own worktree, not the user's tree
    assert len({cwd for *_, cwd in (line.split(" ", 4) for line in makers.log.read_text().splitlines())}) == 3
    assert str(project) not in makers.log.read_text()
    assert "goal/" not in git(project, "branch", "--list")
    assert_nothing_left(project, makers, gc_home)
    assert all(Store(gc_home).load(Goal, i).state == "converged" for i in ids)


def test_the_table_is_printed_without_json(project, makers, gc_home):
    goal_id = makers.goal(project, "write a", "sh has.sh a yes", {"write": {"out/a.txt": "yes\n"}})
    done = run_goal(project, "wave", goal_id, "--parallel", "1", "--maker-cmd", makers.command)
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["GOAL", "STOP", "ITER", "COST", "MERGE"]
    assert row.split()[:3] == [goal_id, "converged", "1"] and row.endswith("merged")


@pytest.mark.parametrize("dirty", [False, True], ids=["clean-tree-merges", "dirty-tree-patches"])
def test_two_goals_on_the_same_line_the_second_conflicts_and_becomes_a_triage_item(project, makers, gc_home, dirty):
    first = makers.goal(project, "say alpha", "sh has.sh shared alpha", {"write": {"out/shared.txt": "alpha\n"}})
    second = makers.goal(project, "say beta", "sh has.sh shared beta", {"write": {"out/shared.txt": "beta\n"}})
    if dirty:
        (project / "mine.txt").write_text("the user's own work\n")
    table = wave(project, makers, first, second, "--parallel", "2", code=1)
    one, two = table["goals"]
    assert (one["merge"], two["merge"]) == ("applied" if dirty else "merged", "conflict")
    assert (two["stop"], two["exitCode"], table["exitCode"]) == ("converged", 1, 1)
    assert (project / "out" / "shared.txt").read_text() == "alpha\n"  # the first's work only
    if dirty:
        assert (project / "mine.txt").read_text() == "the user's own work\n"
    item = Store(gc_home).load(TriageItem, two["triageId"])
    assert (item.source, item.goal_id, item.status) == ("wave", second, "open")
    assert "out/shared.txt" in item.reasons[0] and f"git merge --no-ff goal/{second}" in item.reasons[0]
    # the second's work is kept on its branch, the first's branch is gone
    assert git(project, "show", f"goal/{second}:out/shared.txt") == "beta\n"
    assert f"goal/{first}" not in git(project, "branch", "--list")
    assert_nothing_left(project, makers, gc_home)


def test_work_the_user_dropped_during_the_wave_is_not_brought_back_by_a_merge(project, makers, gc_home):
    """The start commit holds the user's uncommitted files; a merge of the branch would bring them back once the user
    dropped them, so a branch started from a dirty tree comes back as its own work only, a patch."""
    (project / "mine.txt").write_text("the user's, uncommitted\n")
    goal_id = makers.goal(project, "write a", "sh has.sh a yes",  # the user drops it while the goal runs
                          {"write": {"out/a.txt": "yes\n"}, "remove": [str(project / "mine.txt")]})
    [row] = wave(project, makers, goal_id)["goals"]
    assert row["merge"] == "applied"
    assert (project / "out" / "a.txt").read_text() == "yes\n" and not (project / "mine.txt").exists()


def test_a_wave_of_five_with_one_conflict_ends_with_four_merged_and_one_triage_item(project, makers, gc_home):
    plans = {"a": "out/a.txt", "b": "out/shared.txt", "c": "out/c.txt", "d": "out/shared.txt", "e": "out/e.txt"}
    ids = [makers.goal(project, f"write {k}", f"sh has.sh {Path(f).stem} {k}-done", {"write": {f: f"{k}-done\n"}})
           for k, f in plans.items()]
    table = wave(project, makers, *ids, "--parallel", "3", code=1)
    assert [g["merge"] for g in table["goals"]] == ["merged", "merged", "merged", "conflict", "merged"]
    [item] = Store(gc_home).iter_all(TriageItem)
    assert item.goal_id == ids[3] and item.triage_id == table["goals"][3]["triageId"]
    assert [(project / f).read_text() for f in ("out/a.txt", "out/shared.txt", "out/c.txt", "out/e.txt")] == \
        ["a-done\n", "b-done\n", "c-done\n", "e-done\n"]
    assert sorted(git(project, "branch", "--format=%(refname:short)").split()) == [f"goal/{ids[3]}", "main"]
    assert makers.most_at_once() <= 3
    assert_nothing_left(project, makers, gc_home)


def test_a_check_that_turns_red_after_the_merge_undoes_it(project, makers, gc_home):
    first = makers.goal(project, "write a", "sh has.sh a yes", {"write": {"out/a.txt": "yes\n"}})
    # converges in its own worktree, where the first goal's file is not: in the user's tree it is
    second = makers.goal(project, "write b alone", "sh has.sh b yes && sh lacks.sh a", {"write": {"out/b.txt": "yes\n"}})
    head_before = git(project, "rev-parse", "HEAD")
    table = wave(project, makers, first, second, "--parallel", "2", code=1)
    one, two = table["goals"]
    assert (one["merge"], two["merge"]) == ("merged", "red after merge")
    assert (project / "out" / "a.txt").exists() and not (project / "out" / "b.txt").exists()
    assert git(project, "rev-parse", "HEAD^1") == head_before  # the first's merge only
    assert git(project, "status", "--porcelain") == ""
    item = Store(gc_home).load(TriageItem, two["triageId"])
    assert "sh lacks.sh a" in item.reasons[0] and "taken back out" in item.reasons[0]
    assert [c.command for c in item.failing_conditions] == ["sh has.sh b yes && sh lacks.sh a"]
    assert git(project, "show", f"goal/{second}:out/b.txt") == "yes\n"
    assert_nothing_left(project, makers, gc_home)


def test_the_exit_code_is_the_worst_stop_reason(project, makers, gc_home):
    done = makers.goal(project, "write a", "sh has.sh a yes", {"write": {"out/a.txt": "yes\n"}})
    short = makers.goal(project, "never", "sh has.sh z yes", {}, "--max-iterations", "1")
    table = wave(project, makers, done, short, "--parallel", "2", code=4)  # ceiling
    assert [(g["stop"], g["merge"], g["exitCode"]) for g in table["goals"]] == \
        [("converged", "merged", 0), ("ceiling", "not converged", 4)]
    assert "goal/" not in git(project, "branch", "--list")  # the one that did nothing leaves no branch
    assert_nothing_left(project, makers, gc_home)


def test_a_goal_paused_while_the_wave_runs_counts_with_its_runs_code(project, makers, gc_home, tmp_path):
    done = makers.goal(project, "write a", "sh has.sh a yes", {"write": {"out/a.txt": "yes\n"}})
    paused = makers.goal(project, "pause me", "sh has.sh p yes", {"write": {"out/p.txt": "half\n"}})
    # A maker may not pause its own goal (cli/person.py): it asks, and the person (this test) pauses it.
    asked, answered = tmp_path / "pause-asked", tmp_path / "pause-done"
    pause = (f'if [ "$GOAL_OBJECTIVE" = "pause me" ]; then touch {asked}; '
             f'for i in $(seq 200); do [ -e {answered} ] && break; sleep 0.05; done; fi; {makers.command}')

    def person() -> None:
        for _ in range(600):
            if asked.exists():
                Store(gc_home).update(Goal, paused, lambda g: lifecycle.transition(g, "pause", datetime.now(UTC)))
                answered.touch()
                return
            time.sleep(0.05)

    helper = threading.Thread(target=person)
    helper.start()
    table = json.loads(run_goal(project, "wave", done, paused, "--maker-cmd", pause, "--json").stdout)
    helper.join()
    first, second = table["goals"]
    assert (first["stop"], first["merge"]) == ("converged", "merged")
    assert (second["stop"], second["exitCode"], second["merge"], table["exitCode"]) == ("paused", 75, "not converged", 75)
    assert "paused" in second["note"] and second["note"].endswith(f"its work is on goal/{paused}")


def test_a_goal_that_did_not_converge_keeps_its_work_on_its_branch_and_the_next_wave_carries_on(
        project, makers, gc_home):
    goal_id = makers.goal(project, "two steps", "sh has.sh two yes", {"write": {"out/one.txt": "yes\n"}},
                          "--max-iterations", "1")
    assert wave(project, makers, goal_id, code=4)["goals"][0]["note"] == f"its work is on goal/{goal_id}"
    assert git(project, "show", f"goal/{goal_id}:out/one.txt") == "yes\n"
    assert not (project / "out" / "one.txt").exists()
    assert run_goal(project, "resume", goal_id, "--max-iterations", "3").returncode == 0
    makers.plans["two steps"] = {"write": {"out/two.txt": "yes\n"}}
    makers.plan.write_text(json.dumps(makers.plans))
    [row] = wave(project, makers, goal_id)["goals"]
    assert (row["stop"], row["merge"]) == ("converged", "merged")
    assert (project / "out" / "one.txt").exists() and (project / "out" / "two.txt").exists()  # both waves' work
    assert "goal/" not in git(project, "branch", "--list")
    assert_nothing_left(project, makers, gc_home)


HEARTBEAT = '[heartbeat]\noracle = "conditions"\nchecks = [{ type = "test_pass", command = "sh has.sh h fixed" }'


def _heartbeat_settings(project: Path, toml: str) -> None:
    (project / ".goal-convergence.toml").write_text(toml)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "heartbeat")


def test_heartbeat_picks_the_projects_open_heartbeat_goals(project, makers, gc_home):
    _heartbeat_settings(project, f'{HEARTBEAT}, {{ type = "lint_clean", command = "sh has.sh l fixed" }}]\n')
    other = makers.goal(project, "not a heartbeat goal", "sh has.sh x yes", {})
    assert run_goal(project, "heartbeat").returncode == 0
    store = Store(gc_home)
    beats = sorted(g.goal_id for g in store.iter_all(Goal) if g.source == "heartbeat")  # one stamp: by id
    assert len(beats) == 2
    for k in "hl":
        makers.plans[f"heartbeat: make `sh has.sh {k} fixed` pass again"] = {"write": {f"out/{k}.txt": "fixed\n"}}
    makers.plan.write_text(json.dumps(makers.plans))
    table = wave(project, makers, "--heartbeat", "--parallel", "2")
    assert [g["goalId"] for g in table["goals"]] == beats and other not in makers.log.read_text()
    assert [g["stop"] for g in table["goals"]] == ["converged", "converged"]
    assert store.load(Goal, other).state == "active"


def test_heartbeat_run_parallel_runs_a_wave(project, makers, gc_home):
    _heartbeat_settings(project, f'{HEARTBEAT}, {{ type = "lint_clean", command = "sh has.sh l fixed" }}]\n')
    makers.plan.write_text(json.dumps({f"heartbeat: make `sh has.sh {k} fixed` pass again":
                                       {"write": {f"out/{k}.txt": "fixed\n"}, "meet": 2} for k in "hl"}))
    done = run_goal(project, "heartbeat", "--run", "--parallel", "2", "--maker-cmd", makers.command, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [r["stop"] for r in report["runs"]] == ["converged", "converged"]
    assert [g["merge"] for g in report["wave"]["goals"]] == ["merged", "merged"]
    assert [g["goalId"] for g in report["wave"]["goals"]] == sorted(f["id"] for f in report["findings"])
    assert makers.most_at_once() == 2
    assert (project / "out" / "h.txt").exists() and (project / "out" / "l.txt").exists()
    assert_nothing_left(project, makers, gc_home)


def test_parallel_without_run_is_a_usage_error(project):
    done = run_goal(project, "heartbeat", "--parallel", "2")
    assert done.returncode == 64 and "add --run" in done.stderr


@pytest.fixture
def other_process():
    import subprocess

    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("unfit, says", [
    ("paused", "is paused, and a wave works active goals"),
    ("session", "is bound to the Claude Code session s-1"),
    ("elsewhere", "is of the project"),
    ("held", "is being run by `goal run` (pid"),
])
def test_an_unfit_goal_is_refused_before_anything_runs(project, makers, gc_home, tmp_path, other_process, unfit,
                                                        says):
    fine = makers.goal(project, "write a", "sh has.sh a yes", {"write": {"out/a.txt": "yes\n"}})
    if unfit == "elsewhere":
        other = tmp_path / "other"
        other.mkdir()
        bad = makers.goal(other, "write b", "true", {})
    else:
        bad = makers.goal(project, "write b", "true", {}, *(["--session", "s-1"] if unfit == "session" else []))
        if unfit == "paused":
            assert run_goal(project, "pause", bad).returncode == 0
    if unfit == "held":  # a live `goal run` of another process holds its claim
        pid = other_process.pid
        Store(gc_home).update(Goal, bad, lambda g: setattr(g, "runner", Runner(
            pid=pid, host=orphans.host(), started=orphans.started(pid), since=now_iso(), seen_at=now_iso())))
    done = run_goal(project, "wave", fine, bad, "--maker-cmd", makers.command)
    assert done.returncode == 65 and bad in done.stderr and says in done.stderr, done.stderr
    assert not makers.log.exists() and "goal/" not in git(project, "branch", "--list")
    assert git(project, "worktree", "list").count("\n") == 1


def test_ids_and_heartbeat_together_or_neither_are_a_usage_error(project):
    assert run_goal(project, "wave").returncode == 64
    assert run_goal(project, "wave", "goal-aaaaaaaa", "--heartbeat").returncode == 64


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_interrupting_the_wave_stops_every_goal_and_leaves_nothing(project, makers, gc_home, how):
    """A real `goal wave` process, Ctrl-C'd (or killed) while its makers, and a grandchild of each, run."""
    import signal
    import subprocess
    import time

    ids = [makers.goal(project, f"slow {k}", f"sh has.sh {k} yes", {"sleep": 60, "spawn": True}) for k in "ab"]
    wave_proc = subprocess.Popen([sys.executable, "-m", "goal_convergence", "wave", *ids, "--parallel", "2",
                                  "--maker-cmd", makers.command], cwd=project, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=os.environ.copy())
    deadline = time.monotonic() + 60
    while sum(r[0] == "spawned" for r in makers.runs()) < 2:
        assert time.monotonic() < deadline and wave_proc.poll() is None, wave_proc.communicate()
        time.sleep(0.1)
    wave_proc.send_signal(getattr(signal, how))
    out, err = wave_proc.communicate(timeout=30)
    assert wave_proc.returncode == 130, err
    assert not [pid for *_, pid in makers.runs() if orphans.alive(pid, None)]
    assert git(project, "worktree", "list").count("\n") == 1
    store = Store(gc_home)
    assert all(store.load(Goal, i).state == "active" and store.load(Goal, i).runner is None for i in ids)


def test_a_wave_killed_outright_leaves_its_goals_resumable_and_the_next_wave_reaps_and_carries_on(
        project, makers, gc_home):
    """kill -9 of the wave mid-run: its `goal run`s die with it (the kernel's death signal), their makers'
    grandchildren with them (each run's watchdog, orphans.py), and the next wave carries on in the worktrees
    left behind."""
    import signal
    import subprocess
    import time

    ids = [makers.goal(project, f"slow {k}", f"sh has.sh {k} yes", {"write": {f"out/{k}.txt": "yes\n"}, "sleep": 60,
                                                                     "spawn": True}) for k in "ab"]
    wave_proc = subprocess.Popen([sys.executable, "-m", "goal_convergence", "wave", *ids, "--parallel", "2",
                                  "--maker-cmd", makers.command], cwd=project, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 60
    while sum(r[0] == "spawned" for r in makers.runs()) < 2:
        assert time.monotonic() < deadline and wave_proc.poll() is None
        time.sleep(0.1)
    wave_proc.send_signal(signal.SIGKILL)
    wave_proc.wait()
    spawned = [pid for what, _, _, pid in makers.runs() if what == "spawned"]
    deadline = time.monotonic() + 10
    while [pid for pid in spawned if orphans.alive(pid, None)]:  # out of the kernel's reach: the runs' watchdogs
        assert time.monotonic() < deadline, "the makers' own children outlived the killed wave"
        time.sleep(0.1)
    assert git(project, "worktree", "list").count("\n") == 3  # left behind
    for k in "ab":
        makers.plans[f"slow {k}"] = {"write": {f"out/{k}.txt": "yes\n"}}
    makers.plan.write_text(json.dumps(makers.plans))
    table = wave(project, makers, *ids, "--parallel", "2")
    assert [(g["stop"], g["merge"]) for g in table["goals"]] == [("converged", "merged")] * 2
    assert not [pid for pid in spawned if orphans.alive(pid, None)]
    assert_nothing_left(project, makers, gc_home)


def test_heartbeat_run_parallel_prints_the_waves_table(project, makers, gc_home):
    _heartbeat_settings(project, f"{HEARTBEAT}]\n[heartbeat.budget]\nmax_iterations = 1\n")
    makers.plan.write_text(json.dumps({"heartbeat: make `sh has.sh h fixed` pass again": {}}))
    done = run_goal(project, "heartbeat", "--run", "--parallel", "2", "--maker-cmd", makers.command)
    assert done.returncode == 4, done.stdout + done.stderr  # the wave's worst: ceiling
    lines = done.stdout.splitlines()
    at = lines.index("  ran a wave:")
    assert lines[at + 1].split() == ["GOAL", "STOP", "ITER", "COST", "MERGE"]
    assert lines[at + 2].split()[1:3] == ["ceiling", "1"] and "not converged" in lines[at + 2]
