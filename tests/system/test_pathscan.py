"""Searches over all paths joined find exactly the paths a match falls in, forwards and backwards."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.system import pathscan

_PATHS = st.lists(st.text("ab/.", max_size=6).filter(lambda p: "\0" not in p), max_size=20)
_WORDS = st.lists(st.text("ab.", min_size=1, max_size=4), max_size=6)


@settings(max_examples=300, deadline=None)
@given(paths=_PATHS, words=_WORDS)
def test_a_search_picks_the_paths_it_matches_in_the_lists_order(paths, words):
    """``holding`` and ``ending`` name each path whose text (or reversed text) the search matches, once for each
    time it is listed; ``one_of`` matches exactly its words."""
    body = pathscan.one_of(words)
    assert all(re.fullmatch(body, w) for w in words)
    assert not any(re.fullmatch(body, w + "x") for w in words if w + "x" not in words)
    scan = pathscan.Paths(paths)
    forwards = re.compile(r"(?<![^\0/])" + body + r"(?=[/\0])") if words else re.compile("(?!)")
    backwards = re.compile(r"\0" + body + r"(?=[/\0])") if words else re.compile("(?!)")
    picked = scan.picked(scan.holding(forwards) | scan.ending(backwards), bool)
    expected = [p for p in paths if p and (any(part in words for part in p.split("/"))
                                           or p[::-1].split("/")[0] in words)]
    assert picked == expected
