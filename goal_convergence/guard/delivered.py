"""The tree a green run checked is the tree at the end of the run.

A process the maker leaves running can swap the fixed file in while the checks run and the broken
one back once they are done: the content at the end is what it was at the start, so the tree's
fingerprints before and after the checks agree. Each file's ctime tells: the kernel sets it on
every write and no user can set it back, so a project file (tracked, or untracked and not ignored;
caches, coverage data and build output left out) whose ctime is at or after the checks began was
written while they ran. With the files listed before and after, one added or deleted is seen too,
so no second fingerprint of the tree is needed: any change of content moves a ctime.

A file the checks create is counted only when it is code (a source, a runner config, a Python hook):
tests write reports, logs and snapshots into the project, and none of those changes what a check runs.
A test that rewrites a file that was there before moves the tree as well; ignoring that output in
.gitignore ends it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..models import ConditionEvidence, Integrity, IntegrityIssue
from ..vcs import snapshot, tree
from . import protect
from .scratch import LEFT_OUT, LINKED

LISTED = 10
# Linux stamps a write's ctime from its coarse clock (before multigrain timestamps, 6.13), which lags the precise
# one by up to a tick: a write just after time.time_ns() could bear an earlier ctime. CLOCK_REALTIME_COARSE, which
# the time module does not name.
_COARSE = 5 if sys.platform.startswith("linux") else None
_TICK = 0.02  # seconds: the longest wait for it (a tick is 1 to 10 ms)


def began_ns() -> int:
    """Now, once the kernel's coarse clock has caught up with it: a write before bears an earlier ctime, a write
    after a ctime at or after it, whichever clock stamps it."""
    began = time.time_ns()
    deadline = time.monotonic() + _TICK
    try:
        while _COARSE is not None and time.clock_gettime_ns(_COARSE) < began and time.monotonic() < deadline:
            time.sleep(0.0005)
    except OSError:
        pass  # no such clock here: the precise one is the kernel's
    return began


def watch(root: Path) -> Callable[[], list[str]]:
    """Note the tree as the checks begin. The function returned names the project files written, added or
    deleted since, build output left out (scratch.LEFT_OUT: the pristine copy leaves it out too)."""
    began, before = began_ns(), snapshot.take(root)
    # Listed, not hashed: the snapshot as the checks end hashes all that moved since the one before (the maker's
    # edits and whatever the checks wrote) at once, and of those, the ctimes tell which moved after they began.
    there = before.listed

    def moved() -> list[str]:
        return [rel for rel in tree.changed_since(root, began, there)
                if LEFT_OUT.isdisjoint(rel.split("/")) and LINKED.isdisjoint(rel.split("/"))
                and (rel in there or protect.is_code(rel))]

    return moved


def refusal(files: list[str], found: list[ConditionEvidence]) -> Integrity:
    """The guard's answer for a run whose tree moved: no pristine run (which tree would it restore?), and
    enforced whatever the goal says of its tests, as a moving tree is never the objective's doing."""
    shown = ", ".join(files[:LISTED]) + (f" and {len(files) - LISTED} more" if len(files) > LISTED else "")
    issue = IntegrityIssue(kind="files-moved", subject=files[0],
                           detail=f"{shown} changed while the checks ran, so the tree they checked is not the "
                                  f"tree delivered")
    return Integrity(enforced=True, issues=[issue], census=[e.census for e in found],
                     pristine_note="skipped, as the files changed while the checks ran")
