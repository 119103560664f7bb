"""Worktrees beside the user's tree: they start from the tree as it is on disk, never touch the user's
branch, index or files until their changes are applied, and leave nothing behind when removed."""

from __future__ import annotations

import pytest

from goal_convergence.vcs import worktree
from tests.conftest import git


def _state(repo):
    return (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
            git(repo, "diff", "--cached"))


def test_a_worktree_starts_from_the_tree_on_disk_and_the_user_tree_is_untouched(git_repo, gc_home):
    (git_repo / "README.md").write_text("edited, not committed\n")
    (git_repo / "new.txt").write_text("untracked\n")
    (git_repo / ".gitignore").write_text("ignored.txt\n")
    (git_repo / "ignored.txt").write_text("secret\n")
    git(git_repo, "add", ".gitignore")
    before = _state(git_repo)
    repo = worktree.open_repo(git_repo, "the test")
    base = worktree.start_commit(repo, "start")
    tree = worktree.add(repo, worktree.home_for("goal-aaaaaaaa") / "1", "goal/goal-aaaaaaaa/1", base)
    assert _state(git_repo) == before
    assert tree.path.is_relative_to(gc_home)
    assert (tree.path / "README.md").read_text() == "edited, not committed\n"
    assert (tree.path / "new.txt").read_text() == "untracked\n"
    assert not (tree.path / "ignored.txt").exists()
    assert git(git_repo, "rev-parse", f"{base}^") == before[0]


