"""A local stand-in for the GitHub runner, for the composite action at the repository root.

It does what the runner does with a composite action's steps, as far as they need: the inputs' defaults
under the ``with`` given, ``${{ ... }}`` expressions substituted (only the ones listed in ``_value``; any
other fails loudly, so the action cannot come to rely on one this runner fakes), each ``run:`` step run
by ``bash --noprofile --norc -eo pipefail`` (the runner's bash) in its working directory with its env,
``GITHUB_OUTPUT``/``GITHUB_STEP_SUMMARY`` a fresh file a step and ``GITHUB_ENV``/``GITHUB_PATH`` carried
to the steps after, and the first failing step ending the run. ``uses:`` steps are not run: their ``with``
is evaluated and kept, so a test can check what they would have been given.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# Variables of the machine running the tests that would leak into the action's steps: not a runner's.
_DROPPED = ("GOAL_CONVERGENCE_HOME", "CLAUDE_BIN", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "VIRTUAL_ENV",
            "PYTHONPATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH")


def parse_file_commands(text: str) -> dict[str, str]:
    """A GITHUB_OUTPUT/GITHUB_ENV file as the runner reads it: ``name=value`` lines and
    ``name<<DELIMITER`` blocks; a later value of a name wins."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            for body_line in lines:
                if body_line == delimiter:
                    break
                body.append(body_line)
            else:
                raise ValueError(f"{name}: no line {delimiter!r} ends its value")
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        elif line.strip():
            raise ValueError(f"not a name=value line: {line!r}")
    return values


@dataclass
class Step:
    name: str
    id: str | None
    kind: str  # "run" or "uses"
    uses: str = ""  # the action a uses step names
    exit_code: int | None = None  # None: not run (a uses step, or after a failure)
    log: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    with_: dict[str, str] = field(default_factory=dict)  # a uses step's inputs, evaluated


@dataclass
class ActionRun:
    steps: list[Step]
    outputs: dict[str, str]
    summary: str

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if s.exit_code not in (None, 0)), None)

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)

    def uses(self, action: str) -> Step:
        """The step that uses ``action`` (owner/name, any version)."""
        return next(s for s in self.steps if s.uses.split("@")[0] == action)

    def log(self) -> str:
        return "\n".join(f"== {s.name} (exit {s.exit_code})\n{s.log}" for s in self.steps)


class LocalRunner:
    def __init__(self, action_path: Path, workspace: Path, temp: Path, env: dict[str, str] | None = None,
                 timeout: float = 600.0):
        self.action_path, self.workspace, self.temp, self.timeout = action_path, workspace, temp, timeout
        self.base_env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
        self.base_env.update(CI="true", GITHUB_ACTIONS="true", RUNNER_TEMP=str(temp), GITHUB_WORKSPACE=str(workspace),
                             GITHUB_ACTION_PATH=str(action_path), GITHUB_REPOSITORY="octo/project",
                             GITHUB_SERVER_URL="https://github.com", HOME=str(temp / "home"), **(env or {}))
        (temp / "home").mkdir(parents=True, exist_ok=True)

    def run(self, with_: dict[str, str]) -> ActionRun:
        action = yaml.safe_load((self.action_path / "action.yml").read_text(encoding="utf-8"))
        assert action["runs"]["using"] == "composite"
        unknown = set(with_) - set(action.get("inputs") or {})
        assert not unknown, f"inputs the action does not declare: {unknown}"
        inputs = {name: str(spec.get("default", "")) for name, spec in (action.get("inputs") or {}).items()}
        inputs = {name: self._substitute(value, {}, {}) for name, value in inputs.items()}  # ${{ github.token }}
        inputs.update(with_)
        outputs: dict[str, dict[str, str]] = {}
        env_file, path_file = self.temp / "github_env", self.temp / "github_path"
        env_file.write_text(""), path_file.write_text("")
        steps, summary, failed = [], [], False
        for n, spec in enumerate(action["runs"]["steps"]):
            step = Step(spec.get("name", f"step {n}"), spec.get("id"), "run" if "run" in spec else "uses",
                        spec.get("uses", ""))
            steps.append(step)
            if step.kind == "uses":
                step.with_ = {k: self._substitute(str(v), inputs, outputs) for k, v in (spec.get("with") or {}).items()}
                continue
            if failed:
                continue
            assert "if" not in spec, f"{step.name}: this runner does not evaluate `if` on run steps"
            assert spec.get("shell") == "bash", f"{step.name}: a composite run step needs `shell: bash`"
            step_out, step_summary = self.temp / f"output-{n}", self.temp / f"summary-{n}"
            step_out.write_text(""), step_summary.write_text("")
            env = {**self.base_env, **parse_file_commands(env_file.read_text())}
            extra_path = [p for p in path_file.read_text().splitlines() if p]
            env["PATH"] = os.pathsep.join([*reversed(extra_path), env.get("PATH", "")])
            env.update({k: self._substitute(str(v), inputs, outputs) for k, v in (spec.get("env") or {}).items()})
            env.update(GITHUB_OUTPUT=str(step_out), GITHUB_STEP_SUMMARY=str(step_summary), GITHUB_ENV=str(env_file),
                       GITHUB_PATH=str(path_file))
            cwd = Path(self._substitute(spec.get("working-directory", str(self.workspace)), inputs, outputs))
            with tempfile.NamedTemporaryFile("w", suffix=".sh", dir=self.temp, delete=False) as script:
                script.write(self._substitute(spec["run"], inputs, outputs))
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script.name], cwd=cwd, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=self.timeout)
            step.exit_code, step.log = done.returncode, done.stdout + done.stderr
            step.outputs = parse_file_commands(step_out.read_text())
            if step.id:
                outputs[step.id] = step.outputs
            summary.append(step_summary.read_text())
            failed = done.returncode != 0
        declared = {name: self._substitute(str(spec["value"]), inputs, outputs)
                    for name, spec in (action.get("outputs") or {}).items()}
        return ActionRun(steps, declared, "".join(summary))

    def _value(self, expr: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
        if m := re.fullmatch(r"inputs\.([\w-]+)", expr):
            return inputs[m[1]]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
            return outputs.get(m[1], {}).get(m[2], "")
        fixed = {"github.action_path": str(self.action_path), "github.workspace": str(self.workspace),
                 "github.token": "local-token", "runner.temp": str(self.temp)}
        if expr in fixed:
            return fixed[expr]
        raise AssertionError(f"the local runner does not know the expression ${{{{ {expr} }}}}")

    def _substitute(self, text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
        return _EXPR.sub(lambda m: self._value(m[1], inputs, outputs), text)
