"""`goal list`: the open goals (or every goal), from the index alone: no pydantic, no models (listing.py)."""

from __future__ import annotations

import click

from ...system import index
from .. import output


@click.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include converged and failed goals.")
@click.option("--json", "json_out", is_flag=True, help="Print JSON.")
def list_cmd(show_all: bool, json_out: bool) -> None:
    """List open goals (active, paused, escalated), newest first."""
    from ...goals import listing
    from ...system import quarantine

    home, moved = index.home(), []
    click.get_current_context().call_on_close(lambda: output.report_quarantine(moved))
    found = listing.goals(home, show_all or not json_out, moved)  # the text names the newest goal when none is open
    output.echo_lines(listing.as_json(found) if json_out else listing.table(found, show_all))
    notice = "" if json_out else quarantine.notice(home)
    if notice:
        click.echo(f"\n{notice}")
