"""Reading a model's verdict: one JSON object, fenced or bare, that matches the verdict schema."""

from __future__ import annotations

import pytest

from goal_convergence.oracle.verdict import BadAnswer, parse_verdict


@pytest.mark.parametrize("answer", [
    '{"converged": true}',
    'Verdict:\n```json\n{"converged": true}\n```\n',
    'I checked everything. {"converged": true, "reasons": ["ok"]} Done.',
    '```\n{"converged": false}\n```\n\nFinal:\n```json\n{"converged": true}\n```',
])
def test_parse_verdict_takes_one_object_fenced_or_bare(answer):
    assert parse_verdict(answer).converged is True


@pytest.mark.parametrize("answer, problem", [
    ("", "empty"), ("no verdict here", "no JSON object"), ("[1, 2]", "list, not an object"),
    ('{"converged": NaN}', "not valid JSON"), ('{"converged": true, "extra": 1}', "verdict schema"),
    ('{"converged": true, "confidence": 2}', "verdict schema"),
])
def test_parse_verdict_is_strict(answer, problem):
    with pytest.raises(BadAnswer, match=problem):
        parse_verdict(answer)
