"""The home trusts nothing it did not write: a goal, triage or evidence file that is a symlink, another user's,
or writable by others is refused (quarantined, never listed or run); nothing is written through a symlink
planted where a lock, the log or a goal's evidence folder goes; and every folder is 0700 whatever the umask."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from goal_convergence.system import log
from tests.conftest import run_goal


@pytest.fixture
def planted(git_repo, tmp_path):
    """A goal whose check leaves a marker when it runs: proof that a refused goal never ran."""
    marker = tmp_path / "ran"
    made = run_goal(git_repo, "new", "make it pass", "--check", f"touch {marker} && false", "--oracle", "conditions",
                    "--max-iterations", "1", "--json")
    assert made.returncode == 0, made.stderr
    marker.unlink(missing_ok=True)
    return json.loads(made.stdout)["goalId"], marker


def _refused(git_repo, gc_home, goal_id, marker) -> None:
    listed = run_goal(git_repo, "list", "--all")
    assert listed.returncode == 0, listed.stderr
    assert f"{goal_id} " not in listed.stdout and "goal-convergence did not write it" in listed.stdout, listed.stdout
    ran = run_goal(git_repo, "run", goal_id, "--maker-cmd", "true")
    assert ran.returncode in (65, 66, 70), ran.stderr
    assert not marker.exists(), "the check of a goal file we did not write ran"
    assert not (gc_home / "goals" / f"{goal_id}.json").exists()  # moved to quarantine/


@pytest.mark.parametrize("how", ["writable by others", "another user's"])
def test_a_goal_file_we_did_not_write_is_refused_and_never_run(planted, git_repo, gc_home, how):
    goal_id, marker = planted
    path = gc_home / "goals" / f"{goal_id}.json"
    if how == "writable by others":
        path.chmod(0o666)
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        os.chown(path, 4242, 4242)
    _refused(git_repo, gc_home, goal_id, marker)


def test_a_goal_file_that_is_a_symlink_is_refused_and_never_run(planted, git_repo, gc_home, tmp_path):
    goal_id, marker = planted
    path = gc_home / "goals" / f"{goal_id}.json"
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(path, elsewhere)
    path.symlink_to(elsewhere)
    _refused(git_repo, gc_home, goal_id, marker)
    assert elsewhere.exists()


def test_a_symlink_planted_at_a_lock_is_not_written_through(planted, git_repo, gc_home, tmp_path):
    goal_id, _ = planted
    lock = gc_home / "locks" / f"{goal_id}.json.lock"
    lock.unlink()
    victim = tmp_path / "victim"
    lock.symlink_to(victim)
    done = run_goal(git_repo, "pause", goal_id)
    assert done.returncode == 73 and "symbolic link" in done.stderr and str(lock) in done.stderr, done.stderr
    assert not victim.exists()


def test_a_symlink_planted_at_the_log_is_not_written_through(gc_home, tmp_path):
    victim = tmp_path / "victim.log"
    (gc_home / "logs").mkdir(parents=True, mode=0o700)
    (gc_home / "logs" / "goal-convergence.log").symlink_to(victim)
    assert log.log_error("test", "a traceback") is None
    assert not victim.exists()


def test_a_symlink_planted_at_a_goals_evidence_folder_is_not_written_through(git_repo, gc_home, tmp_path):
    noisy = tmp_path / "noisy.py"
    noisy.write_text("print('x' * 5000)\nraise SystemExit(1)\n")  # more evidence than a goal file keeps inline
    made = run_goal(git_repo, "new", "make it pass", "--check", f"{sys.executable} {noisy}", "--oracle",
                    "conditions", "--max-iterations", "1", "--json")
    goal_id = json.loads(made.stdout)["goalId"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (gc_home / "goals" / f"{goal_id}.d").symlink_to(outside)
    done = run_goal(git_repo, "run", goal_id, "--maker-cmd", "true")
    assert list(outside.iterdir()) == [], "evidence was written through a planted symlink"
    assert "unexpected" not in done.stderr, done.stderr


def test_every_folder_is_private_whatever_the_umask(git_repo, gc_home):
    """`goal new` and a run under umask 000: every folder of the home 0700, every file 0600."""
    script = ("import os, sys; os.umask(0); from goal_convergence.entry import run; sys.exit(run(sys.argv[1:]))")
    for args in (["new", "make it pass", "--check", "false", "--oracle", "conditions", "--max-iterations", "1"],
                 ["run", "--maker-cmd", "true"]):
        done = subprocess.run([sys.executable, "-c", script, *args], cwd=git_repo, capture_output=True, text=True)
        assert done.returncode in (0, 4), done.stderr
    loose = []
    for folder, dirs, files in os.walk(gc_home):
        for name in dirs:
            mode = stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode)
            if mode & 0o077:
                loose.append(f"{os.path.join(folder, name)} {mode:04o}")
        for name in files:
            mode = stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode)
            if mode & 0o077:
                loose.append(f"{os.path.join(folder, name)} {mode:04o}")
    assert not loose, loose
