"""The only code that touches goal and triage files.

Every read and write is parsed strictly and validated by the models (the schemas in ``schemas/``
are generated from them, so a second pass with jsonschema would find nothing new). Writes are atomic
(temp file in the same folder, fsync, rename) under a per-file lock, files are 0600 and folders 0700.
A file that does not parse or validate is moved to ``quarantine/`` and reported once; everything
else keeps working.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from filelock import FileLock, Timeout
from pydantic import ValidationError

from . import evidence_files, index, schema
from .errors import CorruptFile, GoalConvergenceError, GoalNotFound, InvalidInput, problems
from .models import GOAL_ID_RE, TRIAGE_ID_RE, Goal, Iteration, Model, TriageItem, now_iso

M = TypeVar("M", bound=Model)
T = TypeVar("T")

_KINDS: dict[type[Model], tuple[str, re.Pattern[str]]] = {
    Goal: ("goals", GOAL_ID_RE),
    TriageItem: ("triage", TRIAGE_ID_RE),
}
LOCK_TIMEOUT = 30.0
# A write's temp file lives for milliseconds; one this old was left by a killed writer.
STALE_TEMP_SECONDS = 600


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file whole or not at all: a temp file (0600) in the same folder, fsync, rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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

    # ---- paths and plumbing -------------------------------------------------------------

    def _dir(self, name: str) -> Path:
        path = self.root / name
        if not path.is_dir():
            # mkdir(parents=True) gives the parents the umask's mode: make the home 0700 ourselves
            # when we are the ones creating it (an existing ~/.claude is the user's to keep).
            if not self.root.is_dir():
                self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.mkdir(exist_ok=True, mode=0o700)
        return path

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
    def lock(self, path: Path) -> Iterator[None]:
        try:
            with FileLock(str(self._dir("locks") / f"{path.name}.lock"), timeout=LOCK_TIMEOUT, mode=0o600):
                yield
        except Timeout:
            raise GoalConvergenceError(
                f"{path.name} stayed locked by another goal-convergence process for {LOCK_TIMEOUT:g}s; "
                f"wait for it to finish (see `ps`) and try again") from None

    def _write(self, path: Path, doc: dict) -> None:
        # Not indented: Python's JSON encoder in C does not indent, and the one that does took half
        # of a Stop hook's time for a goal with 1,000 iterations. `goal status --json` prints it indented.
        write_atomic(path, (json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))

    def _quarantine(self, path: Path, reason: str) -> Path:
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S%f")
        dest = self._dir("quarantine") / f"{path.name}.{stamp}"
        os.replace(path, dest)
        note = os.open(dest.with_name(dest.name + ".reason.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(note, "w", encoding="utf-8") as fh:
            fh.write(f"{path}\n{reason}\n")
        return dest

    def _parse(self, kind: type[M], path: Path, text: str) -> tuple[M, dict]:
        """The document as a model, and as the JSON it was validated from."""
        doc = self._parse_json(path, text)
        if kind is Goal:
            doc = evidence_files.hydrate(path, doc)
        try:
            return kind.from_doc(doc), doc  # type: ignore[return-value]
        except ValidationError as exc:
            raise CorruptFile(f"{path} is not a valid {kind.__name__}: {problems(exc)}") from None

    @staticmethod
    def _parse_json(path: Path, text: str) -> object:
        try:
            return schema.parse_json(text)
        except RecursionError:  # `[` x 100,000: a file, not a bug of ours, so it is quarantined like any other
            raise CorruptFile(f"{path} is not valid JSON (nested too deeply to read)") from None
        except ValueError as exc:
            raise CorruptFile(f"{path} is not valid JSON ({exc})") from None

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
        return self._read_as(path, lambda text: self._parse(kind, path, text), "goal" if kind is Goal else "triage item")

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

    def _read_as(self, path: Path, parse: Callable[[str], T], what: str) -> T:
        try:
            text = path.read_text(encoding="utf-8", errors="strict")
        except FileNotFoundError:
            raise GoalNotFound(f"no {what} {path.stem}; run `goal list --all` or `goal triage list` to see them") from None
        except UnicodeDecodeError as exc:
            text, reason = None, f"{path} is not UTF-8 ({exc.reason})"
        if text is not None:
            try:
                return parse(text)
            except CorruptFile as exc:
                reason = str(exc)
        dest = self._quarantine(path, reason)
        error = CorruptFile(f"{reason}. It was moved to {dest}; restore it by hand or start a new goal.")
        error.moved_to, error.reason = dest, reason
        raise error

    # ---- generic documents --------------------------------------------------------------

    def load(self, kind: type[M], item_id: str) -> M:
        path = self.path_for(kind, item_id)
        with self.lock(path):
            return self._read_kept(kind, path)[0]

    def create(self, item: M) -> M:
        item_id = item.goal_id if isinstance(item, Goal) else item.triage_id  # type: ignore[attr-defined]
        path = self.path_for(type(item), item_id)
        with self.lock(path):
            if path.exists():
                raise InvalidInput(f"{item_id} already exists")
            self._save_locked(path, item)
        self._ensure_bindings(item)
        return item

    def update(self, kind: type[M], item_id: str, change: Callable[[M], M | None]) -> M:
        """Load, change and save one document under its lock: the only read-modify-write there is."""
        path = self.path_for(kind, item_id)
        with self.lock(path):
            item, read = self._read_kept(kind, path)
            session_before = getattr(item, "session_id", None)
            try:
                item = change(item) or item
                self._save_locked(path, item, session_before, read)
            except BaseException:
                self._kept.pop(path, None)  # the change may have reached the iterations the kept copy shares
                raise
        self._ensure_bindings(item)
        return item

    def _ensure_bindings(self, item: Model) -> None:
        """A home without binding files (new, or from 0.1.0) gets all of them from a fresh index,
        outside any goal's lock."""
        if isinstance(item, Goal) and not index.sessions_dir(self.root).is_dir():
            self.summaries()

    def _save_locked(self, path: Path, item: Model, session_before: str | None = None, read: dict | None = None) -> None:
        item.updated_at = now_iso()  # type: ignore[attr-defined]
        doc = self._validated_doc(item, read)
        written = evidence_files.externalize(path, doc) if isinstance(item, Goal) else doc
        self._write(path, written)
        if isinstance(item, Goal):
            self._index_put(item.goal_id, written, path)
            if index.sessions_dir(self.root).is_dir():  # else the next refresh of the index writes them all
                if session_before != item.session_id:
                    index.bind(self.root, session_before, item.goal_id, False)
                index.bind(self.root, item.session_id, item.goal_id, item.state == "active")
        self._keep(path, item, doc, written)

    def _read_all(self, kind: type[M]) -> list[tuple[M, list[int]]]:
        """Every valid document of a kind with the stamp of the file it came from, taken under its
        lock; broken ones are quarantined and listed in ``quarantined``."""
        folder, pattern = _KINDS[kind]
        found = []
        for path in sorted(self._dir(folder).glob("*.json")):
            if not pattern.fullmatch(path.stem):
                continue
            try:
                with self.lock(path):
                    found.append((self._read(kind, path), index.file_stamp(path)))
            except CorruptFile as exc:
                self.quarantined.append((exc.moved_to, exc.reason))
            except (GoalNotFound, FileNotFoundError):
                continue  # removed since the folder was listed
        return found

    def iter_all(self, kind: type[M]) -> list[M]:
        found = self._read_all(kind)
        if kind is Goal:
            self._index_rebuild(found)  # type: ignore[arg-type]
        return [item for item, _ in found]

    # ---- goal index (see index.py) ------------------------------------------------------

    def _index_put(self, goal_id: str, doc: dict, path: Path) -> None:
        ipath = index.index_path(self.root)
        with self.lock(ipath):
            entries = index.cached(self.root)
            entries[goal_id] = index.summary(doc, index.file_stamp(path))
            self._write(ipath, {"goals": entries})

    def _index_rebuild(self, found: list[tuple[Goal, list[int]]]) -> list[dict]:
        # Each summary keeps the stamp of the file as it was read: a goal written since then no
        # longer matches its stamp, so readers see the index as stale instead of trusting old news.
        entries = {g.goal_id: index.summary(g.dump(), stamp) for g, stamp in found}
        self._index_write(entries)
        return list(entries.values())

    def _index_write(self, entries: dict[str, dict]) -> None:
        ipath = index.index_path(self.root)
        with self.lock(ipath):
            self._write(ipath, {"goals": entries})
        index.sync_bindings(self.root, entries)

    def summaries(self, refresh: bool = False) -> list[dict]:
        """Goal summaries from the index, brought up to date by re-reading only the goal files
        whose stamp changed (which also quarantines the broken ones among them); ``refresh`` asks
        for a full read that validates every goal file with the models."""
        if refresh:
            return self._index_rebuild(self._read_all(Goal))
        self._dir("goals")
        on_disk, temps = index.scan(self.root)
        entries = index.cached(self.root)
        stale = index.changed(entries, on_disk)
        if not stale and entries.keys() == on_disk.keys():
            if not index.sessions_dir(self.root).is_dir():
                index.sync_bindings(self.root, entries)
            return list(entries.values())
        self._remove_temps(temps)
        entries = {gid: e for gid, e in entries.items() if gid in on_disk}
        for gid in stale:
            entries.pop(gid, None)
            found = self._summarise(gid)
            if found is not None:
                entries[gid] = found
        self._index_write(entries)
        return list(entries.values())

    def _summarise(self, goal_id: str) -> dict | None:
        """The summary of one goal file from its JSON alone (no models: a stale index at 10,000
        goals must not cost 10,000 validations); a file that cannot give one is quarantined."""
        path = self.root / "goals" / f"{goal_id}.json"

        def parse(text: str) -> dict:
            doc = self._parse_json(path, text)
            try:
                index.check(doc, goal_id)
            except ValueError as exc:
                raise CorruptFile(f"{path} is not a valid Goal: {exc}") from None
            return doc  # type: ignore[return-value]

        try:
            with self.lock(path):
                return index.summary(self._read_as(path, parse, "goal"), index.file_stamp(path))
        except CorruptFile as exc:
            self.quarantined.append((exc.moved_to, exc.reason))
        except (GoalNotFound, FileNotFoundError):
            pass  # removed since the folder was listed
        return None

    def _remove_temps(self, temps: list[tuple[str, int]]) -> None:
        """Temp files of writes that were killed before their rename: nothing will ever read them."""
        cutoff = time.time_ns() - STALE_TEMP_SECONDS * 10**9
        for name, mtime in temps:
            if mtime < cutoff:
                (self.root / "goals" / name).unlink(missing_ok=True)
