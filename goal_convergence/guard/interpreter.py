"""One interpreter a condition runs, and what it runs with: found from the command's first word as the
shell would find it, probed once (``envprobe.py``: where it looks for code), then read from this process
(the .pth and sitecustomize files, the distributions and their runner entry points, the runner's files
checked against pip's RECORD, the ecosystem's own list of each installed file's hash).

``stamp`` is the cheap part: one stat of each file and folder that was read, hashed, so a later iteration
probes again only when one of them moved.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pydantic import Field

from ..models.base import Model, NonNegInt
from ..system import process
from . import envprobe

# The entry point groups a test run loads by itself: pytest's plugins, hypothesis's.
GROUPS = ("pytest11", "hypothesis")
# The runner and what it stands on; every distribution with a pytest11 entry point is added.
RUNNER_DISTS = frozenset({"pytest", "pluggy", "iniconfig", "py", "coverage", "nose", "nose2"})
# Tools that run the command in an environment of their own making: not followed.
OWN_ENVIRONMENTS = frozenset({"uv", "uvx", "poetry", "pipenv", "hatch", "pdm", "tox", "nox", "conda", "mamba",
                              "micromamba", "pixi", "rye"})
PREFIXES = frozenset({"env", "exec", "time", "command", "nice", "nohup"})
PYTHON_NAME = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?")
PROBE_TIMEOUT = 60.0
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_SHEBANG = re.compile(rb"#!\s*(\S+)(?:[ \t]+(\S+))?")
_SH_EXEC = re.compile(rb"'''exec' \"?([^\"\s]+)\"? ")  # pip's wrapper when the interpreter's path is too long


class ProbeFailed(Exception):
    """The interpreter could not be run or did not answer."""


class Interpreter(Model):
    """What one interpreter the conditions run had when it was read. Paths in the project are ``./rel``."""

    conditions: list[NonNegInt] = Field(default_factory=list)
    command_path: str = Field(description="The interpreter the commands resolve to (probed again later).")
    command: str = ""
    real: str = ""
    version: str = ""
    prefix: str = ""
    path: list[str] = Field(default_factory=list)
    site: list[str] = Field(default_factory=list)
    scripts: dict[str, str] = Field(default_factory=dict, description="Scripts run with it (bin/pytest): sha256.")
    pth: dict[str, str] = Field(default_factory=dict)
    editable: list[str] = Field(default_factory=list, description=".pth files that only add project folders.")
    customize: dict[str, str] = Field(default_factory=dict)
    dists: dict[str, str] = Field(default_factory=dict, description="Name: version, the first found on the path.")
    runner_dists: list[str] = Field(default_factory=list)
    entry_points: dict[str, str] = Field(default_factory=dict, description="group:name:distribution: value.")
    runner: dict[str, str] = Field(default_factory=dict, description="The runner's files: sha256 (128 bits).")
    unverified: list[str] = Field(default_factory=list, description="Runner files unlike their RECORD when read.")
    pytest: dict[str, str | None] | None = None
    watched: list[str] = Field(default_factory=list, description="Stat with the runner's files for the stamp.")
    stamp: str = ""


def sha256(path: Path | str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:  # missing, a folder, unreadable
        return None


def stamp(paths: list[str]) -> str:
    """One hash of (mtime, size, inode) of every path: anything written, replaced or added moves it."""
    total = hashlib.sha256()
    for path in paths:
        try:
            st = os.stat(path)
            total.update(f"{path}\0{st.st_mtime_ns}\0{st.st_size}\0{st.st_ino}\n".encode("utf-8", "surrogateescape"))
        except OSError:
            total.update(f"{path}\0-\n".encode("utf-8", "surrogateescape"))
    return total.hexdigest()


def resolve(command: str, root: Path, env: Mapping[str, str]) -> tuple[Path, Path | None] | str:
    """(interpreter, script) the command line runs first, found as the shell would; or why it is not followed."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and (words[0] in PREFIXES or _ASSIGNMENT.fullmatch(words[0]) or words[0].startswith("-")):
        words = words[1:]
    if not words:
        return "no command to follow"
    word = words[0]
    if os.path.basename(word) in OWN_ENVIRONMENTS:
        return f"`{os.path.basename(word)}` runs it in an environment of its own, which is not recorded"
    found = _which(word, root, env)
    if found is None:
        return f"`{word}` is not a program found on PATH (a shell builtin or a missing command)"
    if PYTHON_NAME.fullmatch(found.name):
        return found, None
    python = _shebang(found, root, env)
    if python is None:
        return f"`{word}` is not a Python interpreter or a Python script (a shell script, Node, make, ...)"
    return python, found


