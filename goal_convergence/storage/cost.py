"""The price table and what a model call costs.

Prices are data (``storage/prices.json``, USD per million tokens) that a user can override or extend
with ``$GOAL_CONVERGENCE_HOME/prices.json``. An unknown model is an error, never a silent $0: a
budget counted at zero would never stop a loop. The Stop hook meters a session's spend with this
on every stop of a goal's session (the hooks' fast path, for sessions without a goal, never loads it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, PriceUnknown
from ..system.index import home

# What may follow a known id: a release date ("-20251001", Vertex's "@20251001", OpenAI's "-2025-08-07") and a
# context variant ("[1m]"). Anything else is another model, which must not borrow a price by accident.
_SUFFIX = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2})?(?:\[[0-9a-z]+\])?")
_DEFAULTS = Path(__file__).with_name("prices.json")  # not importlib.resources: it costs hooks 9 ms
_FIELDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``long_context`` is the price of a request whose prompt is above
    ``long_context_above`` tokens (Haiku 5.5 above 100k)."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    long_context_above: int | None = None
    long_context: Price | None = None


def user_prices_path() -> Path:
    return home() / "prices.json"


def price_for(model: str) -> Price:
    table = _table(*_user_file_stamp())
    known = [m for m in table if model.startswith(m) and _SUFFIX.fullmatch(model[len(m):])]
    if not known:
        raise PriceUnknown(
            f"no price for model {model!r}, so its cost cannot be counted; add it to {user_prices_path()} as "
            f'{{"{model}": {{"input": <USD per million input tokens>, "output": <USD per million output tokens>}}}}'
        )
    return table[max(known, key=len)]


def dearest_output() -> float:
    """The highest output price in the table (USD per million tokens): what spend no price counts is
    reckoned at, to stay on the safe side."""
    return max(price.output for price in _table(*_user_file_stamp()).values())


def gemini_counts(prompt: int, cached: int, output: int, thoughts: int = 0, tool: int = 0) -> tuple[int, ...]:
    """Gemini tokens as ``usage_counts`` orders them: the prompt's uncached part (and the tool-use prompt) at the
    input price, its cached part at the cache price, the output and the thinking at the output price."""
    cached = min(max(0, cached), max(0, prompt))
    return max(0, prompt) - cached + max(0, tool), 0, 0, cached, max(0, output) + max(0, thoughts)


def priced(calls: dict[str, list[tuple[int, ...]]]) -> tuple[float, int, dict[str, int]]:
    """Dollars and tokens of calls (``usage_counts`` tuples) by model, and the tokens of each model with no
    price: those are counted in tokens only, and the caller must say so (``unpriced_note``), never count $0."""
    dollars, tokens, unpriced = 0.0, 0, {}
    for model, counts in calls.items():
        spent = sum(map(sum, counts))
        tokens += spent
        try:
            price = price_for(model)
        except PriceUnknown:
            unpriced[model] = unpriced.get(model, 0) + spent
            continue
        dollars += sum(counts_cost(applies(price, c), c) for c in counts)  # type: ignore[arg-type]
    return dollars, tokens, unpriced


def unpriced_note(unpriced: dict[str, int]) -> str:
    names = ", ".join(f"{model} ({tokens} tokens)" for model, tokens in unpriced.items())
    return (f"goal-convergence: no price for {names}, so that spend is counted in tokens, not dollars, and the goal "
            f"is held to a token budget (what its dollars left buy at the dearest price known). Add the price to "
            f'{user_prices_path()} as {{"<model>": {{"input": <USD per million tokens>, "output": <USD per million>}}}}')


def usage_counts(usage: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """One call's tokens as (input, 5-minute cache writes, 1-hour cache writes, cache reads, output). A
    cache-write total without the split counts as 5-minute writes. ValueError or TypeError for a count that
    is no number."""
    split = usage.get("cache_creation") or {}
    w5m = _tokens(split.get("ephemeral_5m_input_tokens"))
    w1h = _tokens(split.get("ephemeral_1h_input_tokens"))
    total = _tokens(usage.get("cache_creation_input_tokens"))
    return (_tokens(usage.get("input_tokens")), w5m + max(0, total - w5m - w1h), w1h,
            _tokens(usage.get("cache_read_input_tokens")), _tokens(usage.get("output_tokens")))


def _tokens(value: Any) -> int:
    try:
        return int(value or 0)
    except OverflowError:  # an infinite float (JSON's Infinity, or 1e999): a ValueError like NaN's
        raise ValueError(f"{value!r} is not a token count") from None


def usage_tokens(usage: dict[str, Any]) -> int:
    """Every token a call was billed for: input, cache writes and reads, and output."""
    return sum(usage_counts(usage))


def applies(price: Price, counts: tuple[int, int, int, int, int]) -> Price:
    """The price of a call with these ``usage_counts``: the long-context one above its threshold."""
    if price.long_context and price.long_context_above is not None and sum(counts[:4]) > price.long_context_above:
        return price.long_context
    return price


def counts_cost(price: Price, counts: tuple[int, int, int, int, int]) -> float:
    """Dollars for ``usage_counts`` (of one call, or summed over calls that ``applies`` gives one price)."""
    tokens_in, w5m, w1h, read, out = counts
    return (tokens_in * price.input + w5m * price.cache_write_5m + w1h * price.cache_write_1h
            + read * price.cache_read + out * price.output) / 1e6


def usage_cost(model: str, usage: dict[str, Any], price: Price | None = None) -> float:
    """Dollars for one call's usage (keys as the API and Claude Code transcripts give them); ``price``
    is ``price_for(model)``, passed by a caller that prices many calls of one model."""
    counts = usage_counts(usage)
    return counts_cost(applies(price or price_for(model), counts), counts)


def _user_file_stamp() -> tuple[str, int | None]:
    path = user_prices_path()
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), None


@cache
def _table(user_path: str, user_mtime: int | None) -> dict[str, Price]:
    defaults = json.loads(_DEFAULTS.read_text(encoding="utf-8"))
    table = {model: _price(entry, "storage/prices.json", model) for model, entry in defaults.items()
             if not model.startswith("_")}
    if user_mtime is not None:
        try:
            overrides = json.loads(Path(user_path).read_text(encoding="utf-8"))
            if not isinstance(overrides, dict):
                raise ValueError("the file must hold one JSON object, keyed by model id")
        except ValueError as exc:
            raise InvalidInput(f"{user_path} is not a valid price file ({exc}); fix or remove it") from None
        table.update({model: _price(entry, user_path, model) for model, entry in overrides.items()
                      if not model.startswith("_")})
    return table


def _price(entry: Any, source: str, model: str) -> Price:
    try:
        inp, out = float(entry["input"]), float(entry["output"])
        # The API's cache multipliers, so a user entry may give only input and output.
        values = {"input": inp, "output": out, "cache_write_5m": 1.25 * inp, "cache_write_1h": 2 * inp,
                  "cache_read": 0.1 * inp, **{k: float(entry[k]) for k in _FIELDS if k in entry}}
        if any(v < 0 for v in values.values()):
            raise ValueError("a price cannot be negative")
        long = entry.get("long_context")
        if long is None:
            return Price(**values)
        return Price(**values, long_context_above=int(long["above_tokens"]), long_context=_price(long, source, model))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidInput(
            f"the price of {model!r} in {source} is not valid ({type(exc).__name__}: {exc}); give it as "
            f'{{"input": <USD per million tokens>, "output": <USD per million tokens>}}'
        ) from None
