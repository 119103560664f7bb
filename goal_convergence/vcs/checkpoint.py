"""Checkpoints: the project's working tree after each iteration's checks, kept as a git commit object.

A checkpoint holds the tracked files and the untracked ones git does not ignore, as they are on disk. It
is written through a scratch index (a copy of the user's, so unchanged files are not read again) named
by ``GIT_INDEX_FILE``: the user's branch, index, stash and files are never touched. Its ref,
``refs/goal-convergence/GOAL-ID/N``, lies outside ``refs/heads`` and ``refs/tags``, so neither a plain
``git push`` nor ``--tags`` sends it; a remote whose push refspec or mirror setting would send it turns
checkpoints off rather than publish them. Its parent is the goal's previous checkpoint, else the commit
the goal began on, so ``git log`` of a ref reads as the goal's story.

Checkpoints are off (``Goal.checkpointsOff`` says why) outside git, in a repository that is not the
project's own, when a remote would push them, or when one would store more new bytes than
GOAL_CONVERGENCE_CHECKPOINT_MAX_MB. Taking one never fails an iteration: whatever goes wrong is the reason.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import EXIT_UNAVAILABLE, GoalConvergenceError
from ..models import Checkpoint, Goal, Iteration
from ..storage import config
from ..system.log import log_error
from . import git, snapshot

REF_ROOT = "refs/goal-convergence"
OFF_NOTE = "checkpoints are off: "  # begins the iteration note that says so, when the reason is new
# Who a checkpoint commit is by: fixed, so a repository without user.name can still take one.
IDENTITY = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
             for what, value in (("NAME", "goal-convergence"), ("EMAIL", "goal-convergence@localhost"))}


class CheckpointsOff(GoalConvergenceError):
    """No checkpoint can be taken or used here; the message says why and what to do."""

    exit_code = EXIT_UNAVAILABLE


@dataclass(frozen=True)
class Taken:
    """A checkpoint, or why none was taken."""

    checkpoint: Checkpoint | None = None
    off: str | None = None


def ref_for(goal_id: str, label: str | int) -> str:
    return f"{REF_ROOT}/{goal_id}/{label}"


def open_repo(root: Path) -> git.Repo:
    """The project's repository, or CheckpointsOff saying why checkpoints cannot be kept there."""
    try:
        repo = git.open_repo(Path(root))
    except git.UnsafeRepository as exc:
        raise CheckpointsOff(str(exc)) from None
    if repo is None:
        raise CheckpointsOff(f"{root} is not in a git repository, so there is nowhere to keep them; "
                             "`git init` the project to have a checkpoint each iteration")
    return repo


def run(repo: git.Repo, *args: str, env: dict[str, str] | None = None, input: bytes | None = None,
        limit: int | None = None) -> bytes:
    """``git ARGS`` at the top of the work tree; its output, or CheckpointsOff with git's own words."""
    done = repo.run(repo.top, *args, env=env, input=input, limit=limit)
    if not done.ok:
        reason = (done.err.strip().splitlines() or ["no message"])[-1]
        raise CheckpointsOff(f"`git {args[0]}` failed: {reason}")
    return done.out


def _pushed_by(repo: git.Repo, ref: str) -> str | None:
    """A remote setting that would push ``ref``, said for a person; None when none would."""
    done = repo.run(repo.top, "config", "--null", "--get-regexp", r"^remote\..*\.(push|mirror)$")
    for entry in done.out.decode("utf-8", "surrogateescape").split("\0") if done.ok else []:
        key, _, value = entry.partition("\n")
        if key.endswith(".mirror") and value.strip().lower() in ("true", "yes", "on", "1", ""):
            return f"{key} is set, so a push would send every ref"
        source = value.strip().lstrip("+").partition(":")[0]
        if key.endswith(".push") and source and not source.startswith("^") and fnmatch.fnmatchcase(ref, source):
            return f"{key} = {value.strip()} would push {REF_ROOT}/..."
    return None


@contextmanager
def scratch_index(repo: git.Repo, seed: bool = True) -> Iterator[dict[str, str]]:
    """The environment of a private index outside the work tree, seeded with a copy of the user's (whose
    stat data spares git re-reading unchanged files); the user's own index is only read."""
    with tempfile.TemporaryDirectory(prefix="goal-checkpoint-") as folder:
        index = Path(folder) / "index"
        if seed:
            theirs = Path(os.fsdecode(run(repo, "rev-parse", "--git-path", "index").strip()))
            theirs = theirs if theirs.is_absolute() else repo.top / theirs
            if theirs.is_file():
                # with its time: git trusts the stat data of files older than the index, so a copy stamped now
                # would hide a same-size edit made in the second before (git's "racy clean" problem)
                shutil.copy2(theirs, index)
        yield {"GIT_INDEX_FILE": str(index)}


