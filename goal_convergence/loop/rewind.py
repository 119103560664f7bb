"""Going back to a checkpoint: `goal rewind` brings the project's files to an iteration's snapshot, and
`goal diff` shows what an iteration changed.

A rewind first snapshots the tree as it is under ``refs/goal-convergence/GOAL-ID/rewind-K``, so it can
itself be undone (``goal rewind GOAL-ID rewind-K``), and refuses, unless forced, when the tree holds
changes that neither a checkpoint of the goal nor the last commit holds. It then deletes the files the
checkpoint does not have and writes those that differ, through a scratch index: ignored files are left
alone, and the user's index, branch and stash are not touched (``git status`` then shows the rewound files as changes, as after any edit).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import GoalNotFound, InvalidInput, RunnerBusy
from ..models import Goal
from ..storage.store import Store
from ..vcs import checkpoint, git
from ..vcs.checkpoint import CheckpointsOff, run
from . import claim

_UNDO = re.compile(r"^rewind-([1-9][0-9]*)$")


class UnsavedChanges(InvalidInput):
    """The tree holds changes a rewind would lose and no checkpoint holds."""


@dataclass(frozen=True)
class Target:
    label: str  # "3", or "rewind-2"
    commit: str
    iteration: int | None = None


@dataclass(frozen=True)
class Rewound:
    goal_id: str
    target: Target
    undo: str | None  # the label of the snapshot taken first; None when the tree already matched
    deleted: int = 0
    written: int = 0

    @property
    def undo_command(self) -> str | None:
        return f"goal rewind {self.goal_id} {self.undo}" if self.undo else None

    def text(self) -> str:
        what = f"iteration {self.target.iteration}" if self.target.iteration else self.target.label
        head = f"{self.goal_id}: the files are back to {what} (checkpoint {self.target.commit[:12]})"
        if self.undo is None:
            return f"{head}; they already were, nothing changed"
        return (f"{head}: {self.written} written, {self.deleted} deleted.\n"
                f"The tree before is kept as checkpoint {self.undo}; undo with: {self.undo_command}")


def _repo(goal: Goal) -> git.Repo:
    if goal.checkpoints_off and not any(it.checkpoint for it in goal.history):
        raise CheckpointsOff(f"goal {goal.goal_id} has no checkpoints: they are off ({goal.checkpoints_off})")
    return checkpoint.open_repo(Path(goal.project_root))


def _kept(goal: Goal) -> str:
    numbers = [str(it.number) for it in goal.history if it.checkpoint]
    return f"iterations with one: {', '.join(numbers)}" if numbers else "it has none yet"


def target(repo: git.Repo, goal: Goal, label: str | None, best: bool) -> Target:
    """The checkpoint named by an iteration number or ``rewind-K``, or the best one."""
    if best:
        found = checkpoint.best(goal)
        if found is None or found.checkpoint is None:
            raise GoalNotFound(f"goal {goal.goal_id} has no checkpoint to rewind to; {_kept(goal)}")
        return Target(str(found.number), found.checkpoint.commit, found.number)
    if label is None:
        raise InvalidInput("name the iteration to go back to (`goal rewind ID N`), or give --best")
    if _UNDO.match(label):
        refs = checkpoint.goal_refs(repo, goal.goal_id)
        if label not in refs:
            raise GoalNotFound(f"goal {goal.goal_id} has no checkpoint {label}; "
                               f"`git for-each-ref {checkpoint.REF_ROOT}/{goal.goal_id}/` lists those it has")
        return Target(label, refs[label][0])
    if not label.isdigit():
        raise InvalidInput(f"{label!r} is not an iteration number or a rewind checkpoint like rewind-1")
    number = int(label)
    it = next((it for it in goal.history if it.number == number and it.checkpoint), None)
    if it is None or it.checkpoint is None:
        raise GoalNotFound(f"goal {goal.goal_id} has no checkpoint of iteration {number}; {_kept(goal)}")
    if not repo.run(repo.top, "cat-file", "-e", f"{it.checkpoint.commit}^{{commit}}").ok:
        raise GoalNotFound(f"the checkpoint of iteration {number} ({it.checkpoint.commit[:12]}) is no longer in "
                           "the repository (its refs were removed and git collected it)")
    return Target(str(number), it.checkpoint.commit, number)


def _entries(repo: git.Repo, treeish: str) -> dict[str, str]:
    """The files of a tree: path -> mode and object (submodules left out)."""
    out = run(repo, "ls-tree", "-r", "-z", "--full-tree", treeish)
    found = {}
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, obj = meta.decode().split()
        if kind == "blob":
            found[os.fsdecode(path)] = f"{mode} {obj}"
    return found


def _held(repo: git.Repo, goal: Goal, tree: str) -> bool:
    """Whether a goal checkpoint, the last commit or the goal's base commit holds exactly this tree."""
    trees = {t for _, t in checkpoint.goal_refs(repo, goal.goal_id).values()}
    for rev in ("HEAD", goal.base_commit):
        done = repo.run(repo.top, "rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}") if rev else None
        if done is not None and done.ok:
            trees.add(done.out.decode().strip())
    return tree in trees


