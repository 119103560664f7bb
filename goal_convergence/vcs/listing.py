"""What a snapshot lists of the tree before it hashes it (snapshot.py): the files of its index, less those gone,
with the new ones; looked up and walked through without a copy of every entry."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Set


class Listed(Set[str]):
    """The files of an index not yet brought up to the tree: its entries but those ``gone``, and the ``new`` files."""

    def __init__(self, entries: Mapping[str, str], new: set[str], gone: set[str]) -> None:
        self._entries, self._new, self._gone = entries, new - entries.keys(), gone & entries.keys()

    def __contains__(self, rel: object) -> bool:
        return rel in self._new or rel in self._entries and rel not in self._gone

    def __iter__(self) -> Iterator[str]:
        kept = (rel for rel in self._entries if rel not in self._gone) if self._gone else iter(self._entries)
        return itertools.chain(kept, self._new)

    def __len__(self) -> int:
        return len(self._entries) - len(self._gone) + len(self._new)
