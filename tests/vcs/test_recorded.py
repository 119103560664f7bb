"""The files a user's index recorded in its last second, read from `git ls-files -z --debug` by one search for
their ctimes (vcs/keptindex.py, ``recorded_since``), as reading every entry's ctime would find them."""

from __future__ import annotations

import os
import subprocess
import time

from hypothesis import given, settings, strategies as st

from goal_convergence.vcs import keptindex
from tests.conftest import git


def _entry(path: str, ctime: int) -> bytes:
    """One entry as git prints it (read-cache.c, print_debug)."""
    return path.encode("utf-8", "surrogateescape") + (
        b"\0  ctime: %d:123\n  mtime: %d:456\n  dev: 2049\tino: 77\n  uid: 0\tgid: 0\n  size: 12\tflags: 0\n"
        % (ctime, ctime))


_PATHS = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(since=st.integers(0, 10**11), entries=st.lists(st.tuples(_PATHS, st.integers(0, 10**11)), max_size=30,
                                                        unique_by=lambda entry: entry[0]),
       near=st.lists(st.integers(-11, 11), max_size=8))
def test_the_paths_recorded_since_are_those_whose_ctime_is_that_or_later(since, entries, near):
    """Every ctime against every ``since``, and ctimes a few seconds either side of it (digits carried over, a
    number a digit longer), paths holding newlines, tabs and what a stat line looks like."""
    entries += [(f"near\n  ctime: {since}:\t{n}", max(0, since + n)) for n in near]
    listing = b"".join(_entry(path, ctime) for path, ctime in entries)
    assert keptindex.recorded_since(listing, since) == {path for path, ctime in entries if ctime >= since}


def test_a_real_index_names_the_files_it_recorded_in_the_last_second(git_repo):
    """git's own listing: a file written a second after another is named from its second on, the other not."""
    (git_repo / "old.py").write_text("old = 1\n")
    git(git_repo, "add", "old.py")
    time.sleep(1.1)
    (git_repo / "new\nline.py").write_text("new = 1\n")
    git(git_repo, "add", "new\nline.py")
    listing = subprocess.run(["git", "ls-files", "-z", "--debug"], cwd=git_repo, capture_output=True,
                             check=True).stdout
    since = int(os.stat(git_repo / "new\nline.py").st_ctime)  # the second its ctime was recorded in
    assert keptindex.recorded_since(listing, since) == {"new\nline.py"}
    earlier = int(os.stat(git_repo / "old.py").st_ctime)
    assert earlier < since and {"old.py", "new\nline.py"} <= (keptindex.recorded_since(listing, earlier) or set())


def test_a_listing_this_version_cannot_read_is_said_so():
    """Stat data not as git prints it before a recent entry: the entry's path cannot be told, and None says so."""
    assert keptindex.recorded_since(b"a\0  ctime: 5:0\n  something else\n" + _entry("b", 9), 1) is None
    assert keptindex.recorded_since(_entry("a", 5) + _entry("b", 9), 1) == {"a", "b"}
