"""Git, through git.py, runs nothing the repository plants and reads no repository but the project's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from goal_convergence.oracle.tools import Toolbox
from goal_convergence.vcs import git as safe_git
from goal_convergence.vcs import tree
from tests.conftest import git


def plant(repo: Path, marker: Path) -> list[str]:
    """Every program a repository can make git run on a read: a clean filter, a long-running filter
    process, fsmonitor, a textconv, an external diff, a pager, a hook; each one writes ``marker``."""
    script = repo.parent / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\ncat\n")
    script.chmod(0o755)
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n*.txt filter=proc\n")
    settings = [("filter.evil.clean", str(script)), ("filter.evil.smudge", str(script)),
                ("filter.evil.required", "true"), ("filter.proc.process", str(script)),
                ("core.fsmonitor", str(script)), ("diff.evil.textconv", str(script)),
                ("diff.evil.command", str(script)), ("diff.external", str(script)), ("core.pager", str(script)),
                ("pager.diff", str(script)), ("core.hooksPath", str(repo.parent)), ("log.showSignature", "true"),
                ("gpg.program", str(script))]
    for hook in ("post-index-change", "reference-transaction"):
        (repo.parent / hook).write_text(f"#!/bin/sh\necho hook >> {marker}\n")
        (repo.parent / hook).chmod(0o755)
    for key, value in settings:
        git(repo, "config", key, value)
    return [key for key, _ in settings]


@pytest.fixture
def planted(git_repo, tmp_path):
    (git_repo / "calc.py").write_text("x = 1\n")
    (git_repo / "notes.txt").write_text("a\n")
    git(git_repo, "add", "-A")
    git(git_repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "code")
    marker = tmp_path / "ran"
    plant(git_repo, marker)
    # stat-dirty and content-dirty files: git must read them, the moment a filter would run
    (git_repo / "calc.py").write_text("x = 2\n")
    (git_repo / "notes.txt").write_text("b\n")
    os.utime(git_repo / "README.md", (1, 1))
    return git_repo, marker


def test_the_engines_git_runs_nothing_the_repository_plants(planted):
    repo, marker = planted
    assert tree.head_commit(repo)
    assert "calc.py" in tree.diff_stat(repo, None)
    assert "calc.py" in tree.list_files(repo)
    tree.tree_fingerprint(repo)
    tree.ignored_entries(repo)
    assert not marker.exists(), marker.read_text()


def test_the_oracles_git_runs_nothing_the_repository_plants(planted):
    repo, marker = planted
    box = Toolbox(repo)
    for args in ({"command": "status"}, {"command": "diff"}, {"command": "diff", "stat": True},
                 {"command": "log", "stat": True}, {"command": "show"}, {"command": "show", "stat": True}):
        text, error = box.run("git", args)
        assert not error, (args, text)
    assert "x = 2" in box.run("git", {"command": "diff"})[0]
    assert not marker.exists(), marker.read_text()


def test_a_gitdir_pointing_at_another_repository_is_refused(tmp_path, git_repo):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "private.txt").write_text("other repository\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "private")
    project = tmp_path / "project2"
    project.mkdir()
    (project / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with pytest.raises(safe_git.UnsafeRepository, match="not this project's"):
        safe_git.open_repo(project)
    text, error = Toolbox(project).run("git", {"command": "show", "stat": True})
    assert error and "not this project's" in text and "private" not in text
    assert tree.diff_stat(project, None) == "" and tree.head_commit(project) is None


def test_a_work_tree_moved_elsewhere_by_core_worktree_is_refused(tmp_path, git_repo):
    git(git_repo, "config", "core.worktree", str(tmp_path))
    with pytest.raises(safe_git.UnsafeRepository, match="outside it|not this project"):
        safe_git.open_repo(git_repo)


def test_a_linked_worktree_and_a_subfolder_are_the_projects_own(git_repo, tmp_path):
    linked = tmp_path / "linked"
    git(git_repo, "worktree", "add", "-q", str(linked))
    assert safe_git.open_repo(linked).top == linked.resolve()
    (git_repo / "sub").mkdir()
    assert safe_git.open_repo(git_repo / "sub").top == git_repo.resolve()


def test_variables_that_redirect_git_are_dropped(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "/bin/false")
    assert tree.head_commit(git_repo)


def test_a_submodule_is_its_own_project(git_repo, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "lib.py").write_text("x = 1\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    git(git_repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    sub = git_repo / "vendor" / "lib"
    assert (sub / ".git").is_file()  # gitdir: ../../.git/modules/vendor/lib, outside the submodule's folder
    assert safe_git.open_repo(sub).top == sub.resolve()
    assert tree.list_files(sub) == ["lib.py"]
