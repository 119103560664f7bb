"""The plumbing under every document in the home, without the models: strict JSON, atomic writes,
per-file locks and quarantine.

store.py reads and writes goals and triage items through it with the models on top; reindex.py
keeps the goal index with it alone, so that `goal list` and a hook after the index went stale
never import pydantic. Standard library only: the hooks' fast path brings a stale index up to date
with it.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from ..errors import CorruptFile, GoalConvergenceError, GoalNotFound

T = TypeVar("T")
LOCK_TIMEOUT = 30.0
LOCK_POLL = 0.01
# I-JSON (RFC 7493): numbers a double can hold exactly, no NaN or Infinity, no duplicate keys, no
# unpaired surrogates. Python's json accepts all of those, and a document that means different
# things to different readers is not one we want to validate, let alone act on.
_SAFE_INT = 2**53 - 1


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        dupes = sorted({k for k, _ in pairs if sum(k == other for other, _ in pairs) > 1})
        raise ValueError(f"duplicate keys {dupes}")
    return doc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


def _safe_int(text: str) -> int:
    value = int(text)
    if abs(value) > _SAFE_INT:
        raise ValueError(f"{text} is too large to be exact in JSON")
    return value


def parse_json(text: str) -> Any:
    """Parse a document the way every store read does; raises ValueError for anything not I-JSON."""
    doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant,
                     parse_float=_finite, parse_int=_safe_int)
    if "\\u" in text:  # only a \u escape can smuggle in a lone surrogate: UTF-8 text cannot hold one
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds an unpaired surrogate (\\ud800-\\udfff)") from None
    return doc


def parse_document(path: Path, text: str) -> Any:
    """``parse_json``, its failures a CorruptFile naming ``path``."""
    try:
        return parse_json(text)
    except RecursionError:  # `[` x 100,000: a file, not a bug of ours, so it is quarantined like any other
        raise CorruptFile(f"{path} is not valid JSON (nested too deeply to read)") from None
    except ValueError as exc:
        raise CorruptFile(f"{path} is not valid JSON ({exc})") from None


def folder(root: Path, name: str) -> Path:
    """``root/name``, made 0700 when missing (and the home too when we are the ones creating it:
    mkdir(parents=True) would give it the umask's mode; an existing ~/.claude is the user's to keep)."""
    path = root / name
    if not path.is_dir():
        if not root.is_dir():
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.mkdir(exist_ok=True, mode=0o700)
    return path


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


def write_many(items: list[tuple[Path, bytes]]) -> None:
    """``write_atomic`` of many files at once: every temp file written, then synced by several threads (the
    filesystem commits their syncs together, not one journal commit a file), then each renamed."""
    from concurrent.futures import ThreadPoolExecutor  # only goal new writes many

    temps: list[tuple[str, Path]] = []
    try:
        for path, data in items:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)

        def sync(tmp: str) -> None:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(sync, [tmp for tmp, _ in temps]))
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise


def write_json(path: Path, doc: object) -> None:
    # Not indented: Python's JSON encoder in C does not indent, and the one that does took half
    # of a Stop hook's time for a goal with 1,000 iterations. `goal status --json` prints it indented.
    write_atomic(path, (json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))


@contextmanager
def lock(root: Path, path: Path) -> Iterator[None]:
    """The lock of the document at ``path`` (every write of it is made under it): an flock on its file in
    ``locks/``, released by the kernel when its holder dies, however it dies."""
    fd = os.open(folder(root, "locks") / f"{path.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise GoalConvergenceError(
                        f"{path.name} stayed locked by another goal-convergence process for {LOCK_TIMEOUT:g}s; "
                        f"wait for it to finish (see `ps`) and try again") from None
                time.sleep(LOCK_POLL)
        yield
    finally:
        os.close(fd)  # releases the lock


def quarantine(root: Path, path: Path, reason: str) -> Path:
    """Move a file that cannot be read aside, byte for byte, beside a note of why (quarantine.py lists them)."""
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S%f")
    dest = folder(root, "quarantine") / f"{path.name}.{stamp}"
    os.replace(path, dest)
    note = os.open(dest.with_name(dest.name + ".reason.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(note, "w", encoding="utf-8") as fh:
        fh.write(f"{path}\n{reason}\n")
    return dest


def read_as(root: Path, path: Path, parse: Callable[[str], T], what: str) -> T:
    """Read one document with ``parse``; call it under the document's lock, since one that is not
    UTF-8 or that ``parse`` refuses (CorruptFile) is quarantined, and the CorruptFile says where it went."""
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
    dest = quarantine(root, path, reason)
    error = CorruptFile(f"{reason}. It was moved to {dest}; restore it by hand or start a new goal.")
    error.moved_to, error.reason = dest, reason
    raise error
