from __future__ import annotations

import json
import subprocess
import sys

import pytest

from goal_convergence.errors import InvalidInput, PriceUnknown
from goal_convergence.storage import cost

MTOK = 1_000_000


@pytest.mark.parametrize("model, inp, out, read", [
    ("claude-haiku-5-5", 0.10, 0.50, 0.01),
    ("claude-haiku-4-5-20251001", 1, 5, 0.10),
    ("claude-sonnet-5-5", 2, 10, 0.10),
    ("claude-sonnet-5", 2, 10, 0.20),
    ("claude-sonnet-4-5-20250929", 3, 15, 0.30),
    ("claude-opus-5-5", 4, 20, 0.20),
    ("claude-opus-5[1m]", 5, 25, 0.50),
    ("claude-opus-4-5-20251101", 5, 25, 0.50),
    ("claude-opus-4-20250514", 15, 75, 1.50),
    ("claude-opus-4-1@20250805", 15, 75, 1.50),
    ("claude-fable-5-1", 10, 50, 0.25),
    ("claude-fable-5", 10, 50, 1),
    ("gpt-5.5", 5, 30, 0.50),
    ("gpt-5.1-codex", 1.25, 10, 0.125),
    ("gpt-5.1-codex-mini", 0.25, 2, 0.025),
    ("gpt-5-2025-08-07", 1.25, 10, 0.125),
])
def test_price_for_matches_the_longest_known_prefix(model, inp, out, read):
    price = cost.price_for(model)
    assert (price.input, price.output, price.cache_read) == (inp, out, read)


@pytest.mark.parametrize("model", ["gpt-5.1-codex-turbo", "gpt-6", "claude-opus-4-9", "claude-sonnet-5-5x",
                                   "claude-haiku", ""])
def test_unknown_model_is_an_error_that_says_how_to_add_it(model):
    with pytest.raises(PriceUnknown) as exc:
        cost.price_for(model)
    assert "prices.json" in str(exc.value) and '"input"' in str(exc.value)


def test_usage_cost_counts_every_kind_of_token():
    usage = {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 5000,
             "cache_creation_input_tokens": 3000,
             "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000}}
    expected = (1000 * 4 + 1000 * 5 + 2000 * 8 + 5000 * 0.20 + 200 * 20) / MTOK
    assert cost.usage_cost("claude-opus-5-5", usage) == pytest.approx(expected)
    assert cost.usage_tokens(usage) == 1000 + 3000 + 5000 + 200


def test_cache_writes_without_a_split_count_as_5_minute_writes():
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 1000, "cache_creation": None,
             "cache_read_input_tokens": None}
    assert cost.usage_cost("claude-sonnet-5", usage) == pytest.approx(1000 * 2.5 / MTOK)
    assert cost.usage_tokens(usage) == 1000


def test_haiku_5_5_long_prompts_cost_the_higher_tier():
    short = {"input_tokens": 60_000, "cache_read_input_tokens": 40_000, "output_tokens": 1000}
    long = {**short, "input_tokens": 60_001}
    assert cost.usage_cost("claude-haiku-5-5", short) == pytest.approx((60_000 * 0.10 + 40_000 * 0.01 + 1000 * 0.50) / MTOK)
    assert cost.usage_cost("claude-haiku-5-5", long) == pytest.approx((60_001 * 0.50 + 40_000 * 0.05 + 1000 * 2.50) / MTOK)


def test_user_file_overrides_and_adds_models(gc_home):
    gc_home.mkdir(parents=True, exist_ok=True)
    (gc_home / "prices.json").write_text(json.dumps({
        "claude-haiku-5-5": {"input": 1, "output": 2},
        "my-local-model": {"input": 0.5, "output": 1, "cache_read": 0.01},
    }))
    haiku = cost.price_for("claude-haiku-5-5")
    assert (haiku.input, haiku.output, haiku.cache_write_5m, haiku.cache_write_1h, haiku.cache_read) == (1, 2, 1.25, 2, 0.1)
    assert haiku.long_context is None  # the user's entry replaces the whole default entry
    assert cost.usage_cost("my-local-model-20260101", {"input_tokens": MTOK, "cache_read_input_tokens": MTOK}) == pytest.approx(0.51)
    assert cost.price_for("claude-sonnet-5").input == 2  # the rest of the defaults stay


@pytest.mark.parametrize("content", ["{not json", "[]", '{"m": {"input": 1}}', '{"m": {"input": -1, "output": 1}}'])
def test_broken_user_file_is_reported(gc_home, content):
    gc_home.mkdir(parents=True, exist_ok=True)
    (gc_home / "prices.json").write_text(content)
    with pytest.raises(InvalidInput, match="prices.json"):
        cost.price_for("claude-haiku-5-5")


def test_module_imports_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import goal_convergence.storage.cost; "
            "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in ('pydantic', 'anthropic', 'jsonschema', 'filelock', 'click')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