def test_committed_work_comes_back_as_a_patch_and_removal_leaves_nothing(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    tree = worktree.add(repo, worktree.home_for("goal-bbbbbbbb") / "1", "try-1", worktree.start_commit(repo, "s"))
    assert worktree.commit(repo, tree, "nothing") == tree.base  # nothing changed: no commit
    (tree.path / "README.md").write_text("fixed\n")
    (tree.path / "added.bin").write_bytes(b"\0\1\2")
    head = worktree.commit(repo, tree, "work")
    assert head != tree.base
    worktree.apply(repo, worktree.changes(repo, tree, head))
    assert (git_repo / "README.md").read_text() == "fixed\n"
    assert (git_repo / "added.bin").read_bytes() == b"\0\1\2"
    worktree.remove(repo, tree)
    assert not tree.path.exists()
    assert "try-1" not in git(git_repo, "branch", "--list")
    assert git(git_repo, "worktree", "list").count("\n") == 1  # the main one only


def test_a_patch_that_does_not_apply_changes_nothing(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    tree = worktree.add(repo, worktree.home_for("goal-cccccccc") / "1", "try-1", worktree.start_commit(repo, "s"))
    (tree.path / "README.md").write_text("theirs\n")
    (tree.path / "other.txt").write_text("more\n")
    patch = worktree.changes(repo, tree, worktree.commit(repo, tree, "work"))
    (git_repo / "README.md").write_text("the user's own edit meanwhile\n")
    with pytest.raises(worktree.WorktreeError, match="git apply"):
        worktree.apply(repo, patch)
    assert (git_repo / "README.md").read_text() == "the user's own edit meanwhile\n"
    assert not (git_repo / "other.txt").exists()


def test_an_existing_branch_is_refused_and_kept(git_repo, gc_home):
    git(git_repo, "branch", "mine")
    repo = worktree.open_repo(git_repo, "the test")
    with pytest.raises(worktree.WorktreeError, match="branch mine exists"):
        worktree.add(repo, worktree.home_for("goal-dddddddd") / "1", "mine", worktree.start_commit(repo, "s"))
    assert "mine" in git(git_repo, "branch", "--list")


def test_outside_git_the_message_says_to_init(tmp_path):
    with pytest.raises(worktree.WorktreeError, match="git init"):
        worktree.open_repo(tmp_path, "goal wave")


def _worked(repo, goal_id: str, files: dict[str, str]) -> tuple[worktree.Worktree, str]:
    tree = worktree.add(repo, worktree.home_for(goal_id) / "w", f"goal/{goal_id}", worktree.start_commit(repo, "s"))
    for name, text in files.items():
        (tree.path / name).write_text(text)
    return tree, worktree.commit(repo, tree, "work")


def test_a_merge_that_conflicts_names_the_files_and_leaves_the_tree_as_it_was(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    ours, _ = _worked(repo, "goal-eeeeeeee", {"README.md": "ours\n", "a.txt": "a\n"})
    theirs, _ = _worked(repo, "goal-ffffffff", {"README.md": "theirs\n"})
    assert worktree.clean(repo)
    before = worktree.head(repo)
    assert worktree.merge(repo, ours.branch, "goal e") is None
    assert (git_repo / "README.md").read_text() == "ours\n" and git(git_repo, "log", "-1", "--format=%s") == "goal e\n"
    merged = _state(git_repo)
    refused = worktree.merge(repo, theirs.branch, "goal f")
    assert refused is not None and refused.files == ["README.md"] and "conflict" in refused.reason.lower()
    assert _state(git_repo) == merged
    worktree.undo_merge(repo, before)
    assert worktree.head(repo) == before and not (git_repo / "a.txt").exists()


def test_a_patch_is_applied_and_reversed_and_one_that_does_not_apply_names_its_files(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    tree, head = _worked(repo, "goal-gggggggg", {"README.md": "fixed\n", "new.txt": "new\n"})
    patch = worktree.changes(repo, tree, head)
    (git_repo / "mine.txt").write_text("the user's\n")
    assert not worktree.clean(repo)
    assert worktree.try_apply(repo, patch) is None
    assert (git_repo / "README.md").read_text() == "fixed\n" and (git_repo / "new.txt").exists()
    assert worktree.try_apply(repo, patch, reverse=True) is None
    assert (git_repo / "README.md").read_text() == "fixture\n" and not (git_repo / "new.txt").exists()
    (git_repo / "README.md").write_text("the user's own edit\n")
    refused = worktree.try_apply(repo, patch)
    assert refused is not None and refused.files == ["README.md"]
    assert (git_repo / "README.md").read_text() == "the user's own edit\n" and not (git_repo / "new.txt").exists()


def test_reopen_carries_on_in_a_left_worktree_or_makes_one_on_the_kept_branch(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    tree, head = _worked(repo, "goal-hhhhhhhh", {"a.txt": "a\n"})
    (tree.path / "b.txt").write_text("uncommitted\n")
    again = worktree.reopen(repo, tree.path, tree.branch, tree.base)
    assert again == tree and (again.path / "b.txt").exists()  # the very folder, its work in it
    worktree.remove(repo, tree, keep_branch=True)
    again = worktree.reopen(repo, tree.path, tree.branch, tree.base)
    assert (again.path / "a.txt").read_text() == "a\n" and worktree.commit(repo, again, "none") == head


def test_sweep_removes_a_goals_leftover_worktrees_and_branches_of_that_kind_only(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    base = worktree.start_commit(repo, "s")
    gid = "goal-eeeeeeee"
    for name in ("attempt-1", "attempt-2", "other-1"):
        worktree.add(repo, worktree.home_for(gid) / name, worktree.branch_for(gid, name), base)
    git(git_repo, "branch", worktree.branch_for(gid, "attempt-9"), base)  # its folder was gone already
    swept = worktree.sweep(git_repo, gid, worktree.ATTEMPTS)
    assert [p.name for p in swept] == ["attempt-1", "attempt-2"]
    left = git(git_repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/goal/{gid}/")
    assert left.split() == [f"goal/{gid}/other-1"]
    assert [p.name for p in worktree.home_for(gid).iterdir()] == ["other-1"]
    assert worktree.sweep(git_repo, "goal-ffffffff", worktree.ATTEMPTS) == []  # no folder: nothing to do


def test_a_branch_name_git_refuses_is_refused(git_repo, gc_home):
    repo = worktree.open_repo(git_repo, "the test")
    with pytest.raises(worktree.WorktreeError, match="not a branch name"):
        worktree.refuse_branch(repo, "bad..name")
