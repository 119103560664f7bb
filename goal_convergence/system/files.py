"""The plumbing under every document in the home, without the models: strict JSON, atomic writes,
per-file locks and quarantine.

store.py reads and writes goals and triage items through it with the models on top; reindex.py
keeps the goal index with it alone, so that `goal list` and a hook after the index went stale
never import pydantic. Standard library only: the hooks' fast path brings a stale index up to date
with it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from ..errors import FILESYSTEM_ERRNOS, CorruptFile, GoalConvergenceError, GoalNotFound, UntrustedPath, disk_error

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
    """``root/name``, a folder of ours (``private_folder``), and the home too when we are the ones creating
    it (an existing ~/.claude is the user's to keep as it is)."""
    if not root.is_dir():
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise disk_error(exc, root) from None
    return private_folder(root / name)


def private_folder(path: Path) -> Path:
    """``path``, made 0700 when missing, whatever the umask (mkdir(parents=True) gives the parents the
    umask's mode, so each missing level is made here). A folder that is a symlink or another user's is
    refused, and one of ours that others may write is made 0700 again: whatever we write in it must not
    land elsewhere or be swapped under us."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if path.parent != path and not path.parent.is_dir():
            private_folder(path.parent)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass  # made meanwhile by another process: checked below like any other
        except OSError as exc:
            raise disk_error(exc, path) from None
        st = os.lstat(path)
    problem = untrusted(st, folder=True)
    if problem:
        raise UntrustedPath(f"{path} {problem}; goal-convergence writes only in folders of its own. Move it "
                            f"aside (`mv {path} {path}.suspect`) and run the command again")
    if st.st_mode & 0o077:
        with suppress(OSError):  # a read-only disk: nobody can write in it either
            os.chmod(path, 0o700, follow_symlinks=False)
    return path


def untrusted(st: os.stat_result, folder: bool = False) -> str | None:
    """Why a file (or folder) of the home, as ``lstat`` saw it, is not one we wrote: a symlink, not a regular
    file, another user's, or one others may write. None when it is ours. A file others may only read (0644,
    copied in by hand) was still written by this user alone, so it is trusted; ours are written 0600."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)):
        return "is not a folder" if folder else "is not a regular file"
    if st.st_uid != os.geteuid():
        return f"is owned by another user (uid {st.st_uid})"
    if not folder and st.st_mode & 0o022:
        return f"has mode {stat.S_IMODE(st.st_mode):04o} (others may change it; ours are 0600)"
    return None


def write_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write a file whole or not at all: a temp file (0600) in the same folder, fsync, rename. A full or
    read-only disk is a DiskError naming ``path``: the write and fsync of a temp file name no file.
    ``durable=False``: no fsync (some 10 ms each), for a file that means nothing once the machine restarted
    (the processes it names are gone) or costs only work to lose; the rename still makes it whole."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise disk_error(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise disk_error(exc, path) from None
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


def _lock_fd(root: Path, path: Path, write: bool) -> int | None:
    """The open lock file of ``path``. To read, a home we may not write (a read-only disk, another
    user's) needs no lock: the lock file is opened read-only when it is there (flock works on it), and
    without one there is nothing to wait for, since no writer can get in either."""
    try:
        return os.open(folder(root, "locks") / f"{path.name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            where = root / "locks" / f"{path.name}.lock"
            raise UntrustedPath(f"{where} is a symbolic link, not a lock file of ours; nothing is written through "
                                f"it. Remove it (`rm {where}`) and run the command again") from None
        if write or exc.errno not in FILESYSTEM_ERRNOS:
            raise disk_error(exc, root / "locks" / f"{path.name}.lock") from None
    try:
        return os.open(root / "locks" / f"{path.name}.lock", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None


@contextmanager
def lock(root: Path, path: Path, write: bool = True) -> Iterator[None]:
    """The lock of the document at ``path`` (every write of it is made under it): an flock on its file in
    ``locks/``, released by the kernel when its holder dies, however it dies. ``write=False`` is for a
    read, which works in a home it may not write."""
    fd = _lock_fd(root, path, write)
    if fd is None:
        yield
        return
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
    note = os.open(dest.with_name(dest.name + ".reason.txt"),
                   os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(note, "w", encoding="utf-8") as fh:
        fh.write(f"{path}\n{reason}\n")
    return dest


class Refused(Exception):
    """A file of the home we did not write (``untrusted``): never read, let alone acted on."""


def read_trusted(path: Path) -> bytes:
    """The bytes of a file of the home, once it proved to be ours: opened without following a symlink (or
    blocking on a fifo), and refused (Refused) unless ``untrusted`` finds nothing. FileNotFoundError when
    it is not there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{path} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        problem = untrusted(os.fstat(fd))
        if problem:
            raise Refused(f"{path} {problem}")
        return fh.read()


def read_as(root: Path, path: Path, parse: Callable[[str], T], what: str) -> T:
    """Read one document with ``parse``; call it under the document's lock, since one that is not ours
    (``read_trusted``), not UTF-8, or that ``parse`` refuses (CorruptFile) is quarantined, and the
    CorruptFile says where it went."""
    text = None
    try:
        text = read_trusted(path).decode("utf-8", errors="strict")
    except FileNotFoundError:
        raise GoalNotFound(f"no {what} {path.stem}; run `goal list --all` or `goal triage list` to see them") from None
    except Refused as exc:
        reason = f"{exc}: goal-convergence did not write it, so it is never read or run"
    except UnicodeDecodeError as exc:
        reason = f"{path} is not UTF-8 ({exc.reason})"
    if text is not None:
        try:
            return parse(text)
        except CorruptFile as exc:
            reason = str(exc)
    try:
        dest: Path | None = quarantine(root, path, reason)
    except OSError as exc:  # a home we may not write: the file stays, refused all the same
        dest, where = None, f"It could not be moved aside ({exc.strerror}); move or delete it by hand."
    else:
        where = f"It was moved to {dest}; restore it by hand or start a new goal."
    error = CorruptFile(f"{reason}. {where}")
    error.moved_to, error.reason = dest, reason
    raise error
