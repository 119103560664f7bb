"""The judge's independence from the maker: which providers judge with a model, and when two model
ids name the same model. A judge running the maker's own model is no second opinion."""

from __future__ import annotations

import re

from ..models import OracleConfig

# ``auto`` counts: it becomes anthropic or claude-cli. ``command`` and ``conditions`` run no model of ours.
MODEL_PROVIDERS = ("auto", "anthropic", "claude-cli", "codex-cli", "gemini-cli")
_FAMILIES = ("opus", "sonnet", "haiku")
# Suffixes that name a snapshot, a context size or a provider's version of the same model:
# claude-haiku-5-5-20251001, claude-opus-5-5[1m], ...-latest, Vertex's @20251001, Bedrock's -v1:0.
_SUFFIX = re.compile(r"(\[1m\]|-\d{8}|@\d{8}|-latest|-v\d+(:\d+)?)$")


def judges_with_model(provider: str) -> bool:
    return provider in MODEL_PROVIDERS


def judged_by_maker_model(config: OracleConfig, maker_model: str | None) -> bool:
    """Whether the judge ``config`` asks for would run the maker's own model."""
    return judges_with_model(config.provider) and same_model(config.model, maker_model)


def _model_key(model: str) -> str:
    key = model.strip().lower().rsplit("/", 1)[-1]
    key = re.sub(r"^([a-z]{2,4}\.)?anthropic\.", "", key)  # Bedrock: (us.)anthropic.claude-...
    while _SUFFIX.search(key):
        key = _SUFFIX.sub("", key)
    return key


def same_model(a: str | None, b: str | None) -> bool:
    """Model ids name the same model when they differ only by a date, context or provider suffix.
    A bare alias (opus, sonnet, haiku) is whichever model of its family is current, so it counts as
    the same as every model of that family."""
    if not a or not b:
        return False
    ka, kb = _model_key(a), _model_key(b)
    if ka in _FAMILIES or kb in _FAMILIES:
        alias, other = (ka, kb) if ka in _FAMILIES else (kb, ka)
        return alias == other or alias in other.split("-")
    return ka == kb
