"""The flags that describe a goal and its budget, declared once for `goal new`, `goal run`,
`goal resume`, `goal triage act` and the slash command's parser, which must agree on them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from ..rules.defaults import DEFAULT_ORACLE_MODEL

if TYPE_CHECKING:
    from ..goals.specs import GoalSpec

session_option = click.option("--session", "session_id", help="Bind the goal to this Claude Code session.")


# `goal new` stores it as the goal's default; `goal run` uses it (and stores it) for the run.
attempts_option = click.option(
    "--attempts", type=click.IntRange(1, 8), default=None,
    help="Makers racing on the goal at once, each in a git worktree of its own; the first to converge wins "
         "(default: the goal's own, else 1).")


def budget_options(defaults: bool):
    """--max-iterations/--max-duration/--max-dollars/--max-tokens; ``defaults`` only for new goals."""
    def wrap(fn):
        for opt in reversed([
            click.option("--max-iterations", type=click.IntRange(min=0), default=15 if defaults else None,
                         show_default=defaults, help="Iteration budget (0: no limit)."),
            click.option("--max-duration", default="2h" if defaults else None, show_default=defaults,
                         help="Active wall-time budget like 30m, 2h, 1h30m (0s: no limit)."),
            click.option("--max-dollars", type=click.FloatRange(min=0), default=10.0 if defaults else None,
                         show_default=defaults, help="Dollar budget for maker and oracle together (0: no limit)."),
            click.option("--max-tokens", type=click.IntRange(min=0), default=None, help="Token budget (optional)."),
        ]):
            fn = opt(fn)
        return fn
    return wrap


def _confidence(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not 0 <= value <= 1:  # NaN fails this too
        raise click.BadParameter(f"{value:g} is not a confidence: give a number from 0 to 1, e.g. 0.8 for a judge "
                                 "at least 80% sure", ctx, param)
    return value


def goal_options(fn):
    """The flags that describe a new goal: its conditions, oracle, maker and binding."""
    for opt in reversed([
        click.option("--test", help="Command that must pass: the tests."),
        click.option("--lint", help="Command that must pass: the linter."),
        click.option("--build", help="Command that must pass: the build."),
        click.option("--coverage", type=float, help="Coverage percentage to reach."),
        click.option("--coverage-cmd", help="Command that prints coverage (default: inferred)."),
        click.option("--check", "checks", multiple=True, help="Any other command that must pass (repeatable)."),
        click.option("--metric", help="A command that prints a number, which must meet --target (e.g. "
                                      "\"ruff check . --statistics | wc -l\")."),
        click.option("--target", "metric_target",
                     help="With --metric: the comparison its number must meet: '<= 0', '>= 90', '< 200'."),
        click.option("--metric-regex", help="With --metric: a regex whose first group is the number (default: the "
                                            "last number the command prints)."),
        click.option("--metric-runs", type=click.IntRange(1, 25),
                     help="With --metric: run it this many times and take the median (for noisy benchmarks)."),
        click.option("--oracle", "oracle_provider", default="auto", show_default=True,
                     type=click.Choice(["auto", "anthropic", "claude-cli", "codex-cli", "gemini-cli", "command", "conditions"]),
                     help="Who judges each iteration; `conditions` means no model at all."),
        click.option("--oracle-model", default=DEFAULT_ORACLE_MODEL, show_default=True,
                     help="The oracle's model; must differ from the maker's."),
        click.option("--oracle-cmd", "oracle_command", help="With --oracle command: the judge program."),
        click.option("--expect", help="A regex the maker's last message must match, never shown to the maker (any "
                                      "judge)."),
        click.option("--maker-model", help="The maker's model, when known."),
        click.option("--protect", multiple=True,
                     help="Files the maker must not weaken, as a pattern from the project root: 'tests/**', "
                          "'*.py' (root only), '**/*.py' (repeatable)."),
        click.option("--tests-may-change", is_flag=True,
                     help="The objective is to change tests: the integrity guard reports test changes but does "
                          "not block convergence on them."),
        click.option("--stuck-after", type=click.IntRange(min=1), default=3, show_default=True,
                     help="Iterations without progress before the goal counts as stuck."),
        click.option("--task", "tasks", multiple=True,
                     help="A step of the plan: the goal converges only once the oracle finds it done (repeatable)."),
        click.option("--min-confidence", type=float, callback=_confidence,
                     help="From 0 to 1: a converged verdict less confident than this counts as a veto."),
        session_option,
        click.option("--project", type=click.Path(file_okay=False), help="Project folder (default: here)."),
    ]):
        fn = opt(fn)
    return fn


def report_options(fn):
    """`goal report`'s goal and where its page goes: the CLI's and the slash command's."""
    for opt in reversed([
        click.argument("goal_id", required=False),
        click.option("--output", type=click.Path(path_type=Path), help="Where to write it (a file or a folder; "
                     "with --all a folder). Default: reports/ in the goal home."),
        click.option("--all", "all_goals", is_flag=True, help="Every goal of the project, and an index page "
                     "linking them."),
    ]):
        fn = opt(fn)
    return fn


def spec_from(objective: str, options: dict) -> GoalSpec:
    from ..goals.specs import GoalSpec  # the loop's modules: only for the commands that make a goal

    options = {k: v for k, v in options.items() if k != "json_out"}
    options["checks"] = list(options.get("checks") or [])
    options["protect"] = list(options.get("protect") or [])
    options["tasks"] = list(options.get("tasks") or [])
    options["project"] = Path(options.get("project") or os.getcwd())
    return GoalSpec(objective=objective, **options)


def given(options: dict) -> dict:
    """The options typed on the command line (or set in the environment), not click's defaults: what an
    existing goal is told to change."""
    ctx = click.get_current_context()
    return {k: v for k, v in options.items()
            if ctx.get_parameter_source(k) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}
