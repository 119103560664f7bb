"""/goal-convergence:goal's grammar: raw text in, never a shell parse; text for the model out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code.slash import run_command
from goal_convergence.loop import engine
from goal_convergence.models import Goal
from goal_convergence.storage.store import Store

NASTY = """don't break the "API"; echo $(touch PWNED1) `touch PWNED2` && rm -rf ~ | cat
and keep $HOME, ${CLAUDE_SESSION_ID} and 'the rest' as they are\
END"""


@pytest.fixture
def project(git_repo: Path) -> Path:
    (git_repo / "check.py").write_text("import os, sys\nsys.exit(0 if os.path.exists('fixed.txt') else 1)\n")
    return git_repo


def slash(text: str, project: Path, session: str | None = "s-1"):
    return run_command("goal", text, session_id=session, cwd=str(project))


def only_goal() -> Goal:
    [goal] = Store().iter_all(Goal)
    return goal


def test_an_objective_with_shell_syntax_is_stored_exactly_as_typed_and_runs_nothing(project):
    reply = slash(f"{NASTY} --check 'python3 check.py' --oracle conditions", project)
    goal = only_goal()
    assert goal.objective == NASTY
    assert goal.session_id == "s-1" and goal.stopping_conditions[0].command == "python3 check.py"
    assert not list(project.glob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    assert reply.text.startswith(f"goal-convergence started goal {goal.goal_id}, bound to this session.")
    assert goal.objective in reply.text
    assert "simply stop" in reply.text and "[0] custom_command: python3 check.py" in reply.text
    assert reply.notice == (f"goal-convergence: started {goal.goal_id}: checks `python3 check.py`; judge: the "
                            f"conditions alone (no oracle model)\nbudget: 15 iterations, 2h, $10.00")


def test_flags_take_quoted_values_and_set_conditions_and_budget(project):
    slash('fix foo--bar and the "x" case --test "python3 check.py" --max-iterations 4 --max-dollars 2.5 '
          "--oracle-model claude-sonnet-5-5 --stuck-after 2", project)
    goal = only_goal()
    assert goal.objective == 'fix foo--bar and the "x" case'
    assert [(c.type, c.command) for c in goal.stopping_conditions] == [("test_pass", "python3 check.py")]
    assert (goal.budget.max_iterations, goal.budget.max_dollars, goal.stuck_after) == (4, 2.5, 2)
    assert goal.oracle.model == "claude-sonnet-5-5"


@pytest.mark.parametrize("text, error", [
    ("fix it --bogus 1", "No such option '--bogus'"),
    ("fix it --max-iterations lots", "'lots' is not a valid integer"),
    ("fix it --test 'python3 check.py", "cannot be split into words (No closing quotation); close the quote"),
    ("fix it --test pytest -q", "No such option '-q'"),
    ("--test 'python3 check.py'", "the objective is empty"),
])
def test_bad_arguments_give_the_clis_error_and_no_goal(project, text, error):
    reply = slash(text, project)
    assert reply.text.startswith("goal-convergence could not do that: ") and error in reply.text
    assert "Tell the user this" in reply.text
    assert reply.notice.startswith("goal-convergence: ")
    assert Store().iter_all(Goal) == []


def test_a_subcommand_word_with_free_text_is_refused_not_made_a_goal(project):
    reply = slash("check that the login works", project)
    assert "`check` takes at most one goal id" in reply.text and "reword it" in reply.text
    assert Store().iter_all(Goal) == []


def test_one_active_goal_per_session(project):
    slash("first --check 'python3 check.py'", project)
    reply = slash("second --check 'python3 check.py'", project)
    assert "this session already works on" in reply.text
    assert len(Store().iter_all(Goal)) == 1


def test_pause_then_resume_in_another_session_with_the_last_hint_and_a_raised_budget(project):
    slash("make fixed.txt exist --check 'python3 check.py' --oracle conditions --max-iterations 3", project)
    goal = only_goal()
    engine.run_iteration(Store(), goal.goal_id, engine.MakerReport(summary="tried"))
    assert "paused goal" in slash("pause", project).text
    assert only_goal().state == "paused"

    reply = slash("resume --max-iterations 9", project, session="s-2")
    resumed = only_goal()
    assert (resumed.state, resumed.session_id, resumed.budget.max_iterations) == ("active", "s-2", 9)
    assert f"resumed goal {goal.goal_id} (1 iteration so far), now bound to this session" in reply.text
    assert f"The oracle's last hint: {resumed.last_hint}" in reply.text and resumed.last_hint
    assert "simply stop" in reply.text


def test_status_list_check_and_abandon(project):
    slash("make fixed.txt exist --check 'python3 check.py' --oracle conditions", project)
    goal = only_goal()
    assert slash("status", project).text.startswith(f"{goal.goal_id}: make fixed.txt exist\nstate: active")
    assert goal.goal_id in slash("list", project, session=None).text
    checked = slash(f"check {goal.goal_id}", project).text
    assert "FAIL" in checked and "0/1 conditions pass" in checked
    assert only_goal().spent.iterations == 0  # a check is not an iteration
    assert "ended as failed (cancelled)" in slash("abandon", project).text
    assert (only_goal().state, only_goal().stop_reason) == ("failed", "cancelled")
    assert "no open goals; the most recent" in slash("list", project).text and goal.goal_id in slash("list --all", project).text


def test_no_arguments_or_help_shows_the_forms(project):
    for text in ("", "  \n", "help", "HELP"):
        reply = slash(text, project)
        assert "/goal-convergence:goal pause [ID]" in reply.text and "--max-iterations VALUE" in reply.text
        assert "built-in /goal" in reply.text


def test_triage_passes_its_words_to_the_cli(project):
    reply = run_command("triage", "", session_id="s-1", cwd=str(project))
    assert reply.text.startswith("Output of `goal triage list` (exit 0):\nthe triage inbox is empty")
    reply = run_command("triage", "show 'tri-nope; touch PWNED'", session_id="s-1", cwd=str(project))
    assert "Output of `goal triage show 'tri-nope; touch PWNED'` (exit 65)" in reply.text
    assert not list(project.glob("PWNED*"))


def test_goal_slash_reads_raw_text_on_stdin_and_always_exits_0(project):
    def goal_slash(text: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "goal_convergence", "slash", "--session", "s-9"], input=text,
                              cwd=project, capture_output=True, text=True, timeout=60)

    done = goal_slash(NASTY + " --check 'python3 check.py'")
    assert done.returncode == 0 and "started goal" in done.stdout
    assert only_goal().objective == NASTY
    bad = goal_slash("again --nope")
    assert bad.returncode == 0 and "No such option '--nope'" in bad.stdout


def test_tests_may_change_and_protect_reach_the_goal_and_its_brief(project):
    (project / "tests").mkdir()
    (project / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    reply = slash("rename the API and its tests --check 'python3 check.py' --oracle conditions --tests-may-change "
                  "--protect 'tests/**'", project)
    goal = only_goal()
    assert goal.tests_may_change and goal.protect == ["tests/**"]
    refused = slash("another --check true --protect 'spec/**'", project, session="s-2")
    assert "'spec/**' matches no file" in refused.text and len(Store().iter_all(Goal)) == 1
    assert "--tests-may-change" in slash("help", project).text
    assert reply.text


def test_the_auto_oracle_names_the_provider_it_resolved_to(project, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    reply = slash("create fixed.txt --check 'python3 check.py'", project)
    assert "Judge: claude-haiku-5-5 (anthropic, chosen by auto), a different model" in reply.text
    assert reply.notice.endswith("; judge: claude-haiku-5-5 (anthropic, chosen by auto)\nbudget: 15 iterations, 2h, "
                                 "$10.00")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    reply = slash(f"resume {only_goal().goal_id}", project)
    assert "Judge: claude-haiku-5-5 (auto), which cannot run here yet. Note: no oracle can run here yet" in reply.text
    assert "To fix it: set ANTHROPIC_API_KEY" in reply.text
