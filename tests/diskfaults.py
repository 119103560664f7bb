"""Real disk faults for the tests of what a full or read-only home does: a small tmpfs mounted on a
folder, filled up, remounted read-only or given room again. Mounting needs root (the suite runs as
root in CI); where it cannot mount, the test is skipped and says why. No fault is faked: the kernel
answers ENOSPC and EROFS itself."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PAGE = 4096


def _mount(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mount", *args], capture_output=True, text=True)


class SmallDisk:
    """A tmpfs at ``path``; ``fill`` leaves only so many bytes free, ``room`` frees them again."""

    def __init__(self, path: Path, size: int) -> None:
        self.path, self.size = path, size
        self.filler = path / ".filler"

    def fill(self, leave: int = 0) -> None:
        """Take all the free space but ``leave`` bytes (rounded down to pages, as tmpfs counts them)."""
        self.room()
        st = os.statvfs(self.path)
        free = st.f_bavail * st.f_frsize
        with open(self.filler, "wb") as fh:
            try:
                fh.write(b"\0" * max(0, free - leave))
            except OSError:
                pass  # full: what was asked for

    def room(self) -> None:
        self.filler.unlink(missing_ok=True)

    def readonly(self, on: bool = True) -> None:
        done = _mount("-o", f"remount,{'ro' if on else 'rw'}", str(self.path))
        assert done.returncode == 0, done.stderr


@contextmanager
def small_disk(path: Path, size: int = 1 << 20) -> Iterator[SmallDisk]:
    """A tmpfs of ``size`` bytes mounted on ``path`` (made if missing), unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here to make a real full or read-only disk: {done.stderr.strip()}")
    try:
        yield SmallDisk(path, size)
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
