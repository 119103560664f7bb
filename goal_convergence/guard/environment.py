"""The runner's environment as part of the baseline: what the conditions run with, not only what they run.

A maker that cannot make the tests pass can change what runs them instead of the tests: a ``.pth`` or
a ``sitecustomize`` that patches pytest at start-up, a plugin registered by an entry point in
site-packages or by a ``*.dist-info`` folder dropped in the project, an edited file of pytest itself, a
config file above the project that pytest takes as its own. None of them is a project file the baseline
keeps (protect.py). So at goal start ``record`` keeps, for each interpreter the conditions run
(``interpreter.py``), its import path, its ``.pth`` and ``sitecustomize`` files, its distributions, the
entry points test runners load, the runner's own files, and pytest's rootdir and config file; with the
config files above the project, the project's own metadata folders, and a Node runner's package.

Each iteration ``check`` compares. It stats what was recorded (a few hundred stats) and probes the
interpreter again only when something moved. A change that can change the checks refuses a green run
(``refused``); a new pytest plugin, or a metadata folder in the project, refuses it only when the pristine
run without it fails (``undoable``: ``-p no:NAME``, the folder left out of the copy). A plain new or
upgraded distribution is a note: a maker may install a missing dependency honestly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from ..models import Goal, IntegrityIssue, Model, StoppingCondition
from . import interpreter
from .interpreter import Interpreter, sha256

# The config files pytest looks for in every folder from the project up to the filesystem's root.
ABOVE = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "tox.ini", "setup.cfg",
         "conftest.py")
NODE_RUNNERS = ("jest", "jest-cli", "jest-circus", "vitest", "mocha", "ava", "jasmine", "tap", "uvu", "karma",
                "@playwright/test")
NOT_RECORDED_NOTE = ("the runner's environment was not recorded when this goal began (a goal made before it was), "
                     "so changes to it cannot be seen")
UNDO = "cannot be undone for the pristine run: revert it, or a person can accept the run in triage"
SHOWN = 5


class Environment(Model):
    """What the conditions ran with when the goal began."""

    root: str
    interpreters: list[Interpreter] = Field(default_factory=list)
    above: dict[str, str] = Field(default_factory=dict, description="Config files above the project: sha256.")
    project: dict[str, str] = Field(default_factory=dict,
                                    description="Metadata folders in the project: their entry points' sha256.")
    node: dict[str, str] = Field(default_factory=dict, description="The Node runner's package files: sha256.")
    skipped: list[str] = Field(default_factory=list, description="Conditions whose runner is not recorded, and why.")


@dataclass
class Check:
    """What changed in the environment since the goal began, sorted by what the guard can do about it."""

    refused: list[IntegrityIssue] = field(default_factory=list)  # no pristine run can leave these out
    undoable: list[IntegrityIssue] = field(default_factory=list)  # refuse only if the pristine run fails
    notes: list[str] = field(default_factory=list)
    disable: list[str] = field(default_factory=list)  # pytest plugins the pristine run blocks: -p no:NAME
    remove: set[str] = field(default_factory=set)  # project files the pristine copy leaves out


def record(root: Path, conds: list[StoppingCondition], env: Mapping[str, str] | None = None) -> Environment:
    """What the conditions run with now: one probe of each interpreter they run."""
    root = Path(root).resolve()
    env = os.environ if env is None else env
    found = Environment(root=str(root))
    # One probe an environment: a venv's python, python3 and bin/pytest are the same one.
    groups: dict[tuple[str, str], tuple[Path, set[Path], list[int]]] = {}
    for i, cond in enumerate(conds):
        resolved = interpreter.resolve(cond.command, root, env)
        if isinstance(resolved, str):
            found.skipped.append(f"[{i}] `{cond.command}`: {resolved}")
            continue
        python, script = resolved
        _, scripts, indexes = groups.setdefault((str(python.parent), os.path.realpath(python)), (python, set(), []))
        scripts |= {script} if script else set()
        indexes.append(i)
    for python, scripts, indexes in groups.values():
        try:
            found.interpreters.append(interpreter.read(python, sorted(scripts), indexes, root, env))
        except interpreter.ProbeFailed as e:
            found.skipped.append(f"{indexes}: {e}")
    found.above = _above(root)
    found.project = _project(root, found.interpreters)
    found.node = _node(root)
    return found


def check(recorded: Environment | None, goal: Goal, env: Mapping[str, str] | None = None) -> Check:
    """Compare the environment now with ``recorded``; probe again only where a stat moved."""
    out = Check()
    if recorded is None:
        out.notes += [] if _said(goal, NOT_RECORDED_NOTE) else [NOT_RECORDED_NOTE]
        return out
    root = Path(goal.project_root).resolve()
    env = os.environ if env is None else env
    unverified = [f for it in recorded.interpreters for f in it.unverified]
    if unverified and not _said(goal, "unlike their RECORD"):
        out.notes.append(f"{len(unverified)} file(s) of the test runner were already unlike their RECORD (pip's list "
                         f"of hashes) when the goal began, e.g. {unverified[0]}: the start itself may not be honest")
    now = []
    for was in recorded.interpreters:
        if interpreter.stamp(was.watched + list(was.runner)) == was.stamp:
            now.append(was)
            continue
        try:
            fresh = interpreter.read(Path(was.command_path), [Path(s) for s in was.scripts], was.conditions, root, env)
        except interpreter.ProbeFailed as e:
            out.refused.append(_issue(was.command_path, f"the conditions' interpreter no longer runs: {e}", was))
            continue
        now.append(fresh)
        _compare(was, fresh, out)
    if str(root) == recorded.root:  # an attempt's worktree has other folders above it
        _files("config files above the project", recorded.above, _above(root), out.refused, how=UNDO)
    _files("files of the Node test runner", recorded.node, _node(root), out.refused, how=UNDO)
    project = _project(root, now)
    for rel in sorted(set(project) - set(recorded.project) | {r for r in project if recorded.project.get(r, project[r])
                                                                != project[r]}):
        names = interpreter.plugins_in(root / rel)
        out.disable += names
        out.remove |= _files_in(root, rel)
        out.undoable.append(_issue(rel, f"{rel} is a package metadata folder in the project that was not there when "
                                        f"the goal began" + (f"; it registers the pytest plugin(s) {', '.join(names)}"
                                                             if names else "")))
    return out


def pristine_env(base: Mapping[str, str], found: Check) -> dict[str, str]:
    """``base`` with the pytest plugins the maker added blocked, for the pristine run."""
    env = dict(base)
    if found.disable:
        blocks = " ".join(f"-p no:{name}" for name in dict.fromkeys(found.disable))
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '').strip()} {blocks}".strip()
    return env


# ---- comparing one interpreter --------------------------------------------------------------------


def _compare(was: Interpreter, now: Interpreter, out: Check) -> None:
    if (was.real, was.version, was.prefix) != (now.real, now.version, now.prefix):
        out.refused.append(_issue(now.command_path, f"the conditions' interpreter changed: {was.real} "
                                                    f"{was.version} is now {now.real} {now.version}; {UNDO}", now))
    _files("scripts the conditions run", was.scripts, now.scripts, out.refused, how=UNDO, who=now)
    for path in [p for p in now.path if p not in was.path and not p.startswith("./")][:SHOWN]:
        out.refused.append(_issue(path, f"{path} is on the import path of `{now.command}` now; {UNDO}", now))
    for path, digest in now.pth.items():
        if was.pth.get(path) == digest:
            continue
        if path in now.editable:  # an editable install of the project itself: a path, no code
            out.notes.append(f"{path} adds the project's own folder to the import path (an editable install)")
        else:
            verb = "was added" if path not in was.pth else "was edited"
            out.refused.append(_issue(path, f"{path} {verb}: a .pth file runs code in every Python start, tests "
                                            f"included; {UNDO}", now))
    _files("sitecustomize/usercustomize modules", was.customize, now.customize, out.refused, how=UNDO, who=now)
    _files("files of the test runner", was.runner, now.runner, out.refused, how=UNDO, who=now, versions=(was, now))
    for key in sorted(set(now.entry_points) - set(was.entry_points)):
        group, name, _dist = key.split(":", 2)
        what = f"a new {group} entry point {name} = {now.entry_points[key]}"
        if group == "pytest11":
            out.disable.append(name)
            out.undoable.append(_issue(f"{group}:{name}", f"{what}: pytest loads it as a plugin in every run", now))
        else:
            out.refused.append(_issue(f"{group}:{name}", f"{what}; {UNDO}", now))
    gone = sorted(set(was.entry_points) - set(now.entry_points))
    if gone:
        out.notes.append(f"entry points removed: {', '.join(k.split(':', 2)[1] for k in gone[:SHOWN])}")
    if was.pytest != now.pytest:
        out.refused.append(_issue("pytest configuration", f"pytest's view of the project changed: {was.pytest} is "
                                                          f"now {now.pytest}; {UNDO}", now))
    added = [f"{n} {v}" for n, v in now.dists.items() if n not in was.dists]
    moved = [f"{n} {was.dists[n]} -> {v}" for n, v in now.dists.items() if n in was.dists and was.dists[n] != v]
    if added or moved:
        out.notes.append("distributions installed or upgraded since the goal began (not check-changing by "
                         "themselves): " + ", ".join((added + moved)[:SHOWN * 2]))


def _files(what: str, was: dict[str, str], now: dict[str, str], into: list[IntegrityIssue], *, how: str,
           who: Interpreter | None = None, versions: tuple[Interpreter, Interpreter] | None = None) -> None:
    """One issue for a set of files whose hashes moved: added, edited or removed ones named."""
    edited = sorted(p for p in now if p in was and now[p] != was[p])
    added = sorted(set(now) - set(was))
    removed = sorted(set(was) - set(now))
    if not (edited or added or removed):
        return
    parts = [f"{label} {', '.join(paths[:SHOWN])}" + (f" (and {len(paths) - SHOWN} more)" if len(paths) > SHOWN else "")
             for label, paths in (("edited", edited), ("added", added), ("removed", removed)) if paths]
    if versions is not None:
        old, new = versions
        parts += [f"{n} {old.dists.get(n)} -> {new.dists.get(n)}" for n in sorted(old.runner_dists)
                  if old.dists.get(n) != new.dists.get(n)]
    subject = (edited + added + removed)[0]
    into.append(_issue(subject, f"the {what} changed since the goal began: {'; '.join(parts)}; {how}", who))


def _said(goal: Goal, words: str) -> bool:
    """Whether an earlier iteration already noted it: a note is said once."""
    return any(words in note for it in goal.history if it.integrity for note in it.integrity.notes)


def _issue(subject: str, detail: str, who: Interpreter | None = None) -> IntegrityIssue:
    return IntegrityIssue(kind="environment-changed", subject=subject, detail=detail,
                          condition=who.conditions[0] if who and who.conditions else None)


# ---- what is read directly, every iteration -------------------------------------------------------


def _above(root: Path) -> dict[str, str]:
    """The config files in the folders above ``root`` (pytest takes one of them when the project has none)."""
    found = {}
    for folder in root.parents:
        for name in ABOVE:
            digest = sha256(folder / name)
            if digest is not None:
                found[str(folder / name)] = digest
    return found


def _project(root: Path, interpreters: list[Interpreter]) -> dict[str, str]:
    """The ``*.dist-info`` and ``*.egg-info`` folders where the conditions' interpreters look in the project
    (its root, and the folders of the import path inside it), with their entry points' hash."""
    folders = {"."} | {p[2:] or "." for it in interpreters for p in it.path if p.startswith("./")}
    found = {}
    for folder in sorted(folders):
        try:
            entries = list(os.scandir(root / folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith((".dist-info", ".egg-info")) and entry.is_dir():
                rel = os.path.normpath(f"{folder}/{entry.name}")
                found[rel] = sha256(Path(entry.path) / "entry_points.txt") or ""
    return found


def _files_in(root: Path, rel: str) -> set[str]:
    return {os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            for folder, _, names in os.walk(root / rel) for name in names}


def _node(root: Path) -> dict[str, str]:
    """The Node test runners' package.json, main and bin files in the project's node_modules."""
    found = {}
    for name in NODE_RUNNERS:
        package = root / "node_modules" / name
        digest = sha256(package / "package.json")
        if digest is None:
            continue
        found[f"node_modules/{name}/package.json"] = digest
        try:
            meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        bins = meta.get("bin") if isinstance(meta.get("bin"), dict) else {"": meta.get("bin")}
        for file in [meta.get("main") or "index.js", *bins.values()]:
            if isinstance(file, str) and (digest := sha256(package / file)) is not None:
                found[os.path.normpath(f"node_modules/{name}/{file}")] = digest
    return found
