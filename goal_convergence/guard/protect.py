"""Which files define a goal's checks, and which new files could change what the checks do.

A maker that cannot make a check pass may weaken the check instead: delete or skip a test, lower a
threshold, edit the script a condition runs, or add a file the runner picks up by itself (a
``conftest.py``, a ``pytest.py`` that shadows the runner, a ``*.pth``). The integrity guard keeps the
*check-defining* files as the goal began and, in its pristine copy, restores them and removes the
*check-sensitive* files the maker added.

``--protect`` patterns add files of the user's choosing. They are matched from the project root,
like a .gitignore pattern that starts with ``/``: ``*`` and ``?`` stay within one folder, ``**``
crosses folders, and a pattern that names a folder covers everything under it. So ``tests/**`` (or
``tests``) is every file under tests/, ``*.py`` only the root's .py files, ``**/*.py`` every one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from ..errors import InvalidInput
from ..models import StoppingCondition
from ..system import pathscan
from . import syspath

# Runner and tool configs: one edited line in them can switch off a whole suite or lower a bar.
CONFIG_NAMES = ("conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml",
                "setup.cfg", "tox.ini", "noxfile.py", ".coveragerc", "package.json", "jest.config.*",
                "vitest.config.*", "vitest.workspace.*", "vite.config.*", "babel.config.*", ".babelrc*",
                ".mocharc*", "karma.conf.*", "playwright.config.*", ".eslintrc*", "eslint.config.*",
                "ruff.toml", ".ruff.toml", ".flake8", "mypy.ini", ".mypy.ini", "Cargo.toml", "go.mod",
                "Makefile", "makefile", "GNUmakefile", "justfile")
# Picked up by Python itself, wherever they are found on the path; a compiled module (or a sourceless
# .pyc) beside a .py file is imported instead of it, and no reviewer reads its bytes. Bytecode in
# __pycache__ is not: the conditions run with a bytecode folder of our own (checks/pycache.py).
PYTHON_HOOKS = ("sitecustomize.py", "usercustomize.py", "*.pth", "*.so", "*.pyd", "*.pyc")
# Snapshots and golden files too: regenerating them from buggy output is a way to weaken a test.
TEST_NAMES = ("test_*.py", "*_test.py", "*_test.go", "*.test.[jt]s", "*.test.[jt]sx", "*.test.[cm][jt]s",
              "*.spec.[jt]s", "*.spec.[jt]sx", "*.spec.[cm][jt]s", "*.snap", "*.ambr")
TEST_DIRS = syspath.TEST_DIRS


def _fnmatch_regex(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex for shell name patterns that match a file's name, in any folder."""
    return re.compile("|".join(_glob_body(p, slash=False) for p in patterns))


def _glob_body(pattern: str, *, slash: bool) -> str:
    """A glob as a regex body: ``*`` and ``?`` never match ``/``; with ``slash``, ``**`` does."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if slash and pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if slash and pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body.replace("\\", "\\\\")) + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


_CONFIG = _fnmatch_regex(CONFIG_NAMES)
_SOURCES = _fnmatch_regex(("*.py", "*.pyi", "*.[cm][jt]s", "*.[jt]s", "*.[jt]sx", "*.go", "*.rs", "*.c", "*.h",
                           "*.cc", "*.cpp", "*.hpp", "*.java", "*.kt", "*.rb", "*.swift", "*.cs"))
_HOOKS = _fnmatch_regex(PYTHON_HOOKS)
_TESTS = _fnmatch_regex(TEST_NAMES)
# A package's metadata folder: an entry point in it registers a pytest plugin when the folder is on the path.
_METADATA = re.compile(r"(?:^|/)[^/]+\.(?:dist|egg)-info/")


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A --protect pattern as a regex over paths relative to the root (see the module docstring)."""
    body = pattern.strip().removeprefix("./").lstrip("/").rstrip("/")
    if not body:
        raise InvalidInput(f"--protect {pattern!r} names no file; give a pattern such as 'tests/**' or 'conftest.py'")
    return re.compile(f"(?:{_glob_body(body, slash=True)})(?:/.*)?", re.S)


def protected_by(files: Iterable[str], patterns: list[str]) -> list[str]:
    """The files that any of ``patterns`` covers."""
    if not patterns:
        return []
    regexes = [pattern_regex(p) for p in patterns]
    return [f for f in files if any(r.fullmatch(f) for r in regexes)]


def check_patterns(root: Path, files: list[str], patterns: list[str]) -> None:
    """Refuse a --protect pattern that covers no file: it would protect nothing, silently."""
    for pattern in patterns:
        if not protected_by(files, [pattern]):
            raise InvalidInput(
                f"--protect {pattern!r} matches no file in {root}. Patterns start at the project root: "
                f"'tests/**' (or 'tests') is every file under tests/, '*.py' only the .py files at the root, "
                f"'**/*.py' every .py file; fix the pattern or leave it out")


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def is_test_file(rel: str) -> bool:
    parts = rel.split("/")
    return bool(_TESTS.fullmatch(parts[-1])) or not TEST_DIRS.isdisjoint(parts[:-1])


