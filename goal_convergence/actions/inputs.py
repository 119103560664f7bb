"""The action's inputs, as the run step gets them: each in ``GOAL_INPUT_<NAME>`` (action.yml sets it from
``${{ inputs.<name> }}`` in the step's ``env``, so no input is ever pasted into a shell line), and the
``goal`` input, a JSON object of the same names (one matrix item), over them.

The goal's own inputs become the flags of `goal new` and are parsed by the very options the CLI
declares (options.py), so a bad budget or an unknown oracle is refused with the CLI's message.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import click

from ..cli.options import budget_options, goal_options, spec_from
from ..errors import InvalidInput
from ..goals import specs
from ..loop import makers
from ..system import index

# input name -> the `goal new` flag it becomes
FLAGS = {"test": "--test", "lint": "--lint", "build": "--build", "coverage": "--coverage",
         "coverage-cmd": "--coverage-cmd", "max-iterations": "--max-iterations", "max-duration": "--max-duration",
         "max-dollars": "--max-dollars", "max-tokens": "--max-tokens", "oracle": "--oracle",
         "oracle-model": "--oracle-model", "oracle-cmd": "--oracle-cmd", "expect": "--expect",
         "maker-model": "--maker-model", "stuck-after": "--stuck-after"}
LISTS = {"checks": "--check", "protect": "--protect"}  # one item a line, each its own flag
SWITCHES = {"tests-may-change": "--tests-may-change"}
# The rest of what a goal (or a matrix item) may say; secrets (API key, token) are never among them.
OTHER = ("objective", "working-directory", "maker", "maker-cmd", "claude-code-version", "home", "name",
         "artifact-prefix")
PULL_REQUEST = ("pull-request", "branch", "base")  # read by the pull-request step, not the run step
NAMES = (*OTHER, *PULL_REQUEST, *FLAGS, *LISTS, *SWITCHES)


@click.command()
@click.argument("objective")
@goal_options
@budget_options(defaults=True)
def _goal_new(**_options) -> None:
    """Only parses: the flags of `goal new`, the same declarations the CLI uses."""


def variable(name: str) -> str:
    return "GOAL_INPUT_" + name.upper().replace("-", "_")


def flag(value: str, name: str) -> bool:
    """An input that is a switch: GitHub passes booleans as the text true or false."""
    text = value.strip().lower()
    if text not in ("", "true", "false"):
        raise InvalidInput(f"input {name} is {value!r}; give true or false")
    return text == "true"


def dollars(value: object, where: str) -> float:
    """A dollar amount as an input gives it: 10, 2.50 or $3 (empty, 0: no limit)."""
    try:
        amount = float(str(value).strip().lstrip("$") or 0)
    except ValueError:
        amount = -1.0
    if not math.isfinite(amount) or amount < 0:
        raise InvalidInput(f"{where} is {value!r}; give a dollar amount like 10 or 2.50 (0, no limit)")
    return amount


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    return "" if value is None else str(value)


@dataclass
class Inputs:
    values: dict[str, str]

    def get(self, name: str) -> str:
        return self.values.get(name, "").strip()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Inputs:
        """The step's inputs, the ``goal`` JSON object's keys winning over the plain inputs (a matrix item
        over the workflow's defaults)."""
        env = dict(os.environ if env is None else env)
        values = {name: env.get(variable(name), "") for name in NAMES}
        raw = env.get(variable("goal"), "").strip()
        if raw:
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"input goal is not JSON ({exc}); give an object like "
                                   '{"objective": "...", "test": "pytest -q"}') from None
            if not isinstance(item, dict):
                raise InvalidInput(f"input goal must be a JSON object of inputs, not {type(item).__name__}")
            unknown = sorted(set(item) - set(NAMES))
            if unknown:
                raise InvalidInput(f"input goal has unknown keys {', '.join(unknown)}; the keys are the action's "
                                   f"inputs: {', '.join(sorted(NAMES))}")
            values.update({k: _text(v) for k, v in item.items()})
        return cls(values)

    def project(self, workspace: Path) -> Path:
        """The goal's project: the folder working-directory names, which must be a checkout's top level, since a
        goal's conditions and maker run at the top level of the git checkout holding its folder."""
        folder = (workspace / (self.get("working-directory") or ".")).resolve()
        top = index.project_root(folder)
        if top != folder:
            raise InvalidInput(f"working-directory {self.get('working-directory')} is a folder inside the git checkout "
                               f"{top}, and a goal works on a whole checkout; give the checkout's top level, or check "
                               "the project out on its own (actions/checkout with path:) and name that folder")
        return folder

    def argv(self) -> list[str]:
        """The `goal new` command line these inputs stand for (without the project)."""
        objective = self.get("objective")
        if not objective:
            raise InvalidInput("input objective is empty; say what the goal is, e.g. objective: make all tests pass")
        argv = [objective]
        for name, option in FLAGS.items():
            if self.get(name):
                argv += [option, self.get(name)]
        for name, option in LISTS.items():
            for line in filter(None, (s.strip() for s in self.get(name).splitlines())):
                argv += [option, line]
        return argv + [option for name, option in SWITCHES.items() if flag(self.get(name), name)]

    def spec(self, workspace: Path) -> specs.GoalSpec:
        argv = [*self.argv(), "--project", str(self.project(workspace))]
        try:
            ctx = _goal_new.make_context("goal new", argv)
        except click.ClickException as exc:
            raise InvalidInput(f"the action's inputs, read as `goal new` flags: {exc.format_message()} "
                               "(each input is the flag of that name)") from None
        params = dict(ctx.params)
        return spec_from(params.pop("objective"), params)

    def maker(self) -> makers.Maker:
        command, kind = self.get("maker-cmd"), self.get("maker") or "claude"
        if command:
            return makers.CommandMaker(command)
        if kind != "claude":
            raise InvalidInput(f"input maker is {kind!r}; give claude (Claude Code, the default) or set maker-cmd")
        return makers.ClaudeMaker(self.get("maker-model") or None)
