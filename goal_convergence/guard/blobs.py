"""The bytes of the files a goal began with, kept under the home (``baselines/blobs``) by their sha256, for the
pristine copy and the tripwires.

The many files a goal keeps as it begins (every test file of a large project) are one pack of the goal's own,
``<goal>.pack`` with its index ``<goal>.idx``: two files written and synced together, not a file and a sync a
blob. A blob named on its own (``<sha256>``, as earlier versions kept them all) is read too. Every blob is
checked against its name as it is read: one changed on disk reads as missing, never as the start's content.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..system.files import write_many


class Blobs:
    """The blobs a goal can read: its own pack, then the blobs kept one a file."""

    def __init__(self, home: Path, goal_id: str) -> None:
        self.folder = Path(home) / "baselines" / "blobs"
        self._pack, self._idx = self.folder / f"{goal_id}.pack", self.folder / f"{goal_id}.idx"
        self._index: dict[str, tuple[int, int]] | None = None

    def _packed(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            try:
                self._index = {digest: (int(at), int(size)) for digest, (at, size) in
                               json.loads(self._idx.read_bytes()).items()}
            except (OSError, ValueError, TypeError):
                self._index = {}
        return self._index

    def has(self, digest: str) -> bool:
        return digest in self._packed() or (self.folder / digest).is_file()

    def read(self, digest: str) -> bytes | None:
        """The blob's bytes; None when it is missing, unreadable, or not what its name says."""
        try:
            if digest in self._packed():
                at, size = self._packed()[digest]
                with open(self._pack, "rb") as fh:
                    fh.seek(at)
                    data = fh.read(size)
            else:
                data = (self.folder / digest).read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == digest else None

    def keep(self, blobs: dict[str, bytes]) -> None:
        """Keep ``blobs`` (sha256 -> bytes) in the goal's pack, beside what it holds already."""
        if not blobs:
            return
        blobs = {**{digest: data for digest in self._packed() if (data := self.read(digest)) is not None}, **blobs}
        index, parts, at = {}, [], 0
        for digest, data in blobs.items():
            index[digest] = (at, len(data))
            parts.append(data)
            at += len(data)
        write_many([(self._pack, b"".join(parts)), (self._idx, json.dumps(index).encode())])
        self._index = index
