"""Where a Python test run imports top-level modules from, and which names a module there must not take.

A module found earlier on ``sys.path`` replaces every later one of the same name, for the whole run.
The folders a run puts there: the working folder (``python -m``) and ``src/`` (src layouts); for
each test file and ``conftest.py``, the first folder above it with no ``__init__.py`` (pytest's
default "prepend" import mode inserts it first); the folders of pytest's ``pythonpath`` option. A
module or package in one of them shadows when it takes the name of the standard library, a test
runner, an installed distribution, or the project's own top-level packages and modules (the package
under test) anywhere but where the project defines them.
"""

from __future__ import annotations

import configparser
import re
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..system import pathscan
from . import installed

# Folders a Python test run imports top-level modules from whatever the project: the root, src/.
IMPORT_ROOTS = ("", "src/")
# Test runners and their plugins: a module of the same name on the path replaces the runner.
RUNNER_MODULES = frozenset({"pytest", "_pytest", "py", "pluggy", "unittest", "nose", "nose2", "hypothesis",
                            "coverage", "pytest_cov", "xdist", "doctest", "tox", "nox"})
# Folders whose modules sit beside the tests: with rootdir-relative imports they are on the path.
TEST_DIRS = frozenset({"tests", "test", "__tests__", "testing", "spec", "testdata", "__snapshots__"})
# Files pytest imports with their folder put on the path (its default python_files, and conftest.py).
_COLLECTED = re.compile(r"test_[^/]*\.py|[^/]*_test\.py|conftest\.py")
# Where pytest reads its ``pythonpath`` option at the root, and under which section.
_INI = (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))
# Backwards (pathscan.Paths.ending): a Python file at most one folder down, or two under src/.
_SHALLOW = re.compile(r"\0yp\.[^/\0]*+(?:/[^/\0]*+(?:/crs)?+)?+(?=\0)")
# Top-level files at the root that no test imports as the package under test.
_NOT_OWN = frozenset({"setup", "conftest", "noxfile", "__main__", "manage"})


def shadowed_names(fresh: bool = True) -> frozenset[str]:
    """Module names a file on the path must not take: the standard library, the test runners, and
    every top-level module installed where this Python looks, as it is now (installed.py); ``fresh=False``:
    as last read in this process."""
    return frozenset(sys.stdlib_module_names) | RUNNER_MODULES | installed.names(fresh)


def module(rel: str) -> tuple[str, str] | None:
    """(folder with a trailing slash, or "" for the root; top-level name) of a module or package file."""
    parts = rel.split("/")
    if parts[-1] == "__init__.py" and len(parts) >= 2:
        folder, name = parts[:-2], parts[-2]
    elif parts[-1].endswith(".py"):
        folder, name = parts[:-1], parts[-1][:-3]
    else:
        return None
    return ("/".join(folder) + "/" if folder else ""), name


def own_modules(files: Iterable[str]) -> list[str]:
    """The project's own top-level modules and packages, a package with a trailing slash ("calc",
    "src/pkg/"): the package under test, and the form it has. Only the Python files at the import roots (the
    root, src/) or one folder below (a package's __init__.py) are looked at, found by one pass over all the
    paths (system/pathscan.py)."""
    paths = pathscan.Paths(list(files))
    found = set()
    for rel in paths.picked(paths.ending(_SHALLOW), bool):
        spot = module(rel)
        if spot is None or spot[0] not in IMPORT_ROOTS or spot[1] in _NOT_OWN or _COLLECTED.fullmatch(rel):
            continue
        found.add(spot[0] + spot[1] + ("/" if rel.endswith("/__init__.py") or rel == "__init__.py" else ""))
    return sorted(found)


def pythonpath(root: Path) -> list[str]:
    """The folders pytest's ``pythonpath`` option at the root adds, relative, each with a trailing slash."""
    values: list[str] = []
    for name, section in _INI:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(root / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        values += parser.get(section, "pythonpath", fallback="").split()
    try:
        doc = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        found = doc.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("pythonpath", [])
        values += found.split() if isinstance(found, str) else [str(v) for v in found]
    except (OSError, ValueError, AttributeError):
        pass
    folders = []
    for value in values:
        rel = value.strip().removeprefix("./").strip("/")
        if value.startswith("/") or rel == ".." or rel.startswith("../"):
            continue
        folders.append(rel + "/" if rel and rel != "." else "")
    return folders


@dataclass(frozen=True)
class View:
    """The folders on the test run's path and the project's own modules (as the goal began), and the names
    a module there must not take (``view`` reads them; else as last read in the process: one look at the
    installed ones an inspection, not one a file)."""

    folders: frozenset[str] = frozenset(IMPORT_ROOTS)
    own: frozenset[str] = field(default_factory=frozenset)
    names: frozenset[str] | None = None

    def shadows(self, rel: str) -> bool:
        """A module or package on the path named like one it would replace (not the project's own)."""
        spot = module(rel)
        if spot is None:
            return False
        folder, name = spot
        form = "/" if rel.endswith("__init__.py") else ""
        if folder + name + form in self.own:
            return False  # the project's own module itself
        if folder + name + ("" if form else "/") in self.own:
            return True  # the other form beside it: a package is imported before a module of its name
        beside_tests = bool(folder) and folder.rstrip("/").rsplit("/", 1)[-1] in TEST_DIRS
        if not (folder in self.folders or beside_tests):
            return False
        names = self.names if self.names is not None else shadowed_names(fresh=False)
        return name in names or any(o.rstrip("/").rsplit("/", 1)[-1] == name for o in self.own)


def view(root: Path | None, files: list[str], own: Iterable[str] | None = None,
         present: set[str] | None = None) -> View:
    """The view of ``files`` (the project's, ignored ones included); ``own`` as the goal began, else from them.
    ``present``: every file there is, when ``files`` holds only some (every test file among them)."""
    present = set(files) if present is None else present
    folders = set(IMPORT_ROOTS)
    for rel in files:
        if not _COLLECTED.fullmatch(rel.rsplit("/", 1)[-1]):
            continue
        parts = rel.split("/")[:-1]
        while parts and "/".join(parts) + "/__init__.py" in present:
            parts.pop()
        folders.add("/".join(parts) + "/" if parts else "")
    if root is not None:
        folders.update(pythonpath(root))
    return View(frozenset(folders), frozenset(own_modules(files) if own is None else own), shadowed_names())