def is_plain_test(rel: str, where: syspath.View | None = None) -> bool:
    """A test file that changes which tests run, not how they run: no config, hook or shadow module."""
    return is_test_file(rel) and not is_config(rel) and not is_hook(rel) and not shadows(rel, where)


def is_config(rel: str) -> bool:
    return bool(_CONFIG.fullmatch(_name(rel))) or rel.startswith(".cargo/config")


def is_code(rel: str) -> bool:
    """A file a check may run or load: a source file, a runner config or a Python hook."""
    return bool(_SOURCES.fullmatch(_name(rel))) or is_config(rel) or is_hook(rel)


def is_hook(rel: str) -> bool:
    """A file Python loads by itself (``PYTHON_HOOKS``); bytecode in ``__pycache__`` is not one."""
    return bool(_HOOKS.fullmatch(_name(rel))) and not _in_pycache(rel)


def runner_loaded(rel: str) -> bool:
    """A file a test run loads by itself wherever it is: a conftest.py, a runner config, a Python hook, or a
    test module its discovery collects (unittest discover walks into any package, ignored or not)."""
    return is_config(rel) or is_hook(rel) or bool(_TESTS.fullmatch(_name(rel)))


def shadows(rel: str, where: syspath.View | None = None) -> bool:
    """A module or package on the test run's path named like one it would replace (syspath.py); without
    ``where``, the path is the root, src/ and the test folders."""
    return (where or syspath.View()).shadows(rel)


_NAMED = re.compile("|".join(f"(?:{r.pattern})" for r in (_CONFIG, _HOOKS, _TESTS)))
_TEST_FOLDER = re.compile("(?:^|/)(?:" + "|".join(map(re.escape, sorted(TEST_DIRS))) + ")/")


def _literals(glob: str) -> list[tuple[str, str]]:
    """(the literal text before the first wildcard, the literal text after the last) of each of the globs a name
    glob stands for, its plain character classes spelled out (``*.test.[jt]s``: ``*.test.js`` and ``*.test.ts``)."""
    plain = re.fullmatch(r"([^[]*)\[([^]!^-]+)\](.*)", glob)
    if plain:
        return [pair for ch in plain[2] for pair in _literals(plain[1] + ch + plain[3])]
    parts = re.split(r"[*?[]", glob)
    return [(parts[0], parts[-1].rsplit("]", 1)[-1])]


def _name_hints(globs: Iterable[str]) -> list[re.Pattern[str]]:
    """Searches that between them find every path whose name matches one of ``globs``, by the longer literal end
    of each glob: forwards, its beginning right after the NUL or slash before the name; backwards (pathscan.Paths.
    ending), its end reversed right after the NUL that ends the path, and the whole name when it has no wildcard."""
    forwards, backwards, names = [], [], []
    for glob in globs:
        for before, after in _literals(glob):
            if not (before or after):
                raise ValueError(f"{glob!r} has no literal end: every path would be a candidate")
            if before == after == glob:
                names.append(glob[::-1])
            elif len(after) >= len(before):
                backwards.append(after[::-1])
            else:
                forwards.append(before)
    ahead = pathscan.one_of(forwards)
    return [re.compile("/" + ahead), re.compile("\0" + ahead), re.compile("\0" + pathscan.one_of(backwards)),
            re.compile("\0" + pathscan.one_of(names) + r"(?=[/\0])")]


# Fewer paths than this are each looked at alone (an iteration's few new files): no search is compiled for them.
FEW = 64


@cache
def _searches() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """The searches that find, between them, every path a name, a test folder or package metadata can pick, each
    beginning with a literal of its own, which the regex engine looks for before trying the rest: (forwards,
    backwards). Compiled once a process, when a long list is first narrowed."""
    after_slash, at_start, backwards, names = _name_hints(CONFIG_NAMES + PYTHON_HOOKS + TEST_NAMES)
    test_folders = re.compile("/" + pathscan.one_of(d[::-1] for d in TEST_DIRS) + r"(?=[/\0])")
    return ((after_slash, at_start, re.compile(r"\0\.cargo/config"), re.compile(r"\.(?:dist|egg)-info/")),
            (backwards, names, test_folders))


# Backwards: the name of every Python module, or of a package (its __init__.py's folder).
_STEM = re.compile(r"\0yp\.(?:__tini__/)?([^/\0]*+)")


def _stems(paths: pathscan.Paths, modules: frozenset[str]) -> set[int]:
    """The paths of Python modules (or packages) named one of ``modules``: the names there are, gathered by one
    pass, met with ``modules``, and a pass for the few in both (not a regex of every module name, whose
    compiling would cost every iteration more than the pass saves)."""
    named = {m[::-1] for m in modules}.intersection(_STEM.findall(paths.backwards))
    if not named:
        return set()
    return paths.ending(re.compile(r"\0yp\.(?:__tini__/)?" + pathscan.one_of(named) + r"(?=[/\0])"))


