"""Defaults of a new goal that the library and the CLI's flags share (the flags show them in `--help`,
so this is imported whenever the CLI starts: nothing but constants)."""

DEFAULT_ORACLE_MODEL = "claude-haiku-5-5"
OTHER_ORACLE_MODELS = ("claude-sonnet-5-5", "claude-haiku-4-5")
# The codex-cli judge runs OpenAI models: this one when the default above (a Claude model) was left as it is.
DEFAULT_CODEX_ORACLE_MODEL = "gpt-5.1-codex-mini"
OTHER_CODEX_ORACLE_MODELS = ("gpt-5-mini", "o4-mini")
