"""The only code that touches goal and triage files.

Every read and write is parsed strictly and validated by the models (the schemas in ``schemas/``
are generated from them, so a second pass with jsonschema would find nothing new). Writes are atomic
(temp file in the same folder, fsync, rename) under a per-file lock, files are 0600 and folders 0700.
A file that does not parse or validate is moved to ``quarantine/`` and reported once; everything
else keeps working.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from ..errors import CorruptFile, GoalNotFound, InvalidInput, problems
from ..models import GOAL_ID_RE, TRIAGE_ID_RE, Goal, Iteration, Model, TriageItem, now_iso
from ..system import files, index, reindex, seal
from ..system.files import write_atomic
from . import evidence_files

M = TypeVar("M", bound=Model)

_KINDS: dict[type[Model], tuple[str, re.Pattern[str]]] = {
    Goal: ("goals", GOAL_ID_RE),
    TriageItem: ("triage", TRIAGE_ID_RE),
}
__all__ = ["Store", "write_atomic"]


PENDING = ".pending"  # a staged companion document (Store.update): never listed, published by a rename


def _id_of(item: Model) -> str:
    return item.goal_id if isinstance(item, Goal) else item.triage_id  # type: ignore[attr-defined]


def _publish(staged: tuple[Path, Path] | None) -> None:
    """Give a staged document its name: a rename, which needs no room on a full disk. Called under the lock
    of the document it belongs with, which every other writer of it takes first."""
    if staged is None:
        return
    pending, path = staged
    if path.exists():
        pending.unlink(missing_ok=True)  # written meanwhile by a repair: the one there is kept
        return
    try:
        os.replace(pending, path)
    except FileNotFoundError:
        pass  # settled by another process meanwhile


def _copy(item: M) -> M:
    """A copy to hand out or to change. A goal's recorded iterations are shared, not copied (deepcopy's
    memo): nothing changes one once it is recorded, and copying 1,000 of them costs more than a read."""
    return copy.deepcopy(item, {id(it): it for it in item.history} if isinstance(item, Goal) else {})


class Store:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root else index.home()
        self.quarantined: list[tuple[Path, str]] = []
        # Each document as this store last read or wrote it (stamps of its files, model, JSON): a Stop
        # loads and saves its goal several times, and a goal of 1,000 iterations must be read and
        # validated once, not at each of them. Trusted only while the stamps are unchanged.
        self._kept: dict[Path, tuple[list, Model, dict]] = {}
        self._unsealed: set[Path] = set()  # goal files read as written before the seal (seal.py)

    # ---- paths and plumbing -------------------------------------------------------------

    def _dir(self, name: str) -> Path:
        return files.folder(self.root, name)

    def path_for(self, kind: type[Model], item_id: str) -> Path:
        folder, pattern = _KINDS[kind]
        # fullmatch, not match: `$` lets "goal-abcdefgh\n" through. Checked before any path is built.
        if not isinstance(item_id, str) or not pattern.fullmatch(item_id):
            what = "goal id" if kind is Goal else "triage id"
            see = "goal list --all" if kind is Goal else "goal triage list"
            raise InvalidInput(f"{item_id!r} is not a valid {what} (expected {pattern.pattern}); "
                               f"run `{see}` to see the ids")
        return self._dir(folder) / f"{item_id}.json"

    @contextmanager
    def lock(self, path: Path, write: bool = True) -> Iterator[None]:
        with files.lock(self.root, path, write):
            yield

    def _write(self, path: Path, doc: dict) -> None:
        files.write_json(path, doc)

    def _write_goal(self, path: Path, goal: Goal, doc: dict, then: Callable[[], None] | None = None) -> None:
        """Write a goal file sealed (seal.py), and keep its terms when it is not tampered. A tampered
        goal is written with its note in the seal: it stays tampered until the engine escalates it."""
        note = goal.tampered
        text = seal.seal(self.root, f"goals/{path.name}", doc, extra={"tampered": note} if note else None)
        files.write_atomic(path, (text + "\n").encode("utf-8"))
        if then:
            then()  # at once: whatever fails after this, the goal file is written
        if note is None:
            seal.write_terms(self.root, goal.goal_id, doc)
        if path in self._unsealed:
            seal.retire(self.root, f"goals/{path.name}")
            self._unsealed.discard(path)

    def _parse(self, kind: type[M], path: Path, text: str) -> tuple[M, dict]:
        """The document as a model, and as the JSON it was validated from."""
        doc = files.parse_document(path, text)
        tampered = None
        if kind is Goal:
            unsealed = isinstance(doc, dict) and seal.FIELD not in doc
            tampered = seal.goal_problem(self.root, path.stem, text, doc)
            if unsealed and tampered is None:
                self._unsealed.add(path)
            doc = evidence_files.hydrate(path, doc)
        try:
            item = kind.from_doc(doc)
        except ValidationError as exc:
            raise CorruptFile(f"{path} is not a valid {kind.__name__}: {problems(exc)}") from None
        if tampered is not None:
            item.mark_tampered(tampered)  # type: ignore[attr-defined]
        return item, doc  # type: ignore[return-value]

    def _validated_doc(self, item: Model, read: dict | None = None) -> dict:
        doc = item.dump()
        check = doc
        if read is not None and isinstance(read.get("history"), list) and isinstance(doc.get("history"), list):
            # The iterations that are as they were read were validated then: a goal of 1,000 iterations
            # must not pay for them again at every write.
            old = read["history"]
            check = {**doc, "history": [it for n, it in enumerate(doc["history"]) if n >= len(old) or it != old[n]]}
        try:  # in-place changes (a list appended to) skip validation: check the document we write
            type(item).from_doc(check)
        except ValidationError as exc:  # a bug of ours, never a user's: refuse to write a file we could not read back
            raise CorruptFile(f"refusing to write an invalid {type(item).__name__}: {problems(exc)}") from None
        return doc

    def _read(self, kind: type[M], path: Path) -> M:
        """Read one document; call it under the document's lock, since a broken one is moved away."""
        return self._read_with_doc(kind, path)[0]

    def _read_with_doc(self, kind: type[M], path: Path) -> tuple[M, dict]:
        return files.read_as(self.root, path, lambda text: self._parse(kind, path, text),
                             "goal" if kind is Goal else "triage item")

    def _stamps(self, path: Path, item: Model) -> list:
        """The stamps of the files ``item`` was read from: the goal file, and the side files of the
        iterations whose evidence a load puts back."""
        found: list = [index.file_stamp(path)]
        if isinstance(item, Goal):
            found += evidence_files.stamps(path, [it.number for it in item.history[-evidence_files.HYDRATED:]])
        return found

    def _read_kept(self, kind: type[M], path: Path) -> tuple[M, dict]:
        """``_read_with_doc``, answered from what this store last read or wrote when no file of the
        document changed since (call it under the document's lock, as that)."""
        kept = self._kept.get(path)
        try:
            if kept is not None and isinstance(kept[1], kind) and self._stamps(path, kept[1]) == kept[0]:
                return _copy(kept[1]), kept[2]  # type: ignore[return-value]
        except OSError:
            pass  # gone: the read says so
        self._kept.pop(path, None)
        item, doc = self._read_with_doc(kind, path)
        self._kept[path] = (self._stamps(path, item), _copy(item), doc)
        return item, doc

    def _keep(self, path: Path, item: Model, doc: dict, written: dict) -> None:
        """Remember a document just written as a load would give it back: a goal's older iterations
        compact, their evidence in side files (evidence_files.py)."""
        kept = _copy(item)
        if isinstance(kept, Goal):
            doc, compacted = evidence_files.as_loaded(doc, written)
            for n in compacted:
                kept.history[n] = Iteration.from_doc(doc["history"][n])
        self._kept[path] = (self._stamps(path, kept), kept, doc)

    # ---- generic documents --------------------------------------------------------------

    def load(self, kind: type[M], item_id: str) -> M:
        path = self.path_for(kind, item_id)
        with self.lock(path, write=False):
            return self._read_kept(kind, path)[0]

    def create(self, item: M) -> M:
        item_id = _id_of(item)
        path = self.path_for(type(item), item_id)
        with self.lock(path):
            if path.exists():
                raise InvalidInput(f"{item_id} already exists")
            self._save_locked(path, item)
        self._ensure_bindings(item)
        return item

    def update(self, kind: type[M], item_id: str, change: Callable[[M], M | None],
               companion: Callable[[M], Model | None] | None = None) -> M:
        """Load, change and save one document under its lock: the only read-modify-write there is.

        ``companion``, given the changed document, may name a new document that must exist if and only if
        this change does (an escalation's triage item): the two are one durable step. The companion is
        written first under a pending name that no reader lists, and published by a rename (which needs no
        room on the disk) as soon as the document is on disk; a failure before that removes it, and one a
        kill leaves behind is settled by the next ``settle_pending``."""
        path = self.path_for(kind, item_id)
        with self.lock(path):
            item, read = self._read_kept(kind, path)
            session_before = getattr(item, "session_id", None)
            staged = None
            try:
                item = change(item) or item
                staged = self._stage(companion(item)) if companion else None
                self._save_locked(path, item, session_before, read, then=lambda: _publish(staged))
            except BaseException:
                self._kept.pop(path, None)  # the change may have reached the iterations the kept copy shares
                if staged is not None:
                    staged[0].unlink(missing_ok=True)  # not published: the document it belongs with was not written
                raise
        self._ensure_bindings(item)
        return item

    def _stage(self, item: Model | None) -> tuple[Path, Path] | None:
        """Write ``item`` under its pending name (``update``); None when there is nothing to write."""
        if item is None:
            return None
        path = self.path_for(type(item), _id_of(item))
        if path.exists():
            return None  # written already: a retry after a crash, or a repair
        pending = path.with_name(f".{path.name}{PENDING}")
        self._write(pending, self._validated_doc(item))
        return pending, path

    def settle_pending(self) -> None:
        """Finish or undo the escalations a kill left between their two writes: a staged triage item whose
        goal names it is published, any other is removed (the escalation never reached the goal file). Each
        is decided under its goal's lock, which its writer holds until it publishes."""
        for pending in self._dir("triage").glob(f".*.json{PENDING}"):
            item_id = pending.name[1:-len(".json" + PENDING)]
            try:
                goal_id = files.parse_json(files.read_trusted(pending).decode("utf-8"))["goalId"]
                goal_path = self.path_for(Goal, goal_id)
            except FileNotFoundError:
                continue  # published or removed meanwhile
            except (OSError, ValueError, KeyError, TypeError, RecursionError, InvalidInput, files.Refused):
                pending.unlink(missing_ok=True)  # not one of ours to publish
                continue
            with self.lock(goal_path):
                try:
                    goal: Goal | None = self._read(Goal, goal_path)
                except (GoalNotFound, CorruptFile):
                    goal = None
                esc = goal.escalation if goal is not None and goal.state == "escalated" else None
                if esc is not None and esc.triage_id == item_id:
                    _publish((pending, pending.with_name(f"{item_id}.json")))
                else:
                    pending.unlink(missing_ok=True)

    def _ensure_bindings(self, item: Model) -> None:
        """A home without binding files (new, or from 0.1.0) gets all of them from a fresh index,
        outside any goal's lock."""
        if isinstance(item, Goal) and not index.sessions_dir(self.root).is_dir():
            self.summaries()

    def _save_locked(self, path: Path, item: Model, session_before: str | None = None, read: dict | None = None,
                     then: Callable[[], None] | None = None) -> None:
        """Write ``item``, then call ``then`` as soon as its own file is on disk."""
        item.updated_at = now_iso()  # type: ignore[attr-defined]
        doc = self._validated_doc(item, read)
        written = evidence_files.externalize(path, doc) if isinstance(item, Goal) else doc
        if not isinstance(item, Goal):
            self._write(path, written)
            if then:
                then()
        else:
            self._write_goal(path, item, written, then)
            self._index_put(item.goal_id, written, path, item.tampered)
            if index.sessions_dir(self.root).is_dir():  # else the next refresh of the index writes them all
                if session_before != item.session_id:
                    index.bind(self.root, session_before, item.goal_id, False)
                index.bind(self.root, item.session_id, item.goal_id, item.state == "active" or bool(item.tampered))
        self._keep(path, item, doc, written)

    def _read_all(self, kind: type[M]) -> list[tuple[M, list[int]]]:
        """Every valid document of a kind with the stamp of the file it came from, taken under its
        lock; broken ones are quarantined and listed in ``quarantined``."""
        folder, pattern = _KINDS[kind]
        found = []
        if not (self.root / folder).exists():
            return found  # none yet: nothing to make, in a home that may be read-only
        for path in sorted(self._dir(folder).glob("*.json")):
            if not pattern.fullmatch(path.stem):
                continue
            try:
                with self.lock(path, write=False):
                    found.append((self._read(kind, path), index.file_stamp(path)))
            except CorruptFile as exc:
                self.quarantined.append((exc.moved_to or path, exc.reason))
            except (GoalNotFound, FileNotFoundError):
                continue  # removed since the folder was listed
        return found

    def iter_all(self, kind: type[M]) -> list[M]:
        found = self._read_all(kind)
        if kind is Goal:
            self._index_rebuild(found)  # type: ignore[arg-type]
        return [item for item, _ in found]

    # ---- goal index (see index.py) ------------------------------------------------------

    def _index_put(self, goal_id: str, doc: dict, path: Path, tampered: str | None) -> None:
        ipath = index.index_path(self.root)
        with self.lock(ipath):
            entries = index.cached(self.root)
            entries[goal_id] = index.summary(doc, index.file_stamp(path), tampered)
            self._write(ipath, {"goals": entries})

    def _index_rebuild(self, found: list[tuple[Goal, list[int]]]) -> list[dict]:
        # Each summary keeps the stamp of the file as it was read: a goal written since then no
        # longer matches its stamp, so readers see the index as stale instead of trusting old news.
        entries = {g.goal_id: index.summary(g.dump(), stamp, g.tampered) for g, stamp in found}
        reindex.write(self.root, entries)
        return list(entries.values())

    def summaries(self, refresh: bool = False) -> list[dict]:
        """Goal summaries from the index, brought up to date by re-reading only the goal files
        whose stamp changed (which also quarantines the broken ones among them); ``refresh`` asks
        for a full read that validates every goal file with the models."""
        if refresh:
            return self._index_rebuild(self._read_all(Goal))
        return reindex.summaries(self.root, self.quarantined)
