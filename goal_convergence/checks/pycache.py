"""Bytecode of our own: the conditions run with ``PYTHONPYCACHEPREFIX`` set to a folder of ours.

Python then neither reads nor writes ``__pycache__`` folders in the project (or anywhere else: the
prefix covers the standard library and site-packages too, and pytest's assertion rewriting honours
it), so bytecode planted beside the sources cannot stand in for them. A sourceless ``foo.pyc`` on
the import path still imports: the guard keeps those check-sensitive (protect.PYTHON_HOOKS).

The folder is kept between our runs, one a project: compiling everything a test run imports again
costs a third of a small pytest run (measured: 3.7 s with the folder kept, 5.3 s with a fresh one).
The maker can write there as well as we can, so the folder's state (every entry's inode, size and
times, ctime included, which no user can set) is noted after each of our runs, and a folder found
otherwise before the next one is wiped first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import GoalConvergenceError
from ..system import files
from ..system.index import home

ENV = "PYTHONPYCACHEPREFIX"


def folder(project: Path) -> Path:
    """The bytecode folder of the conditions run for ``project`` (under the home)."""
    key = hashlib.sha256(os.fsencode(str(Path(project).resolve()))).hexdigest()[:16]
    return home() / "pycache" / key


def state(path: Path) -> str:
    """A digest of every entry under ``path`` with its inode, size, mode and times (ctime included)."""
    total = hashlib.sha256()
    for base, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(dirs + names):
            full = os.path.join(base, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            total.update(f"{os.path.relpath(full, path)}\0{st.st_ino} {st.st_size} {st.st_mode} "
                         f"{st.st_mtime_ns} {st.st_ctime_ns}\n".encode("utf-8", "surrogateescape"))
    return total.hexdigest()


def _seen(path: Path) -> Path:
    return path.with_name(path.name + ".seen")


@contextlib.contextmanager
def prefix(project: Path, forget: Path | None = None) -> Iterator[Path]:
    """The bytecode folder to run ``project``'s conditions with, as our last run left it.

    ``forget`` is a source folder whose bytecode is dropped when the run is done (a throw-away copy
    of the project). Without a writable home, a fresh temporary folder serves, removed afterwards."""
    path = folder(project)
    try:
        if path.exists():
            try:
                trusted = _seen(path).read_text() == state(path)
            except OSError:
                trusted = False
            if not trusted:  # written by someone else since our last run
                shutil.rmtree(path)
        files.private_folder(path)
    except (OSError, GoalConvergenceError):
        with tempfile.TemporaryDirectory(prefix="goal-pycache-") as fresh:
            yield Path(fresh)
        return
    try:
        yield path
    finally:
        if forget is not None:
            _drop(path, path / Path(forget).resolve().relative_to("/"))
        else:
            _drop_racy(path, Path(project))
        with contextlib.suppress(OSError):
            files.write_atomic(_seen(path), state(path).encode())


def _drop_racy(path: Path, project: Path) -> None:
    """Remove the bytecode of the project's sources changed in the last two seconds. Python trusts bytecode
    whose source has the size and the mtime, in whole seconds, it was compiled from: an edit of the same
    size later in the same second (a maker's next fix) would run the old code."""
    recent = time.time() - 2
    for pyc in (path / project.resolve().relative_to("/")).rglob("*.pyc"):
        source = Path("/") / pyc.parent.relative_to(path) / (pyc.name.split(".", 1)[0] + ".py")
        try:
            if source.stat().st_mtime >= recent:
                pyc.unlink()
        except OSError:
            continue


def _drop(path: Path, mirror: Path) -> None:
    """Remove ``mirror`` and the folders above it that it leaves empty, up to ``path``."""
    shutil.rmtree(mirror, ignore_errors=True)
    for parent in mirror.parents:
        if parent == path:
            break
        try:
            parent.rmdir()
        except OSError:
            break
