"""The ``command`` judge: any program that reads the input as JSON on stdin and prints a verdict."""

from __future__ import annotations

from pathlib import Path

from ..storage.config import env_settings
from ..system import deadline, mask, process
from ..system.text import cut
from .input import OracleInput
from .prompt import MAX_TOOL_ROUNDS
from .verdict import BadAnswer, JudgeError, Judgement, parse_foreign_verdict


class CommandOracle:
    """A program of the user's: the input as JSON on stdin, a verdict on stdout, run in the project
    root. Its own spending is unknown to us and not counted."""

    name = "command"

    def __init__(self, command: str, root: Path, *, timeout: float | None = None) -> None:
        self.command = command
        self.root = Path(root)
        self.timeout = (env_settings().oracle_timeout if timeout is None else timeout) * (MAX_TOOL_ROUNDS + 2)

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return 0.0

    def judge(self, oracle_input: OracleInput) -> Judgement:
        # Its own process group: a timeout ends the command and everything it started.
        try:
            done = process.run_read(process.shell(self.command), self.root, input=mask.text(oracle_input.to_json()).encode(),
                                    timeout=deadline.bounded(self.timeout))
        except OSError as exc:
            raise JudgeError(f"could not start the oracle command ({exc}): {self.command}") from None
        if done.exit.timed_out:
            raise JudgeError(f"the oracle command gave no verdict within {self.timeout:g} s: {self.command}")
        if done.exit.code != 0:
            stderr = cut(done.stderr.strip(), 500) or "no stderr"
            raise JudgeError(f"the oracle command exited {done.exit.code}: {stderr}; it must print a verdict "
                             f"and exit 0 ({self.command})")
        notes = ["the command oracle's own cost is not counted"]
        try:
            verdict = parse_foreign_verdict(done.stdout, notes)
        except BadAnswer as exc:
            raise JudgeError(f"the oracle command's output is not a verdict: {exc} ({self.command})") from None
        return Judgement(verdict=verdict, model=f"command: {cut(self.command, 100)}", notes=notes)
