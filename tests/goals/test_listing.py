"""`goal list`: answered from the index without the models, written a row at a time, and the same
text as when it was built whole (`json.dumps(rows, indent=2)` and the table render.py made)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

from goal_convergence.goals import listing
from goal_convergence.storage.store import Store
from goal_convergence.system import index, quarantine
from goal_convergence.system.text import money as render_money
from tests.conftest import REPO, run_goal

STATES = ("active", "paused", "converged", "escalated", "failed")
OBJECTIVES = ["make all tests pass", "don't break the \"API\"\nsecond line", "ünïcödé ✓ 目标 \U0001f680",
              "tab\there and a \\ backslash", "x" * 120, "\x1b[31mred\x1b[0m and \u2028 a line separator"]


def test_the_goal_table():
    assert list(listing.table([])) == ["no goals yet; start one with `goal new OBJECTIVE` (or `goal demo` to watch one)"]
    rows = [{"goalId": "goal-aaaaaaaa", "state": "active", "iterations": 2, "maxIterations": 15, "dollars": 0.5,
             "objective": "first line\nsecond line"},
            {"goalId": "goal-bbbbbbbb", "state": "paused", "iterations": 0, "maxIterations": None, "dollars": 12.0,
             "objective": "x" * 100}]
    header, first, second = listing.table(rows)
    assert header.split() == ["ID", "STATE", "ITER", "SPEND", "OBJECTIVE"]
    assert first.split() == ["goal-aaaaaaaa", "active", "2/15", "$0.50", "first", "line", "second", "line"]
    assert second.split() == ["goal-bbbbbbbb", "paused", "0/∞", "$12.00", "x" * 70]
    assert first.index("first") == header.index("OBJECTIVE")  # the columns line up


def _mixed_home(gc_home: Path, make_goal, count: int) -> tuple[list[dict], Path]:
    """``count`` goal files of every state written behind the store's back (so the first list reads them
    all), one broken file among them; the summaries a list must show, newest first, and the broken file."""
    folder = gc_home / "goals"
    folder.mkdir(parents=True)
    expected = []
    for n in range(count):
        goal = make_goal(objective=OBJECTIVES[n % len(OBJECTIVES)], state=STATES[n % len(STATES)],
                         session_id=f"s-{n}" if n % 3 else None,
                         created_at=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z")
        goal.spent.iterations, goal.spent.maker_dollars = n % 7, n * 0.37
        doc = goal.dump()
        if goal.state == "converged":  # as the loop leaves one: else the file is shown tampered (seal.py)
            doc["history"] = [{"number": 1, "decision": {"action": "converge", "stopReason": "converged"}}]
        (folder / f"{goal.goal_id}.json").write_text(json.dumps(doc), encoding="utf-8")
        expected.append({k: v for k, v in index.summary(doc, []).items() if k != "stamp"})
    broken = folder / "goal-zzzzzzzz.json"
    broken.write_text("{ not json at all")
    expected.sort(key=lambda s: s["createdAt"], reverse=True)
    return expected, broken


def _table(rows: list[dict]) -> str:
    """The table as render.goal_table made it before the list was streamed, as click.echo writes it to a pipe
    (without terminal escapes)."""
    lines = [f"{'ID':<13} {'STATE':<9} {'ITER':>7} {'SPEND':>9}  OBJECTIVE"]
    for s in rows:
        its = f"{s['iterations']}/{s['maxIterations'] or '∞'}"
        money = render_money(s["dollars"])
        objective = s["objective"].replace("\n", " ")
        lines.append(f"{s['goalId']:<13} {s['state']:<9} {its:>7} {money:>9}  {objective[:70]}")
    return click.unstyle("\n".join(lines))


def test_the_streamed_list_is_the_text_the_whole_one_was(gc_home, make_goal, tmp_path):
    # more rows than one batch of output, goals of every state, odd objectives, a file the list must quarantine
    expected, broken = _mixed_home(gc_home, make_goal, 600)
    shown = run_goal(tmp_path, "list", "--all", "--json")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    assert f"warning: quarantined {gc_home / 'quarantine'}" in shown.stderr and str(broken) in shown.stderr

    table = run_goal(tmp_path, "list", "--all")
    assert table.stdout == f"{_table(expected)}\n\n{quarantine.notice(gc_home)}\n"
    open_only = [s for s in expected if s["state"] in index.OPEN_STATES]
    assert run_goal(tmp_path, "list").stdout == f"{_table(open_only)}\n\n{quarantine.notice(gc_home)}\n"
    assert json.loads(run_goal(tmp_path, "list", "--json").stdout) == open_only
    assert Store(gc_home).summaries(refresh=True)  # every file the list kept is a valid goal


def test_an_empty_home_lists_no_goals(tmp_path):
    assert run_goal(tmp_path, "list").stdout.startswith("no goals yet;")
    assert run_goal(tmp_path, "list", "--json").stdout == "[]\n"


def test_goal_list_loads_neither_pydantic_nor_the_models(gc_home, make_goal, tmp_path):
    """`goal list` is typed all day: it starts in the time of click and a read of the index, even when
    the index is stale and a broken file must be quarantined on the way."""
    expected, _ = _mixed_home(gc_home, make_goal, 5)
    probe = ("import sys; from goal_convergence.entry import run; code = run(sys.argv[1:]); "
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'anthropic', 'jsonschema') "
             "or m.startswith('goal_convergence.models')); print(heavy, file=sys.stderr); sys.exit(code)")
    for args in (["list", "--all", "--json"], ["list"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[-1] == "[]"
    assert len(json.loads(run_goal(tmp_path, "list", "--all", "--json").stdout)) == len(expected)