def _prune(folder: Path, top: Path) -> None:
    """Remove folders left empty by deletions, up to (not including) the top of the work tree."""
    while folder != top and folder.is_relative_to(top):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _restore(repo: git.Repo, commit: str, now: dict[str, str], then: dict[str, str]) -> tuple[int, int]:
    gone = sorted(set(now) - set(then))
    for rel in gone:
        path = repo.top / rel
        if path.is_symlink() or path.is_file():
            path.unlink()
            _prune(path.parent, repo.top)
    changed = [rel for rel, entry in then.items() if now.get(rel) != entry]
    if changed:
        with checkpoint.scratch_index(repo, seed=False) as env:
            run(repo, "read-tree", commit, env=env)
            run(repo, "checkout-index", "-f", "-z", "--stdin", env=env,
                input=b"".join(os.fsencode(rel) + b"\0" for rel in changed))
    return len(gone), len(changed)


def rewind(store: Store, goal_id: str, label: str | None, *, best: bool = False, force: bool = False) -> Rewound:
    """Bring the goal's project files back to a checkpoint, the tree before kept as a new one."""
    goal = store.load(Goal, goal_id)
    busy = claim.live_runner(goal, datetime.now(UTC))
    if busy:
        raise RunnerBusy(f"goal {goal_id} is being worked by `goal run` (pid {busy.pid} on {busy.host}, since "
                         f"{busy.since}), whose maker would go on from files it did not leave; pause it first "
                         f"(`goal pause {goal_id}`) or wait for it to end, then rewind")
    repo = _repo(goal)
    to = target(repo, goal, label, best)
    current = checkpoint.snapshot_tree(repo)
    if current == run(repo, "rev-parse", f"{to.commit}^{{tree}}").decode().strip():
        return Rewound(goal_id, to, None)
    if not force and not _held(repo, goal, current):
        raise UnsavedChanges(f"the files of {repo.top} hold changes that no checkpoint of goal {goal_id} and no "
                             f"commit holds; commit or stash them first, or rerun with --force (the tree is then "
                             f"kept as a rewind checkpoint, so the rewind can still be undone)")
    numbers = [int(m.group(1)) for m in map(_UNDO.match, checkpoint.goal_refs(repo, goal_id)) if m]
    undo = f"rewind-{max(numbers, default=0) + 1}"
    before = checkpoint.commit_tree(repo, current, checkpoint.previous_commit(goal),
                                    f"goal-convergence {goal_id}: the tree before rewinding to {to.label}")
    run(repo, "update-ref", checkpoint.ref_for(goal_id, undo), before)
    deleted, written = _restore(repo, to.commit, _entries(repo, current), _entries(repo, to.commit))
    return Rewound(goal_id, to, undo, deleted, written)


def diff(store: Store, goal_id: str, first: int | None = None, second: int | None = None, stat: bool = False) -> str:
    """What iteration ``first`` changed (against the checkpoint before it; the latest when None), or the
    change from ``first`` to ``second``. Iteration 0 is the commit the goal began on."""
    goal = store.load(Goal, goal_id)
    repo = _repo(goal)
    if first is None:
        last = next((it for it in reversed(goal.history) if it.checkpoint), None)
        if last is None:
            raise GoalNotFound(f"goal {goal_id} has no checkpoint yet; one is taken after each iteration's checks")
        first = last.number
    if second is None:
        old, new = f"{_commit(repo, goal, first)}^", _commit(repo, goal, first)
        if not repo.run(repo.top, "rev-parse", "--verify", "--quiet", old).ok:  # no parent: a repo with no commit
            old = run(repo, "hash-object", "-t", "tree", "-w", "--stdin", input=b"").decode().strip()
    else:
        old, new = _commit(repo, goal, first), _commit(repo, goal, second)
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", *(["--stat"] if stat else []), old, new, "--"]
    return run(repo, *args).decode("utf-8", "replace")


def _commit(repo: git.Repo, goal: Goal, number: int) -> str:
    if number == 0:
        if goal.base_commit:
            return goal.base_commit
        raise GoalNotFound(f"goal {goal.goal_id} began in a repository with no commit, so it has no iteration 0")
    return target(repo, goal, str(number), False).commit