def _which(word: str, root: Path, env: Mapping[str, str]) -> Path | None:
    if "/" in word:
        path = Path(word) if os.path.isabs(word) else root / word
        return path if path.is_file() else None
    found = shutil.which(word, path=env.get("PATH", os.defpath))
    return Path(found) if found else None


def _shebang(script: Path, root: Path, env: Mapping[str, str]) -> Path | None:
    try:
        with open(script, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    match = _SHEBANG.match(head)
    if match is None:
        return None
    program, argument = (os.fsdecode(g) if g else None for g in match.groups())
    if os.path.basename(program or "") == "env" and argument:
        found = _which(argument, root, env)
    elif os.path.basename(program or "") == "sh" and (wrapped := _SH_EXEC.search(head)):
        found = Path(os.fsdecode(wrapped.group(1)))
    else:
        found = Path(program) if program else None
    return found if found is not None and PYTHON_NAME.fullmatch(found.name) else None


def read(python: Path, scripts: list[Path], conditions: list[int], root: Path,
         env: Mapping[str, str]) -> Interpreter:
    """Probe ``python`` (with the conditions' environment, in the project root) and read what it runs with."""
    seen = _probe(python, root, env)
    prefix = str(seen.get("prefix", ""))

    def in_project(path: str) -> bool:  # the project's own folders, not a virtualenv kept inside it
        return _inside(path, root) and not _inside(path, prefix)

    folders = [p for p in dict.fromkeys(seen.get("path", [])) if os.path.isdir(p)]
    outside = [p for p in folders if not in_project(p)]
    site = [s for s in seen.get("site", []) if os.path.isdir(s)]
    found = Interpreter(conditions=conditions, command_path=str(python),
                        command=" ".join(sorted({s.name for s in scripts} | {python.name})),
                        real=os.path.realpath(seen["executable"]),
                        version=str(seen.get("version", "")), prefix=prefix, site=site,
                        path=[_rel(p, root) if in_project(p) else p for p in seen.get("path", [])],
                        pytest=_relative(seen.get("pytest"), root))
    found.scripts = {str(s): sha256(s) or "" for s in scripts}
    for folder in site:
        for pth in sorted(Path(folder).glob("*.pth")):
            found.pth[str(pth)] = sha256(pth) or ""
            if _adds_project_paths(pth, root):
                found.editable.append(str(pth))
    for folder in outside:
        for name in ("sitecustomize", "usercustomize"):
            modules = [Path(folder, f"{name}.py"), Path(folder, name, "__init__.py"), *Path(folder).glob(f"{name}.*")]
            for module in dict.fromkeys(modules):
                if (digest := sha256(module)) is not None:
                    found.customize[str(module)] = digest
    metas, dirs = _distributions(found, outside)
    found.watched = sorted({*site, *outside, *found.pth, *found.customize, *found.scripts, *metas, *dirs,
                            str(python), found.real})
    found.stamp = stamp(found.watched + list(found.runner))
    return found


def _distributions(found: Interpreter, folders: list[str]) -> tuple[list[str], set[str]]:
    """Fill in the distributions, entry points and runner files; return the metadata paths and the runner's
    folders to watch."""
    metas, first = [], {}
    for dist in metadata.distributions(path=folders):
        where = getattr(dist, "_path", None)
        # A dist-info folder's name is its name and version (the spec's): no need to parse its METADATA.
        named = re.fullmatch(r"([^-]+)-([^-]+)\.dist-info", Path(where).name) if where is not None else None
        name, version = named.groups() if named else (dist.metadata["Name"] or "", dist.version)
        name = re.sub(r"[-_.]+", "-", name).lower()
        if where is not None:
            metas += [str(where), str(Path(where) / "entry_points.txt")]
        first.setdefault(name, dist)
        found.dists.setdefault(name, version)
        for ep in dist.entry_points:
            if ep.group in GROUPS:
                found.entry_points[f"{ep.group}:{ep.name}:{name}"] = ep.value
    runners = RUNNER_DISTS | {key.split(":")[2] for key in found.entry_points if key.startswith("pytest11:")}
    found.runner_dists = sorted(runners & set(first))
    dirs: set[str] = set()
    for name in found.runner_dists:
        dist = first[name]
        for file in dist.files or []:
            if file.hash is None or file.hash.mode != "sha256":
                continue
            path = Path(os.path.normpath(file.locate()))
            digest = sha256(path)
            if digest is None:
                continue
            found.runner[str(path)] = digest[:32]
            listed = base64.urlsafe_b64encode(bytes.fromhex(digest)).rstrip(b"=").decode()
            if listed != file.hash.value:
                found.unverified.append(str(path))
            # The runner's package folders, not site-packages itself (where any new module would be one).
            if path.suffix in (".py", ".so", ".pyd") and str(path.parent) not in found.site:
                dirs.add(str(path.parent))
    for folder in dirs:  # a module planted beside the runner's own is one of its files too
        for entry in os.scandir(folder):
            if entry.name.endswith((".py", ".so", ".pyd")) and entry.path not in found.runner:
                found.runner[entry.path] = (sha256(entry.path) or "")[:32]
    return metas, dirs


def _probe(python: Path, root: Path, env: Mapping[str, str]) -> dict:
    source = Path(envprobe.__file__).read_text(encoding="utf-8")
    try:
        done = process.run_read([str(python), "-c", source], root, timeout=PROBE_TIMEOUT,
                                env={**env, "PYTHONDONTWRITEBYTECODE": "1"})
    except OSError as e:
        raise ProbeFailed(f"{python} could not be started ({e})") from e
    lines = done.stdout.strip().splitlines()
    try:
        if done.exit.code != 0 or not lines:
            raise ValueError(done.stderr.strip()[-300:] or f"exit code {done.exit.code}")
        seen = json.loads(lines[-1])  # the last line: a .pth may print before the probe does
        if not isinstance(seen, dict) or not isinstance(seen.get("executable"), str):
            raise ValueError("no executable in its answer")
    except ValueError as e:
        raise ProbeFailed(f"{python} did not answer the environment probe ({e})") from e
    return seen


def _inside(path: str, folder: Path | str) -> bool:
    if not folder:
        return False
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _relative(view: object, root: Path) -> dict[str, str | None] | None:
    if not isinstance(view, dict):
        return None
    return {k: (_rel(v, root) if isinstance(v, str) and _inside(v, root) else
                v if isinstance(v, str) else None) for k, v in view.items()}


def _rel(path: str, root: Path) -> str:
    """``./rel`` for a path in the project (``./`` for its root): the same in an attempt's worktree."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return "./" if rel == "." else "./" + rel


def _adds_project_paths(pth: Path, root: Path) -> bool:
    """A .pth of lines that only name folders in the project (an editable install): no code runs."""
    try:
        lines = [ln.strip() for ln in pth.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return False
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    return bool(lines) and all(not ln.startswith(("import ", "import\t"))
                               and _inside(os.path.join(pth.parent, ln), root) for ln in lines)


def plugins_in(folder: Path) -> list[str]:
    """The pytest plugins a metadata folder registers."""
    try:
        return [ep.name for ep in metadata.PathDistribution(folder).entry_points if ep.group == "pytest11"]
    except (OSError, ValueError):
        return []
