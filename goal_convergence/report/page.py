"""Rendering and writing the reports: Jinja2 templates with autoescaping on, so every string a goal carries
(objective, hints, reasons, notes, task titles, commands, output) reaches the page as text, never as markup.

The page holds its own style and script inline and allows nothing else: its Content-Security-Policy admits
exactly those two by hash, and no network source at all, so even a string that escaped the escaping could
neither run script nor fetch anything.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import tempfile
import webbrowser
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from ..errors import FILESYSTEM_ERRNOS, GoalNotFound, InvalidInput, UsageError
from ..goals import lookup, trend
from ..models import Goal
from ..storage.store import Store
from ..system import files
from ..system.text import clip, plural
from . import render, view


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def _csp(*inline: str) -> str:
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in inline)
    return (f"default-src 'none'; style-src {hashes}; script-src {hashes}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader(__package__, "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(money=render.money, duration=render.duration, when=view.when, clip=clip, plural=plural,
                       tail=lambda text, n: text if len(text) <= n else "…" + text[-n:])
    css, js = _asset("report.css"), _asset("report.js")
    # Our own files, trusted: inlined as they are; their hashes are the only style and script the page runs.
    env.globals.update(css=Markup(css), js=Markup(js), csp=_csp(css, js))
    return env


def render_goal(goal: Goal, now: datetime | None = None) -> str:
    return environment().get_template("report.html.j2").render(view.page(goal, now))


@dataclass(frozen=True)
class IndexRow:
    """What the index shows of one goal (its page written, the goal itself need not stay in memory)."""

    goal_id: str
    link: str
    state: str
    stop_reason: str | None
    iterations: int
    max_iterations: int | None
    dollars: float
    spark: str  # conditions passing, the latest 40 iterations
    objective: str
    created_at: str

    @classmethod
    def of(cls, goal: Goal, link: str) -> IndexRow:
        spark = trend.spark([p.passing / (p.total or 1) for p in trend.points(goal)[-40:]], 1.0)
        return cls(goal.goal_id, link, goal.state, goal.stop_reason, goal.spent.iterations, goal.budget.max_iterations,
                   goal.spent.dollars, spark, goal.objective, goal.created_at)


def render_index(rows: list[IndexRow], project: str, now: datetime | None = None) -> str:
    return environment().get_template("index.html.j2").render(
        rows=rows, project=project, generated=view.when((now or datetime.now(UTC)).isoformat()))


@dataclass
class Written:
    paths: dict[str, Path]  # goal id -> its report
    index: Path | None = None
    note: str | None = None  # which goal this is, when no goal was named and none is open (lookup.shown)

    @property
    def main(self) -> Path:
        return self.index or next(iter(self.paths.values()))

    def summary(self) -> dict:
        return {"path": str(self.main), "index": str(self.index) if self.index else None,
                "reports": {k: str(v) for k, v in self.paths.items()}}

    def text(self) -> str:
        if self.index:
            return f"wrote the index of {plural(len(self.paths), 'goal report')}: {self.index}"
        [(goal_id, path)] = self.paths.items()
        return (f"({self.note})\n" if self.note else "") + f"wrote the report of {goal_id}: {path}"


def _write(path: Path, text: str, private: bool) -> Path:
    """Atomically, so a browser reloading the page never sees half of it; in the goal home as private as the
    goal files it shows, elsewhere as the user's umask has it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600 if private else 0o666), "w",
                  encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInput(f"cannot write the report to {path}: {exc.strerror}; choose another --output") from None
    return path.resolve()


def project_goals(store: Store, cwd: Path) -> list[str]:
    """The ids of the project's goals, newest first."""
    root = str(lookup.find_project(cwd))
    found = sorted((s for s in store.summaries() if s["projectRoot"] == root), key=lambda s: s["createdAt"],
                   reverse=True)
    return [s["goalId"] for s in found]


def _slug(root: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(root).name).strip("-.") or "project"
    return f"{name[:40]}-{hashlib.sha256(root.encode()).hexdigest()[:8]}"


def write(store: Store, goal_id: str | None, cwd: Path, output: Path | None = None, all_goals: bool = False,
          now: datetime | None = None, session_id: str | None = None) -> Written:
    """Write one goal's report (default: ``reports/GOAL-ID.html`` in the goal home; the goal named, else the
    one every read command shows: lookup.shown), or with ``all_goals`` the report of every goal of the
    project and an index page linking them."""
    if all_goals:
        if goal_id:
            raise UsageError("--all writes the report of every goal of the project; leave out the goal id")
        return _write_all(store, cwd, output, now)
    found = lookup.shown(store, goal_id, cwd, session_id=session_id)
    goal = found.goal
    path = output if output is not None else _home_reports(store) / f"{goal.goal_id}.html"
    if path.is_dir():
        path = path / f"{goal.goal_id}.html"
    if not path.parent.is_dir():
        raise InvalidInput(f"the folder {path.parent} does not exist; create it or choose another --output")
    return Written({goal.goal_id: _write(path, render_goal(goal, now), output is None)}, note=found.note)


def _home_reports(store: Store) -> Path:
    """``reports/`` in the home; in a home we may not write (a read-only disk), a private folder of ours in
    the temp folder: reading a goal never needs write access to its home."""
    folder = store.root / "reports"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.access(folder, os.W_OK):
            return folder
    except OSError as exc:
        if exc.errno not in FILESYSTEM_ERRNOS:
            raise
    return files.private_folder(Path(tempfile.gettempdir()) / f"goal-convergence-reports-{os.getuid()}")


def _write_all(store: Store, cwd: Path, output: Path | None, now: datetime | None) -> Written:
    ids = project_goals(store, cwd)
    root = str(lookup.find_project(cwd))
    if not ids:
        raise GoalNotFound(f"no goal in {root}; run from a project that has goals (`goal list --all`)")
    if output is not None and output.exists() and not output.is_dir():
        raise InvalidInput(f"--all writes a folder of pages and {output} is a file; give a folder for --output")
    folder = output if output is not None else _home_reports(store)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"cannot make the folder {folder}: {exc.strerror}; choose another --output") from None
    written, rows, private = Written({}), [], output is None
    for goal_id in ids:  # one goal in memory at a time
        goal = store.load(Goal, goal_id)
        written.paths[goal_id] = _write(folder / f"{goal_id}.html", render_goal(goal, now), private)
        rows.append(IndexRow.of(goal, written.paths[goal_id].name))
    name = "index.html" if output is not None else f"index-{_slug(root)}.html"
    written.index = _write(folder / name, render_index(rows, root, now), private)
    return written


def open_in_browser(path: Path) -> str | None:
    """Open the page in the user's browser (``$BROWSER`` first); a note to print when none could be opened."""
    if webbrowser.open(path.as_uri()):
        return None
    return f"no browser could be opened here; open {path} yourself"
