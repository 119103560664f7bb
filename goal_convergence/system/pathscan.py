"""The few paths of a long list that a rule can pick, found by a pass of the regex engine over all of them joined
(a path never holds NUL, so NUL joins them), not by a step of Python a path: on a tree of 200,000 files the
rules that classify paths run over only those few.

A search runs forwards over the joined paths, or backwards over them reversed, where each path begins right after
a NUL with the end of its name: a rule about how names end is a literal there, anchored, and the regex engine
rejects every other path at its first character. A search is quick when its regex begins with a literal (``/``,
``\\0``, ``test_``), which the engine looks for before trying the rest; one that begins with a class of characters
(``[/\\0]``) or with alternatives of their own is several times slower. Standard library only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from functools import cached_property


class Paths:
    """A list of paths, kept joined for searches over all of them; a search answers with where each path it
    found begins in ``text``, which ``picked`` turns back into paths, in the list's order."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.text = "\0" + "\0".join(paths) + "\0"

    @cached_property
    def backwards(self) -> str:
        """The joined paths reversed: each reversed path between two NULs, its name first."""
        return self.text[::-1]

    def holding(self, hint: re.Pattern[str]) -> set[int]:
        """The paths in which ``hint`` finds a match (one that begins with the NUL before a path is that path's)."""
        text = self.text
        return {text.rfind("\0", 0, m.start() + 1) + 1 for m in hint.finditer(text)}

    def ending(self, hint: re.Pattern[str]) -> set[int]:
        """The paths in whose reversed form ``hint`` finds a match: ``\\0yp\\.`` finds every path ending in ``.py``."""
        back, size = self.backwards, len(self.text)
        return {size - back.find("\0", m.start() + 1) for m in hint.finditer(back)}

    def where(self, rule: Callable[[str], object]) -> set[int]:
        """The paths ``rule`` picks, each tried (for rules no search can stand in for)."""
        starts = itertools.accumulate(map(len, self.paths), lambda at, size: at + size + 1, initial=1)
        return {at for at, rel in zip(starts, self.paths) if rule(rel)}

    def picked(self, found: set[int], rule: Callable[[str], object]) -> list[str]:
        """The paths that begin at ``found`` and that ``rule`` picks, in the list's order."""
        text = self.text
        return [rel for rel in (text[at:text.find("\0", at)] for at in sorted(found)) if rule(rel)]


def one_of(words: Iterable[str]) -> str:
    """A regex body matching any of ``words`` (literal text), as a tree of their shared beginnings: the regex engine
    tries alternatives one by one, so ``(?:jest|json)`` is ``j(?:est|son)``, one character looked at, not two."""
    tree: dict[str, dict] = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    return _body(tree) if tree else "(?!)"  # none: nothing matches


def _body(node: dict[str, dict]) -> str:
    alternatives = [re.escape(ch) + _body(rest) for ch, rest in sorted(node.items()) if ch]
    body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
    return "" if not alternatives else f"(?:{body})?" if "" in node else body
