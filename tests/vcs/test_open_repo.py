"""git.open_repo keeps its answer for the process only while nothing it was read from moved: a filter added
between two calls anywhere git reads config (an included file, the global config, an includeIf whose branch
came true) is still emptied, and git still runs nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from goal_convergence.vcs import git as safe_git
from goal_convergence.vcs import tree
from tests.conftest import git


@pytest.fixture
def kept(monkeypatch):
    """Answers kept however new the config files are (they were all written a moment ago; the racy rule has a
    test of its own), in an empty cache of this process."""
    monkeypatch.setattr(safe_git, "RACY_SECONDS", -10**6)
    monkeypatch.setattr(safe_git, "_opened", {})


@pytest.fixture
def evil(git_repo, tmp_path):
    """A committed .py file with a filter named in .gitattributes whose driver nobody configured yet, and the
    script any configuration of it would run (it writes ``tmp_path/ran``)."""
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'ran'}\ncat\n")
    script.chmod(0o755)
    (git_repo / ".gitattributes").write_text("*.py filter=evil\n")
    (git_repo / "calc.py").write_text("x = 1\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "code")
    return git_repo, script


def filter_config(script: Path) -> str:
    return f'[filter "evil"]\n\tclean = {script}\n\tsmudge = {script}\n\trequired = true\n'


def runs_nothing(repo: Path) -> bool:
    (repo / "calc.py").write_text("x = 2\n")  # content-dirty: git must read it, the moment a filter would run
    assert "calc.py" in tree.diff_stat(repo, None)
    tree.tree_fingerprint(repo)
    return not (repo.parent / "ran").exists()


def test_the_answer_is_kept_while_nothing_moved(git_repo, kept):
    first = safe_git.open_repo(git_repo)
    assert first is not None and safe_git.open_repo(git_repo) is first
    assert safe_git.open_repo(git_repo / ".") is first


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize("folder", ["", "sub/deeper"])
def test_a_filter_added_to_an_included_file_between_two_calls_is_emptied(evil, kept, exists, folder):
    """From the top or a folder below it (git names the config files from the top, wherever it starts)."""
    repo, script = evil
    (repo / folder).mkdir(parents=True, exist_ok=True)
    included = repo / ".git" / "extra.cfg"
    if exists:
        included.write_text("[core]\n\tautocrlf = false\n")
    git(repo, "config", "include.path", "extra.cfg")
    first = safe_git.open_repo(repo / folder)
    assert first is not None and "filter.evil.clean=" not in first._safe
    included.write_text(filter_config(script))
    again = safe_git.open_repo(repo / folder)
    assert again is not first and "filter.evil.clean=" in again._safe
    assert runs_nothing(repo)


def test_a_filter_in_a_file_an_included_file_includes_is_seen(evil, kept, tmp_path):
    repo, script = evil
    (tmp_path / "one.cfg").write_text("[include]\n\tpath = two.cfg\n")
    git(repo, "config", "include.path", str(tmp_path / "one.cfg"))
    assert "filter.evil.clean=" not in safe_git.open_repo(repo)._safe
    (tmp_path / "two.cfg").write_text(filter_config(script))
    assert "filter.evil.clean=" in safe_git.open_repo(repo)._safe
    assert runs_nothing(repo)


def test_a_filter_added_to_the_global_config_is_seen(evil, kept):
    repo, script = evil
    global_config = Path(os.environ["HOME"]) / ".gitconfig"
    assert "filter.evil.clean=" not in safe_git.open_repo(repo)._safe
    with global_config.open("a") as fh:
        fh.write(filter_config(script))
    assert "filter.evil.clean=" in safe_git.open_repo(repo)._safe
    assert runs_nothing(repo)


def test_an_include_whose_branch_comes_true_is_seen(evil, kept, tmp_path):
    repo, script = evil
    (tmp_path / "branch.cfg").write_text(filter_config(script))
    git(repo, "config", "includeIf.onbranch:other.path", str(tmp_path / "branch.cfg"))
    assert "filter.evil.clean=" not in safe_git.open_repo(repo)._safe
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "switch", "-q", "-c", "other"], cwd=repo, check=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}, capture_output=True)
    assert "filter.evil.clean=" in safe_git.open_repo(repo)._safe


def test_a_repository_made_in_a_subfolder_or_removed_moves_the_answer(git_repo, kept):
    sub = git_repo / "sub"
    sub.mkdir()
    assert safe_git.open_repo(sub).top == git_repo.resolve()
    git(sub, "init", "-q")
    assert safe_git.open_repo(sub).top == sub.resolve()
    subprocess.run(["rm", "-rf", str(sub / ".git"), str(git_repo / ".git")], check=True)
    assert safe_git.open_repo(sub) is None


def test_config_written_a_moment_ago_cannot_vouch_for_the_answer(git_repo, monkeypatch):
    monkeypatch.setattr(safe_git, "_opened", {})
    git(git_repo, "config", "core.autocrlf", "false")  # a write now: its ctime is too recent to vouch
    first = safe_git.open_repo(git_repo)
    assert first is not None and safe_git.open_repo(git_repo) is not first
