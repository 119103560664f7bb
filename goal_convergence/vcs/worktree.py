"""Worktrees for work done beside the user's tree: a parallel attempt at one goal, or one goal of a wave.

Each is a git worktree on a branch of its own, in a folder under the state home (never inside the
project, where a test runner or a linter of the user's tree would find it). They all start from one
commit of the user's tree as it is on disk, uncommitted and untracked files included and ignored ones
left out (made through checkpoint.py's scratch index, so the user's branch, index and files are not
touched), whose parent is HEAD: a maker begins exactly where the user is, and the branch's log reads as
"the user's tree, then the maker's work". A worktree's changes come back as the diff between its start
and its last commit (``changes``), applied to the user's tree, or by a merge of its branch.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EXIT_UNAVAILABLE, GoalConvergenceError
from ..system import index
from . import checkpoint, git

FOLDER = "worktrees"
ATTEMPTS = "attempt-"  # the names of a goal's parallel attempts' worktrees (attempts.py): attempt-1, attempt-2, ...


class WorktreeError(GoalConvergenceError):
    """A worktree could not be made, committed or removed; the message carries git's words."""

    exit_code = EXIT_UNAVAILABLE


@dataclass(frozen=True)
class Worktree:
    path: Path
    branch: str
    base: str  # the commit it started from


def _git(repo: git.Repo, cwd: Path, *args: str, input: bytes | None = None) -> str:
    # Commits are by the checkpoints' fixed identity: a repository may have no user.name.
    done = repo.run(cwd, *args, env=checkpoint.IDENTITY, input=input)
    if not done.ok:
        reason = (done.err.strip().splitlines() or ["no message"])[-1]
        raise WorktreeError(f"`git {args[0]}` in {cwd} failed: {reason}; see `git worktree list`, "
                            "fix what git names, then try again")
    return done.out.decode("utf-8", "surrogateescape").strip()


def open_repo(root: Path, needed_by: str) -> git.Repo:
    """The project's repository, or WorktreeError saying that ``needed_by`` needs one."""
    try:
        repo = git.open_repo(Path(root))
    except git.UnsafeRepository as exc:
        raise WorktreeError(f"{needed_by} needs git worktrees: {exc}") from None
    if repo is None:
        raise WorktreeError(f"{needed_by} needs the project in a git repository (each worker gets a worktree "
                            f"and a branch); `git init` {root} and commit, then try again")
    return repo


