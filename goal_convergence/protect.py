"""Protected files: the files that define a goal's checks, hashed when the goal is made.

A maker that cannot make a check pass may weaken the check instead (delete a test, skip it, lower a
threshold, edit the script a condition runs). The goal records the test files and configs its
conditions use, and any file given with ``--protect GLOB``, with their hashes; every change to one
is put in front of the oracle as suspect.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from .models import ProtectedFile, StoppingCondition
from .tree import hash_file

MAX_PROTECTED = 300
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache",
              ".ruff_cache", "target", "dist", "build", ".next", "coverage", "htmlcov"}
# Configs first: they are few, and one edited line in them can switch off a whole suite.
CONFIG_NAMES = ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", ".coveragerc",
                "package.json", "jest.config.*", "vitest.config.*", ".eslintrc*", "eslint.config.*",
                "ruff.toml", ".ruff.toml", "mypy.ini", "Cargo.toml", "go.mod", "Makefile")
TEST_NAMES = ("test_*.py", "*_test.py", "*_test.go", "*.test.[jt]s", "*.test.[jt]sx", "*.spec.[jt]s",
              "*.spec.[jt]sx")
TEST_DIRS = frozenset({"tests", "test", "__tests__"})


def detect(root: Path, conditions: Iterable[StoppingCondition], globs: list[str]) -> list[ProtectedFile]:
    """The files that define the checks, with their sha256: files the condition commands name, then
    ``globs`` matches, then configs, then test files; at most ``MAX_PROTECTED``."""
    root = Path(root).resolve()
    files = _files(root)
    ranked: dict[str, None] = {}  # ordered set
    for cond in conditions:
        for word in _words(cond.command):
            rel = os.path.normpath(word).replace(os.sep, "/")
            if not rel.startswith("../") and not os.path.isabs(rel) and (root / rel).is_file():
                ranked[rel] = None
    for pattern in globs:
        ranked.update(dict.fromkeys(f for f in files if _glob_match(f, pattern)))
    ranked.update(dict.fromkeys(f for f in files if _name_match(f, CONFIG_NAMES)))
    ranked.update(dict.fromkeys(f for f in files if _name_match(f, TEST_NAMES)
                                or not TEST_DIRS.isdisjoint(f.split("/")[:-1])))
    return [ProtectedFile(path=rel, sha256=hash_file(root / rel)) for rel in list(ranked)[:MAX_PROTECTED]]


def changed(root: Path, protected: Iterable[ProtectedFile]) -> list[str]:
    """The protected files whose content differs from when the goal was made (deleted ones too)."""
    return [p.path for p in protected if hash_file(Path(root) / p.path) != p.sha256]


def _files(root: Path) -> list[str]:
    """Every file under root, tracked or not, skipping VCS, dependency and build folders."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        found.extend(n if rel == "." else f"{rel}/{n}" for n in sorted(names))
    return found


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: the shell would refuse it too; take what is there
        return command.split()


def _name_match(rel: str, patterns: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _glob_match(rel: str, pattern: str) -> bool:
    pattern = pattern.removeprefix("./")
    return fnmatch.fnmatchcase(rel, pattern) or (pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]))
