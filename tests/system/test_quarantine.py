"""A corrupt goal file does not disappear silently: the lists show it until it is dismissed."""

from __future__ import annotations

from pathlib import Path

from goal_convergence.agents.claude_code.slash import run_command
from tests.conftest import run_goal


def broken_goal(gc_home: Path) -> Path:
    (gc_home / "goals").mkdir(parents=True, exist_ok=True)
    path = gc_home / "goals" / "goal-zzzzzzzz.json"
    path.write_text("{ not json at all")
    return path


def test_a_quarantined_file_is_listed_by_goal_list_and_triage_list_until_dismissed(gc_home, tmp_path):
    broken = broken_goal(gc_home)
    first = run_goal(tmp_path, "list")
    assert "warning: quarantined" in first.stderr  # told once, when it happens
    [entry] = [p.name for p in (gc_home / "quarantine").glob("goal-zzzzzzzz.json.*") if not p.name.endswith(".txt")]
    for listing in (first, run_goal(tmp_path, "list"), run_goal(tmp_path, "triage", "list")):
        assert listing.returncode == 0, listing.stderr
        assert f"  {entry}  from {broken}: {broken} is not valid JSON" in listing.stdout
        assert "`goal triage dismiss ENTRY`" in listing.stdout
    slash = run_command("goal", "list", session_id="s-1", cwd=str(tmp_path)).text
    assert entry in slash

    done = run_goal(tmp_path, "triage", "dismiss", entry)
    assert (done.returncode, done.stdout.strip()) == (0, f"dismissed {entry}")
    assert entry not in run_goal(tmp_path, "list").stdout + run_goal(tmp_path, "triage", "list").stdout
    assert (gc_home / "quarantine" / "dismissed" / entry).read_text() == "{ not json at all"  # kept, not listed
    again = run_goal(tmp_path, "triage", "dismiss", entry)
    assert again.returncode != 0 and "not a valid triage id" in again.stderr  # dismissed: no longer an entry
