"""The oracle's tools read the project and nothing else."""

from __future__ import annotations

import os
import time

import pytest

from goal_convergence.models import ConditionEvidence
from goal_convergence.oracle.tools import MAX_READ_LINES, Toolbox
from tests.conftest import git


@pytest.fixture
def project(git_repo, tmp_path):
    (git_repo / "src").mkdir()
    (git_repo / "src" / "calc.py").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_calc.py").write_text("def test_add():\n    assert add(1, 2) == 3\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "code")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET\n")
    os.symlink(outside / "secret.txt", git_repo / "link.txt")
    os.symlink(outside, git_repo / "linkdir")
    return git_repo


@pytest.fixture
def box(project):
    return Toolbox(project)


def test_read_file_with_a_line_range(box):
    text, error = box.run("read_file", {"path": "src/calc.py", "start_line": 10, "end_line": 12})
    assert not error
    assert text.splitlines() == ["    10\tline 10", "    11\tline 11", "    12\tline 12", "... (more lines: read on with start_line=13)"]


def test_read_file_caps_lines(box):
    text, error = box.run("read_file", {"path": "src/calc.py"})
    assert not error and f"line {MAX_READ_LINES}\n" in text + "\n" and f"line {MAX_READ_LINES + 1}\n" not in text


def test_list_and_grep_find_project_files(box):
    listed, error = box.run("list_files", {"pattern": "**/*.py"})
    assert not error and listed.splitlines() == ["src/calc.py", "tests/test_calc.py"]
    found, error = box.run("grep", {"pattern": r"assert add\(", "glob": "*.py"})
    assert not error and found == "tests/test_calc.py:2: assert add(1, 2) == 3"


# Each file tool, each way out of the root: `..`, an absolute path outside, a symlink out.
ESCAPES = [
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "src/../../outside/secret.txt"}),
    ("read_file", {"path": "/etc/hostname"}),
    ("read_file", {"path": "link.txt"}),
    ("read_file", {"path": "linkdir/secret.txt"}),
    ("list_files", {"pattern": "../*"}),
    ("list_files", {"pattern": "/etc/*"}),
    ("grep", {"pattern": "TOPSECRET", "path": ".."}),
    ("grep", {"pattern": "TOPSECRET", "path": "/etc"}),
    ("grep", {"pattern": "TOPSECRET", "path": "link.txt"}),
    ("grep", {"pattern": "TOPSECRET", "path": "linkdir"}),
    ("git", {"command": "diff", "paths": ["../outside"]}),
    ("git", {"command": "log", "paths": ["/etc/hostname"]}),
    ("git", {"command": "diff", "paths": ["linkdir"]}),
]


@pytest.mark.parametrize("name, args", ESCAPES, ids=[f"{n}:{list(a.values())[-1]}" for n, a in ESCAPES])
def test_path_escapes_are_refused(box, name, args):
    text, error = box.run(name, args)
    assert error and "refused" in text
    assert "TOPSECRET" not in text


def test_walks_do_not_follow_symlinks_out(box):
    assert box.run("grep", {"pattern": "TOPSECRET"}) == ("no match for 'TOPSECRET'", False)
    listed, _ = box.run("list_files", {"pattern": "*"})
    assert "secret" not in listed and "link.txt" not in listed


def test_an_absolute_path_inside_the_root_is_fine(box, project):
    text, error = box.run("read_file", {"path": str(project / "tests" / "test_calc.py")})
    assert not error and "def test_add" in text


def test_git_is_read_only_and_takes_no_options(box, project):
    (project / "src" / "calc.py").write_text("changed\n")
    status, error = box.run("git", {"command": "status"})
    assert not error and " M src/calc.py" in status
    diff, error = box.run("git", {"command": "diff", "paths": ["src"], "stat": True})
    assert not error and "src/calc.py" in diff and "1000 deletions" in diff
    log, error = box.run("git", {"command": "log", "max_count": 1})
    assert not error and "code" in log
    for ref in ("--output=/tmp/x", "-ohack", "HEAD; rm -rf /", "$(id)"):
        text, error = box.run("git", {"command": "diff", "ref": ref})
        assert error and "not a git ref" in text
    text, error = box.run("git", {"command": "push"})
    assert error and "not allowed" in text


def test_unknown_tools_and_bad_arguments_are_tool_errors(box):
    assert box.run("write_file", {"path": "x"})[1]
    assert box.run("bash", {"command": "id"})[1]
    text, error = box.run("read_file", {"file": "x"})
    assert error and "bad arguments" in text
    text, error = box.run("grep", {"pattern": "("})
    assert error and "grep failed" in text


def test_results_are_cut_to_the_limit(box):
    text, error = box.run("read_file", {"path": "src/calc.py"}, limit=500)
    assert not error and len(text) <= 500 and text.endswith("characters cut)")