def narrow(files: Iterable[str], patterns: list[str], own: Iterable[str],
           shadowed: frozenset[str] | None = None) -> list[str]:
    """The files ``check_defining`` and ``sensitive`` may pick, found by one quick look at each path (a
    superset, in order): a config, hook or test name, a test folder, package metadata, a --protect match,
    or a Python module named like one it could shadow (``own``: the project's own modules; ``shadowed``:
    syspath.shadowed_names(), read now when not given). On a large tree only these few are classified in full.

    The look is a few passes over all the paths joined (system/pathscan.py), each finding a superset of the
    paths one rule picks; ``_near`` then decides each of those alone."""
    modules = (syspath.shadowed_names() if shadowed is None else shadowed) | frozenset(
        o.rstrip("/").rsplit("/", 1)[-1] for o in own)
    protected = re.compile("|".join(f"(?:{pattern_regex(p).pattern})" for p in patterns), re.S).fullmatch \
        if patterns else None
    files = list(files)
    if len(files) < FEW:
        return [rel for rel in files if _near(rel, modules, protected)]
    paths, (forwards, backwards) = pathscan.Paths(files), _searches()
    found = set().union(*map(paths.holding, forwards), *map(paths.ending, backwards), _stems(paths, modules))
    if protected is not None:  # the user's patterns, whatever they are: each path tried
        found |= paths.where(protected)
    return paths.picked(found, lambda rel: _near(rel, modules, protected))


def _near(rel: str, modules: frozenset[str], protected: Callable[[str], object] | None) -> bool:
    """Whether ``narrow`` picks one path (see there)."""
    cut = rel.rfind("/")
    name, folder = rel[cut + 1:], rel[:cut + 1]
    if name.endswith(".py"):
        stem = name[:-3] if name != "__init__.py" else rel[rel.rfind("/", 0, cut) + 1:cut]
        if stem in modules:
            return True
    return bool(_TEST_FOLDER.search(folder) or ("-info/" in folder and _METADATA.search(folder))
                or _NAMED.fullmatch(name) or rel.startswith(".cargo/config")
                or (protected is not None and protected(rel)))


def names_mark(shadowed: frozenset[str]) -> str:
    """A digest of the module names ``narrow`` looks for, kept with its answer: that answer holds while they do."""
    return hashlib.sha256("\0".join(sorted(shadowed)).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def renarrow(before: list[str], present: set[str], fresh: Iterable[str], patterns: list[str], own: Iterable[str],
             shadowed: frozenset[str]) -> list[str]:
    """``narrow`` of every file there is, from its answer ``before`` for an earlier tree (same patterns, own
    modules and module names): those of it still ``present``, and the ``fresh`` files (added since, or not
    in git) looked at now. narrow looks at each path alone, so the answer is the same, at the cost of the
    files that changed rather than of the tree."""
    return sorted({rel for rel in before if rel in present}.union(narrow(sorted(fresh), patterns, own, shadowed)))


def check_defining(root: Path, files: list[str], conditions: Iterable[StoppingCondition],
                   patterns: list[str], own: Iterable[str] | None = None) -> list[str]:
    """The files that define the checks, most telling first: files the condition commands name, the
    --protect matches, runner configs, Python hooks and shadow modules at the import roots, then the tests.
    ``own``: the project's own modules, when ``files`` is not the whole project (``narrow``)."""
    roots = syspath.View(own=frozenset(syspath.own_modules(files) if own is None else own))
    ranked: dict[str, None] = {}
    for cond in conditions:
        named = named_files(root, cond.command)
        if cond.type in ("lint_clean", "build_pass"):  # the sources a linter or a build reads are the product
            named = [rel for rel in named if not _SOURCES.fullmatch(_name(rel)) or is_test_file(rel)]
        ranked.update(dict.fromkeys(named))
    ranked.update(dict.fromkeys(protected_by(files, patterns)))
    ranked.update(dict.fromkeys(f for f in files if is_config(f) or is_hook(f) or shadows(f, roots)))
    ranked.update(dict.fromkeys(f for f in files if is_test_file(f)))
    return [f for f in ranked if not _in_pycache(f)]


def sensitive(files: Iterable[str], patterns: list[str], where: syspath.View | None = None) -> list[str]:
    """The files that would change what the checks do if the maker had added them; ``where`` is the test
    run's path (syspath.view), the root, src/ and the test folders by default."""
    regexes = [pattern_regex(p) for p in patterns]
    return [f for f in files if not _in_pycache(f) and (is_config(f) or is_hook(f) or is_test_file(f)
                                                         or shadows(f, where) or _METADATA.search(f)
                                                         or any(r.fullmatch(f) for r in regexes))]


def _in_pycache(rel: str) -> bool:
    """Bytecode caches are never read: the conditions run with a bytecode folder of our own."""
    return "__pycache__" in rel.split("/")[:-1]


def named_files(root: Path, command: str) -> list[str]:
    """The project files a command line names (a script, a config passed with -c, a Makefile)."""
    found = []
    for word in _words(command):
        for part in word.split("=", 1)[-1:] if word.startswith("-") else [word]:
            rel = os.path.normpath(part).replace(os.sep, "/")
            if rel and not rel.startswith("../") and not os.path.isabs(rel) and (root / rel).is_file():
                found.append(rel)
    return found


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: the shell would refuse it too; take what is there
        return command.split()
