"""Which judges must run a model other than the maker's: the one rule goal creation and each maker turn apply."""

from __future__ import annotations

import pytest

from goal_convergence.models import OracleConfig
from goal_convergence.oracle import judged_by_maker_model, judges_with_model


@pytest.mark.parametrize(("provider", "with_model"), [
    ("auto", True), ("anthropic", True), ("claude-cli", True), ("command", False), ("conditions", False)])
def test_only_model_judges_can_share_the_makers_model(provider, with_model):
    config = OracleConfig(provider=provider, model="claude-haiku-5-5", command="judge")
    assert judges_with_model(provider) is with_model
    assert judged_by_maker_model(config, "claude-haiku-5-5-20251001") is with_model
    assert judged_by_maker_model(config, "claude-sonnet-5-5") is False
    assert judged_by_maker_model(config, None) is False