def start_commit(repo: git.Repo, message: str) -> str:
    """A commit of the user's tree as it is on disk, its parent HEAD (none in a repository without one)."""
    try:
        tree = checkpoint.snapshot_tree(repo)
    except checkpoint.CheckpointsOff as exc:
        raise WorktreeError(f"the project's tree could not be copied for the worktrees: {exc}") from None
    head = repo.run(repo.top, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    parent = ["-p", head.out.decode().strip()] if head.ok else []
    return _git(repo, repo.top, "commit-tree", tree, *parent, "-m", message)


def home_for(goal_id: str) -> Path:
    """The folder of one goal's worktrees."""
    return index.home() / FOLDER / goal_id


def branch_for(goal_id: str, name: str) -> str:
    """The branch of a goal's worktree named ``name`` (its folder under ``home_for``)."""
    return f"goal/{goal_id}/{name}"


def refuse_branch(repo: git.Repo, branch: str) -> None:
    """Raise unless ``branch`` is a branch name that is free: an existing branch may hold someone's work."""
    if not repo.run(repo.top, "check-ref-format", "--branch", branch).ok:
        raise WorktreeError(f"{branch!r} is not a branch name git accepts; name another (see `git check-ref-format`)")
    if has_branch(repo, branch):
        raise WorktreeError(f"the branch {branch} exists already; delete it (git branch -D {branch}) or name "
                            "another, then try again")


def name_branch(repo: git.Repo, branch: str, commit: str) -> None:
    """A new branch ``branch`` at ``commit`` (refused when it exists)."""
    refuse_branch(repo, branch)
    _git(repo, repo.top, "branch", branch, commit)


def add(repo: git.Repo, path: Path, branch: str, base: str) -> Worktree:
    """A new worktree at ``path`` on a new branch ``branch`` at ``base``. A branch of that name is refused:
    it may hold someone's work."""
    refuse_branch(repo, branch)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _git(repo, repo.top, "worktree", "add", "-q", "-b", branch, "--", str(path), base)
    return Worktree(path.resolve(), branch, base)


def commit(repo: git.Repo, tree: Worktree, message: str) -> str:
    """Commit everything in the worktree (ignored files left out) on its branch; the branch's commit,
    unchanged when there was nothing to commit."""
    _git(repo, tree.path, "add", "-A", "--", ".")
    if not repo.run(tree.path, "diff", "--cached", "--quiet").ok:
        _git(repo, tree.path, "commit", "-q", "--no-verify", "-m", message)
    return _git(repo, tree.path, "rev-parse", "HEAD")


def changes(repo: git.Repo, tree: Worktree, upto: str) -> bytes:
    """The worktree's work as a binary patch: from its start to the commit ``upto``."""
    done = repo.run(repo.top, "diff", "--binary", "--no-ext-diff", "--no-textconv", tree.base, upto)
    if not done.ok:
        raise WorktreeError(f"the changes of {tree.branch} could not be read: {done.err.strip()}")
    return done.out


def apply(repo: git.Repo, patch: bytes) -> None:
    """Apply ``patch`` to the user's files (not the index), all of it or nothing; WorktreeError when it does not
    apply."""
    refused = try_apply(repo, patch)
    if refused is not None:
        raise WorktreeError(f"`git apply` in {repo.top} failed: {refused.reason}; see `git worktree list`, fix what "
                            "git names, then try again")


def reopen(repo: git.Repo, path: Path, branch: str, base: str) -> Worktree:
    """The worktree at ``path`` on the existing branch ``branch`` (started from ``base``): the one a killed run
    left there, else a new one on that branch, so its work carries on where it stopped."""
    repo.run(repo.top, "worktree", "prune")  # a folder removed by hand no longer holds the branch
    here = repo.run(path, "rev-parse", "--show-toplevel", "--abbrev-ref", "HEAD") if path.is_dir() else None
    # "TOP\nBRANCH\n": a branch holds no newline, the folder's name may (or spaces)
    top, _, name = here.out.rstrip(b"\n").rpartition(b"\n") if here is not None and here.ok else (b"", b"", b"")
    if top and os.fsdecode(top) == str(path.resolve()) and name.decode("utf-8", "replace") == branch:
        return Worktree(path.resolve(), branch, base)
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _git(repo, repo.top, "worktree", "add", "-q", "--", str(path), branch)
    return Worktree(path.resolve(), branch, base)


def has_branch(repo: git.Repo, branch: str) -> bool:
    return repo.run(repo.top, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").ok


# ---- bringing a worktree's work into the user's tree ------------------------------------------------

@dataclass(frozen=True)
class Refused:
    """Work that could not be brought in: the user's tree is as it was."""

    reason: str  # git's words
    files: list[str] = field(default_factory=list)  # the files in conflict, when git named them


def clean(repo: git.Repo) -> bool:
    """Whether the user's tree is its HEAD: nothing uncommitted, nothing untracked (but ignored files)."""
    head = repo.run(repo.top, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    status = repo.run(repo.top, "status", "--porcelain", "--untracked-files=normal")
    return head.ok and status.ok and not status.out.strip()


def from_head(repo: git.Repo, base: str) -> bool:
    """Whether ``base`` (a start commit) is its parent HEAD's tree: the user's tree held no uncommitted work
    then, so a branch from it carries nothing but its own work."""
    return repo.run(repo.top, "diff", "--quiet", f"{base}^", base).ok


def head(repo: git.Repo) -> str:
    return _git(repo, repo.top, "rev-parse", "HEAD")


def merge(repo: git.Repo, branch: str, message: str) -> Refused | None:
    """Merge ``branch`` into the user's current branch as a merge commit (never a fast-forward). On a conflict
    the merge is aborted: the tree and branch are as they were."""
    # The merge lands on the user's branch: theirs when git knows who they are, else the checkpoints' identity.
    who = None if repo.run(repo.top, "var", "GIT_COMMITTER_IDENT").ok else checkpoint.IDENTITY
    done = repo.run(repo.top, "merge", "--no-ff", "--no-edit", "-q", "-m", message, branch, env=who)
    if done.ok:
        return None
    said = (done.out.decode("utf-8", "surrogateescape") + done.err).strip().splitlines()
    files = [os.fsdecode(f) for f in repo.run(repo.top, "diff", "-z", "--name-only", "--diff-filter=U").out.split(b"\0")]
    repo.run(repo.top, "merge", "--abort")
    return Refused(said[-1] if said else "git merge failed", [f for f in files if f])


def undo_merge(repo: git.Repo, before: str) -> None:
    """Take back a merge made on a clean tree: the branch and the files back at ``before``."""
    _git(repo, repo.top, "reset", "-q", "--hard", before)


_APPLY_FILE = re.compile(r"^error: (?:patch failed: (.+):\d+|(.+?): (?:patch does not apply|already exists in "
                         r"working directory|does not exist in (?:index|working tree)|No such file.*))$", re.M)


def try_apply(repo: git.Repo, patch: bytes, *, reverse: bool = False) -> Refused | None:
    """``apply`` (or with ``reverse``, its undo) that reports a patch that does not apply instead of raising."""
    if not patch:
        return None
    done = repo.run(repo.top, "apply", "--whitespace=nowarn", *(["-R"] if reverse else []), "-", input=patch)
    if done.ok:
        return None
    files = list(dict.fromkeys(a or b for a, b in _APPLY_FILE.findall(done.err)))
    return Refused((done.err.strip().splitlines() or ["git apply failed"])[-1], files)


def remove(repo: git.Repo, tree: Worktree, keep_branch: bool = False) -> None:
    """Remove the worktree (its folder too), and its branch unless ``keep_branch``."""
    done = repo.run(repo.top, "worktree", "remove", "--force", "--force", "--", str(tree.path))
    if not done.ok:  # a folder already gone, or a worktree git no longer knows: clear both sides
        shutil.rmtree(tree.path, ignore_errors=True)
        repo.run(repo.top, "worktree", "prune")
    if not keep_branch:
        repo.run(repo.top, "branch", "-D", "-q", tree.branch)


def sweep(root: Path, goal_id: str, prefix: str) -> list[Path]:
    """Remove what a killed run left of a goal's worktrees whose names start with ``prefix``: their folders
    under ``home_for(goal_id)`` and their branches (``branch_for``). No git call when the goal has no folder."""
    folder = home_for(goal_id)
    if not folder.is_dir():
        return []
    left = sorted(folder.glob(f"{prefix}*"))
    try:
        repo = git.open_repo(Path(root))
    except git.UnsafeRepository:
        repo = None
    for path in left:
        if repo is None:
            shutil.rmtree(path, ignore_errors=True)
        else:
            remove(repo, Worktree(path, branch_for(goal_id, path.name), ""))
    if repo is not None:  # a run killed between a folder's removal and its branch's
        found = repo.run(repo.top, "for-each-ref", "--format=%(refname:short)",
                         f"refs/heads/{branch_for(goal_id, prefix)}*")
        for branch in found.out.decode("utf-8", "surrogateescape").split() if found.ok else []:
            repo.run(repo.top, "branch", "-D", "-q", branch)
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when nothing else (another kind of worktree of the goal) is left in it
    return left
