"""What the judges that run an agent's own CLI share (claude_cli.py, codex_cli.py, gemini_cli.py).

Each runs its CLI once, read-only in the project, the iteration's input on stdin, within a deadline of a
call's timeout for every tool round; what the CLI printed becomes a verdict and what it spent a cost. The
three differ in their argv, in how their instructions reach the model and in how their output reads: that
is each judge's own; starting the CLI, its cost estimate and the errors of each step are this base's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar

from ..models import Cost, Verdict
from ..storage import cost as pricing
from ..storage.config import env_settings
from ..system import process
from .input import OracleInput
from .prompt import MAX_TOOL_ROUNDS, call_estimate, system_prompt, token_estimate, user_message
from .verdict import BadAnswer, JudgeError, Judgement


class CliJudge:
    name: ClassVar[str]
    label: ClassVar[str]  # the command as the errors name it, e.g. "claude -p"
    product: ClassVar[str]  # whose install to check when the binary cannot be run
    tools: ClassVar[str]  # what the system prompt says of the tools the CLI gives the judge
    overhead_tokens: ClassVar[int] = 0  # the CLI's own instructions and tool definitions, sent with every call

    def __init__(self, model: str, root: Path, binary: str, *, timeout: float | None = None) -> None:
        self.model = model
        self.price = pricing.price_for(model)
        self.root = Path(root)
        self.binary = binary
        self.timeout = env_settings().oracle_timeout if timeout is None else timeout
        self.system = system_prompt(self.tools)

    def _input_tokens(self, oracle_input: OracleInput) -> int:
        return self.overhead_tokens + token_estimate(self.system) + token_estimate(user_message(oracle_input))

    def estimate_cost(self, oracle_input: OracleInput) -> float:
        return call_estimate(self.price, self._input_tokens(oracle_input))

    def wall(self) -> float:
        """How long one judgement may take: a call's timeout for each tool round, and two more."""
        return self.timeout * (MAX_TOOL_ROUNDS + 2)

    def run(self, argv: list[str], stdin: str, wall: float, env: Mapping[str, str] | None = None) -> process.Output:
        """The CLI's answer, read whole; JudgeError when it cannot be started or gives none within ``wall``."""
        try:
            done = process.run_read(argv, self.root, input=stdin.encode(), env=env, timeout=wall)
        except OSError as exc:
            raise JudgeError(f"could not run {self.binary} ({exc}); check the {self.product} install") from None
        if done.exit.timed_out:  # its process group is gone with it, tools and all
            raise JudgeError(f"{self.label} gave no verdict within {wall:g} s; raise GOAL_CONVERGENCE_ORACLE_TIMEOUT "
                             "or try again later")
        return done

    def judgement(self, read: Callable[[list[str]], Verdict], notes: list[str], spent: Cost,
                  how: str = "") -> Judgement:
        """The verdict ``read`` finds in the answer (it may add to ``notes``), at the cost ``spent``."""
        try:
            verdict = read(notes)
        except BadAnswer as exc:
            raise JudgeError(f"{self.label} gave no valid verdict{how}: {exc}", spent) from None
        return Judgement(verdict=verdict, cost=spent, model=self.model, notes=notes)
