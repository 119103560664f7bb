"""The ``codex-cli`` judge: the user's own Codex CLI (``codex exec``) in its read-only sandbox, for a goal
judged by an OpenAI model. Like every judge with a model, its model must differ from the maker's."""

from __future__ import annotations

from ..models import Cost, codex_exec
from ..storage import cost as pricing
from ..storage import rollout
from ..system.text import cut
from .cli_judge import CliJudge
from .input import OracleInput
from .prompt import user_message
from .verdict import JudgeError, Judgement, parse_verdict

# Codex's own instructions and tool definitions, sent with every call (measured on 0.171.0: about 10k tokens).
CODEX_OVERHEAD_TOKENS = 11_000


class CodexCliOracle(CliJudge):
    """`codex exec --json` in the project with ``--sandbox read-only``, hooks off (a judge runs none of the
    plugin's hooks), nothing saved (``--ephemeral``); its verdict is its last message, its cost the turn's
    usage at the model's price."""

    name, label, product = "codex-cli", "codex exec", "Codex CLI"
    tools = ("Tools: Codex's shell, in a read-only sandbox rooted at the project folder: read files and run "
             "read-only commands (cat, ls, grep); nothing you run can change a file. Answer with only the JSON object.")
    overhead_tokens = CODEX_OVERHEAD_TOKENS

    def command(self) -> list[str]:
        return [self.binary, "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--ephemeral",
                "--disable", "hooks", "--model", self.model, "--cd", str(self.root), "-"]

    def judge(self, oracle_input: OracleInput) -> Judgement:
        # Codex takes no system prompt of ours: the instructions lead the one message.
        done = self.run(self.command(), f"{self.system}\n\n{user_message(oracle_input)}", self.wall())
        result = codex_exec.parse(done.stdout)
        counts = rollout.usage_counts(result.usage())
        spent = Cost(dollars=pricing.counts_cost(pricing.applies(self.price, counts), counts), tokens=sum(counts))
        if done.exit.code != 0 or result.error or not result.completed:
            detail = result.error or cut((done.stderr or done.stdout).strip(), 500) or "no output"
            raise JudgeError(f"codex exec exited {done.exit.code} without a verdict: {cut(detail, 500)}; "
                             "run `codex exec hi` to check its login", spent)
        return self.judgement(lambda notes: parse_verdict(result.message or "", notes),
                              ["codex exec, read-only sandbox"], spent)