def test_rerun_condition_is_offered_only_with_a_runner(project):
    assert "rerun_condition" not in [d["name"] for d in Toolbox(project).definitions]
    ran = []

    def rerun(index: int) -> ConditionEvidence:
        ran.append(index)
        return ConditionEvidence(index=index, type="test_pass", command="pytest", passed=False, exit_code=1,
                                 failure_lines=["FAILED tests/test_calc.py::test_add"], output_tail="1 failed")

    box = Toolbox(project, lambda i: [rerun][i](i))
    assert "rerun_condition" in [d["name"] for d in box.definitions]
    text, error = box.run("rerun_condition", {"index": 0})
    assert ran == [0] and not error
    assert "FAILED (exit 1" in text and "FAILED tests/test_calc.py::test_add" in text
    text, error = box.run("rerun_condition", {"index": 3})
    assert error and "bad arguments" in text and ran == [0]


def test_a_regex_that_backtracks_for_ever_is_stopped_as_a_tool_error(box, project, monkeypatch):
    from goal_convergence.oracle import tools

    monkeypatch.setattr(tools, "GREP_SECONDS", 2.0)
    (project / "slow.txt").write_text("a" * 5001 + "\n")
    started = time.monotonic()
    text, error = box.run("grep", {"pattern": "(a|aa)*c"})
    assert error and "grep stopped after 2 s" in text
    assert time.monotonic() - started < 2 + 3  # the timeout, then TERM and KILL


def test_git_output_is_bounded(box, project):
    from goal_convergence.oracle.tools import MAX_OUTPUT_BYTES

    (project / "big.txt").write_text("x" * 80 + "\n" * 1 + ("y" * 99 + "\n") * 5000)
    text, error = box.run("git", {"command": "diff"}, limit=10**9)
    assert not error and len(text) <= MAX_OUTPUT_BYTES


SECRETS = [".env", ".env.local", "deploy.pem", "server.key", "id_rsa", "credentials.json", ".netrc", ".npmrc",
           ".pypirc"]


@pytest.mark.parametrize("name", SECRETS)
def test_files_that_look_like_secrets_are_refused_unless_the_goal_lists_them(project, name):
    (project / "conf").mkdir()
    (project / "conf" / name).write_text("TOKEN=hunter2hunter2\n")
    box = Toolbox(project)
    text, error = box.run("read_file", {"path": f"conf/{name}"})
    assert error and "secrets" in text and "hunter2" not in text
    found, _ = box.run("grep", {"pattern": "hunter2+"})
    listed, _ = box.run("list_files", {"pattern": "conf/*"})
    assert "hunter2hunter2" not in found and name not in listed
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "oops, a secret")
    shown, error = box.run("git", {"command": "show"})
    assert not error and "hunter2" not in shown
    allowed = Toolbox(project, may_read=[f"conf/{name}"])
    text, error = allowed.run("read_file", {"path": f"conf/{name}"})
    assert not error and "hunter2hunter2" in text


def test_a_hard_link_to_an_outside_file_is_refused(project, tmp_path):
    secret = tmp_path / "outside" / "hard.txt"
    secret.write_text("HARDSECRET\n")
    os.link(secret, project / "notes.txt")
    box = Toolbox(project)
    text, error = box.run("read_file", {"path": "notes.txt"})
    assert error and "hard-linked" in text and "HARDSECRET" not in text
    assert "HARDSECRET" not in box.run("grep", {"pattern": "HARD.ECRET"})[0]
    assert not Toolbox(project, may_read=["notes.txt"]).run("read_file", {"path": "notes.txt"})[1]


def test_the_goals_may_read_list_reaches_the_oracles_tools(project, make_goal, monkeypatch):
    from goal_convergence.models import Goal, OracleConfig
    from goal_convergence.oracle import get_oracle

    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    (project / ".env").write_text("DEBUG=1\n")
    goal = make_goal(project_root=str(project), oracle=OracleConfig(provider="anthropic", model="claude-haiku-5-5",
                                                                    may_read=[".env"]))
    goal = Goal.from_doc(goal.dump())  # as the goal file has it
    text, error = get_oracle(goal.oracle, goal).toolbox.run("read_file", {"path": ".env"})
    assert not error and "DEBUG=1" in text


@pytest.mark.parametrize("tool, args", [("git", {"command": "show", "ref": "HEAD:src/calc.py"}),
                                        ("read_file", {"path": ".git/config"}),
                                        ("grep", {"pattern": "url", "path": ".git/config"})])
def test_no_side_door_into_history_blobs_or_gits_own_files(box, tool, args):
    text, error = box.run(tool, args)
    assert error and ("not a git ref" in text or "git's own files" in text)
