"""`goal demo`: the real loop on a bundled sample project, with a scripted maker (loop/demo.py)."""

from __future__ import annotations

from pathlib import Path

import click

from .. import output


@click.command("demo")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="A new or empty folder for the sample project and its goal (default: a new temp folder); kept.")
@click.option("--keep", is_flag=True,
              help="Record the demo goal in your own goal home (`goal list --all` shows it), not the demo folder's.")
def demo_cmd(folder: Path | None, keep: bool) -> int:
    """Watch the real loop fix a bundled sample project: no API key or Claude Code needed.
    A scripted maker fixes a bug, cheats (caught), then fixes the rest. Exits 0 when the goal converges."""
    from ...loop import demo

    return demo.run(folder, keep=keep, echo=click.echo, on_progress=output.live_progress(False)).exit_code
