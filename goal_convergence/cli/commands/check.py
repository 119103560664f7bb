"""`goal check`: a goal's stopping conditions run now, not counted as an iteration."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import output

if TYPE_CHECKING:
    from ...checks.conditions import ProgressCallback
    from ...goals.lookup import Found
    from ...models import ConditionEvidence
    from ...storage.store import Store


def check(store: Store, goal_id: str | None, *, session_id: str | None = None, project: Path | None = None,
          on_progress: ProgressCallback | None = None) -> tuple[Found, list[ConditionEvidence]]:
    """Run the conditions of the goal named, else of the goal every read command shows (lookup.shown)."""
    from ...checks import conditions
    from ...goals import lookup

    found = lookup.shown(store, goal_id, project, session_id=session_id)
    return found, conditions.check_goal_conditions(found.goal, on_progress=on_progress)


@click.command("check")
@click.argument("goal_id", required=False)
@click.option("--json", "json_out", is_flag=True, help="Print the evidence as JSON.")
def check_cmd(goal_id: str | None, json_out: bool) -> int:
    """Run a goal's stopping conditions now. Exit 0 only if all pass (1 if any fails)."""
    from ...report import render

    found, evidence = check(output.store(), goal_id, on_progress=output.live_progress(json_out))
    output.echo_note(found.note, json_out)
    output.echo_json([e.dump() for e in evidence]) if json_out else click.echo(render.evidence_table(evidence))
    return 0 if all(e.passed for e in evidence) else 1
