"""A copy of the work tree to run checks in, leaving the user's tree alone: tracked and untracked
files are copied, ignored dependency folders linked, caches and build output left out."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import GoalConvergenceError
from ..storage import config
from ..vcs import tree
from . import protect
from .blobs import Blobs

if TYPE_CHECKING:
    from .integrity import Manifest

# Ignored folders the copy links to instead of copying: installed dependencies.
LINKED = frozenset({"node_modules", ".venv", "venv", "env", ".tox", ".nox"})
# Ignored caches and build output the copy leaves out: stale bytecode, results or test binaries must
# not stand in for a fresh run.
LEFT_OUT = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                      "htmlcov", ".coverage", "target", "build", "dist", ".next", ".turbo", ".parcel-cache"})


def copy_tree(root: Path, copy: Path, remove: set[str]) -> None:
    """Copy the work tree at ``root`` to ``copy`` without the files in ``remove``; refuse past the
    size limit (GOAL_CONVERGENCE_PRISTINE_MAX_MB)."""
    copier = _Copier(root, copy, config.env_settings().pristine_max_mb << 20, remove)
    for rel in tree.list_files(root):
        if rel not in remove:
            copier.file(rel)
    ignored = tree.ignored_entries(root)
    for rel in ignored if ignored is not None else sorted(LINKED):
        copier.ignored(rel)


class _Copier:
    def __init__(self, root: Path, copy: Path, limit: int, remove: set[str]) -> None:
        self.root, self.copy, self.limit, self.remove, self.size = root, copy, limit, remove, 0

    def file(self, rel: str) -> None:
        src, dst = self.root / rel, self.copy / rel
        if src.is_dir() and not src.is_symlink():  # a submodule: its own repository, read as it is
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src, target_is_directory=True)
            return
        if not src.is_symlink() and not src.is_file():
            return  # deleted since it was listed
        self.size += src.lstat().st_size
        if self.size > self.limit:
            raise GoalConvergenceError(
                f"the pristine copy of {self.root} would be over {self.limit >> 20} MB; set "
                f"GOAL_CONVERGENCE_PRISTINE_MAX_MB higher, or move large files out of the project")
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)

    def ignored(self, rel: str) -> None:
        """An entry git ignores: dependencies are linked, caches, build output and the files to
        remove left out, the rest (a generated _version.py, an extension built in place) copied."""
        src, dst = self.root / rel, self.copy / rel
        parts = rel.split("/")
        if not LEFT_OUT.isdisjoint(parts) or not (src.exists() or src.is_symlink()) or dst.exists():
            return
        if parts[-1] in LINKED and src.is_dir():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src.resolve(), target_is_directory=True)
        elif src.is_dir() and not src.is_symlink():
            for folder, dirs, names in os.walk(src):
                base = os.path.relpath(folder, self.root).replace(os.sep, "/")
                for d in [d for d in dirs if d in LINKED]:
                    self.ignored(f"{base}/{d}")
                dirs[:] = [d for d in dirs if d not in LEFT_OUT and d not in LINKED]
                for name in names:
                    self.ignored(f"{base}/{name}")
        elif rel not in self.remove:
            self.file(rel)


@contextlib.contextmanager
def scratch_copy(home: Path, root: Path, manifest: Manifest, remove: set[str], restore: list[str],
                 goal_id: str = "") -> Iterator[tuple[Path, list[str], list[str]]]:
    """A throw-away copy of the work tree with the ``restore`` baseline files as they began and
    ``remove`` left out.

    Yields (copy root, files restored, files that could not be restored). The user's tree is only
    read. Ignored dependency folders are linked; caches and build output are left out."""
    scratch = Path(tempfile.mkdtemp(prefix="goal-pristine-"))
    copy = scratch / (root.name or "project")
    try:
        copy_tree(root, copy, remove)
        restored, unrestorable = [], []
        blobs, kept = Blobs(home, goal_id), set(manifest.kept)
        for rel in restore:
            digest = manifest.files.get(rel)
            if digest is None:
                continue
            data = blobs.read(digest) if rel in kept else None
            if data is None:
                unrestorable.append(rel)
                continue
            target = copy / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.is_symlink():
                target.unlink()
            target.write_bytes(data)
            restored.append(rel)
        yield copy, restored, unrestorable
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def loadable_ignored(root: Path, limit: int) -> list[str]:
    """Files git ignores or excludes that a test run can load code from (the first ``limit``): every one in an
    ignored folder, and in caches and build output (LEFT_OUT, which the copy leaves out) the ones a runner
    loads by itself (a conftest.py, a runner config, a .pth). Installed dependencies (LINKED) are the
    environment's, and bytecode in __pycache__ is never read (checks/pycache.py)."""
    def loads(rel: str) -> bool:
        return LEFT_OUT.isdisjoint(rel.split("/")) or protect.runner_loaded(rel)
    found: list[str] = []
    for entry in tree.ignored_entries(root) or []:
        path = root / entry
        if not LINKED.isdisjoint(entry.split("/")) or entry.split("/")[0] == ".git":
            continue
        if not path.is_dir() or path.is_symlink():
            found += [entry] if loads(entry) else []
            continue
        for folder, dirs, names in os.walk(path):
            dirs[:] = [d for d in dirs if d not in LINKED and d not in (".git", "__pycache__")]
            base = os.path.relpath(folder, root).replace(os.sep, "/")
            found += (rel for rel in (f"{base}/{name}" for name in names) if loads(rel))
    return found[:limit]
