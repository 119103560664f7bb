"""The `goal` console script. Hooks run on every turn of every session, so `goal hook ...` is
dispatched before click, pydantic or anything else heavy is imported."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        from .claude_code.dispatch import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    from .cli import main as cli_main

    sys.exit(cli_main())
