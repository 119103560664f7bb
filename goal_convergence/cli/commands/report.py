"""`goal report`: a goal's report, one self-contained HTML page (report/page.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output
from ..options import report_options

if TYPE_CHECKING:
    from ...report.page import Written
    from ...storage.store import Store


def write(store: Store, goal_id: str | None, project: Path, *, session_id: str | None = None,
          to: Path | None = None, all_goals: bool = False) -> Written:
    """The report of the goal named, else of the goal every read command shows (lookup.shown), or with
    ``all_goals`` of every goal of the project and an index page."""
    from ...report import page  # Jinja2 and the templates: only when a report is asked for

    return page.write(store, goal_id, project, output=to, all_goals=all_goals, session_id=session_id)


@click.command("report")
@report_options
@click.option("--open", "open_it", is_flag=True, help="Then open it in the browser.")
@click.option("--json", "json_out", is_flag=True, help="Print {path, index, reports}.")
def report_cmd(goal_id: str | None, output: Path | None, open_it: bool, all_goals: bool, json_out: bool) -> None:
    """Write a goal's report: one self-contained HTML page (default: the project's open goal, else its newest)."""
    from ...report import page

    written = write(_output.store(), goal_id, Path.cwd(), to=output, all_goals=all_goals)
    if json_out:
        _output.echo_note(written.note, json_out)
    _output.echo_json(written.summary()) if json_out else click.echo(written.text())
    note = page.open_in_browser(written.main) if open_it else None
    if note:
        click.echo(note, err=True)


_output = output  # the command's own --output flag takes the name `output` inside it
