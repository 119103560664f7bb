"""The long form of billed == charged (tests/stress/money.py): more attempts' iterations, more racing Stop hooks."""

from __future__ import annotations

import pytest

from . import money
from .invariants import Lost
from .report import assert_clean
from .scale import sized

pytestmark = pytest.mark.stress


def test_billed_equals_charged_with_attempts_and_racing_stop_hooks(git_repo, gc_home, fake_api, tmp_path, tally):
    row = tally("billed == charged: `goal run --attempts 3`, racing Stop hooks")
    with row.attempt("one race"):
        got = money.run(git_repo, fake_api, tmp_path, attempts=3, iterations=sized(12, 6), hooks=sized(16, 6))
        if abs(got.oracle_billed - got.oracle_charged) > 1e-9 or abs(got.maker_billed - got.maker_charged) > 1e-9:
            raise Lost(f"billed and charged differ: {got}")
    assert_clean(row)