def _new_bytes(repo: git.Repo, env: dict[str, str]) -> int:
    """What a snapshot would have to store: the bytes of untracked files and of tracked ones changed in the
    work tree (a staged change is stored already)."""
    out = run(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", env=env)
    total = 0
    for entry in out.split(b"\0"):
        if entry[:2] == b"??" or entry[1:2] not in (b" ", b""):
            try:
                total += os.lstat(repo.top / os.fsdecode(entry[3:])).st_size
            except OSError:
                pass  # deleted: nothing to store
    return total


def snapshot_tree(repo: git.Repo) -> str:
    """The tree object of the work tree as it is (tracked and untracked files, ignored ones left out)."""
    limit_mb = config.env_settings().checkpoint_max_mb
    with scratch_index(repo) as env:
        size = _new_bytes(repo, env)
        if size > limit_mb << 20:
            raise CheckpointsOff(f"the untracked and changed files ({size / (1 << 20):.0f} MB) are above the "
                                 f"{limit_mb} MB a checkpoint may store; ignore the bulky ones in .gitignore or "
                                 "raise GOAL_CONVERGENCE_CHECKPOINT_MAX_MB")
        run(repo, "add", "-A", "--", ".", env=env)
        return run(repo, "write-tree", env=env).decode().strip()


def tree_of(repo: git.Repo, root: Path) -> str:
    """The tree object of the work tree as it is, from the snapshot of ``root`` (snapshot.py: what changed
    since the last one is hashed, nothing else) when it is of this repository, else ``snapshot_tree``."""
    snap = snapshot.take(root)
    if not isinstance(snap, snapshot.GitSnapshot) or snap.repo.top != repo.top:
        return snapshot_tree(repo)
    if snap.tree is None:
        raise CheckpointsOff(snap.off or "the snapshot holds no tree")
    return snap.tree


def commit_tree(repo: git.Repo, tree: str, parent: str | None, message: str) -> str:
    """A commit of ``tree``; without a parent when there is none, or it is gone (collected after a rebase)."""
    if parent:
        done = repo.run(repo.top, "commit-tree", tree, "-p", parent, "-m", message, env=IDENTITY)
        if done.ok:
            return done.out.decode().strip()
    return run(repo, "commit-tree", tree, "-m", message, env=IDENTITY).decode().strip()


def previous_commit(goal: Goal) -> str | None:
    """The parent of the next checkpoint: the goal's latest checkpoint, else the commit it began on."""
    last = next((it.checkpoint for it in reversed(goal.history) if it.checkpoint), None)
    return last.commit if last else goal.base_commit


def save(repo: git.Repo, goal: Goal, label: str | int, message: str) -> Checkpoint:
    """Snapshot the work tree as a commit under the goal's ``label`` ref."""
    ref = ref_for(goal.goal_id, label)
    pusher = _pushed_by(repo, ref)
    if pusher:
        raise CheckpointsOff(f"{pusher}, and checkpoints must stay on this machine; remove that setting to have "
                             "them")
    parent = previous_commit(goal)
    commit = commit_tree(repo, tree_of(repo, Path(goal.project_root)), parent, message)
    run(repo, "update-ref", ref, commit)
    changed = changed_files(repo, parent, commit) if parent else []
    return Checkpoint(commit=commit, ref=ref, changed=changed[:CHANGED_KEPT], changed_count=len(changed))


CHANGED_KEPT = 20  # the names a checkpoint keeps of what it changed (its diff has them all: `goal diff`)


def changed_files(repo: git.Repo, before: str, after: str) -> list[str]:
    """The paths that differ between two commits; [] when git cannot say (the parent collected, say)."""
    done = repo.run(repo.top, "diff-tree", "-r", "-z", "--no-commit-id", "--name-only", "--no-renames", before, after,
                    "--")
    return sorted(os.fsdecode(p) for p in done.out.split(b"\0") if p) if done.ok else []


def take(goal: Goal, number: int) -> Taken:
    """The checkpoint of iteration ``number``, or why there is none. Never raises: an iteration's
    checks count whether or not its tree could be kept."""
    try:
        repo = open_repo(Path(goal.project_root))
        return Taken(save(repo, goal, number, f"goal-convergence {goal.goal_id} iteration {number}"))
    except GoalConvergenceError as exc:
        return Taken(off=str(exc))
    except OSError as exc:
        return Taken(off=f"the snapshot could not be written: {exc}")


def best(goal: Goal) -> Iteration | None:
    """The iteration with a checkpoint that had the most conditions passing; of equals, the latest."""
    kept = [it for it in goal.history if it.checkpoint]
    return max(kept, key=lambda it: (sum(c.passed for c in it.conditions), it.number), default=None)


def restore_command(goal_id: str, number: int) -> str:
    return f"goal rewind {goal_id} {number}"


def goal_refs(repo: git.Repo, goal_id: str) -> dict[str, tuple[str, str]]:
    """The goal's refs: label -> (commit, tree)."""
    out = run(repo, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(tree)", f"{REF_ROOT}/{goal_id}/")
    refs = {}
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        name, commit, tree = line.split("\0")
        refs[name.rpartition("/")[2]] = (commit, tree)
    return refs


def drop(goal_id: str, project_root: str) -> int:
    """Remove the goal's refs (its checkpoints become unreachable, for git's gc); how many. The goal has
    already ended when this runs, so a failure is logged, never raised."""
    try:
        repo = open_repo(Path(project_root))
    except CheckpointsOff:
        return 0  # outside git (or a folder gone): there are no refs
    try:
        labels = goal_refs(repo, goal_id)
        if labels:
            lines = "".join(f"delete {ref_for(goal_id, label)} {commit}\n" for label, (commit, _) in labels.items())
            run(repo, "update-ref", "--stdin", input=lines.encode())
    except CheckpointsOff as exc:
        log_error("checkpoint", f"the refs of {goal_id} in {project_root} were not removed: {exc}")
        return 0
    return len(labels)
