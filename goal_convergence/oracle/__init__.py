"""The oracle: a second, read-only judge of each iteration, that did not write the code.

``build_input`` turns a goal and its fresh condition evidence into a small ``OracleInput``;
``get_oracle`` picks the judge the goal asks for, and ``Oracle.judge`` answers a ``Judgement``
(the verdict as the oracle gave it, and what it cost). Providers, one module each:

- ``anthropic`` (api.py): the Messages API with read-only tools confined to the project root (tools.py);
- ``claude-cli`` (claude_cli.py): the user's own Claude Code (``claude -p``), for a login without an API key;
- ``codex-cli`` (codex_cli.py): the user's own Codex CLI (``codex exec``) in its read-only sandbox;
- ``gemini-cli`` (gemini_cli.py): Gemini CLI (``gemini -p``) in its read-only plan mode, a judge from another vendor;
- ``command`` (command.py): any program that reads the input as JSON on stdin and prints a verdict;
- ``conditions`` (conditions_only.py): no model at all: the conditions alone, plus an optional ``--expect`` regex.

The rule "converged only if every condition passed" is not applied here: the verdict comes back
as given, and the pure decision step overrides it. ``anthropic`` is imported only inside the
provider that uses it: the hooks import this package on every stop.
"""

from .choose import Oracle, get_oracle
from .independence import judged_by_maker_model, judges_with_model
from .input import OracleInput, build_input
from .verdict import Judgement

__all__ = ["Judgement", "Oracle", "OracleInput", "build_input", "get_oracle", "judged_by_maker_model",
           "judges_with_model"]
