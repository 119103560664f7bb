"""The installed module names (guard/installed.py): packages_distributions' names, kept by stat data, and read
again whenever anything they come from moved, a package installed or a dist-info edited between two calls."""

from __future__ import annotations

import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goal_convergence.guard import installed, syspath
from goal_convergence.system import index, seal


def stdlib() -> frozenset[str]:
    return frozenset(packages_distributions())


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site folder of its own as the only sys.path entry, and any answer kept however new its files are
    (they were all written a moment ago; the racy rule has a test of its own)."""
    stdlib()  # the modules its metadata parsing imports on first use, loaded while sys.path is whole
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.setattr(sys, "path", [str(folder)])
    monkeypatch.setattr(installed, "RACY_SECONDS", -10**6)
    monkeypatch.setattr(installed, "_known", None)
    monkeypatch.setattr(installed, "_last", None)
    return folder


def dist(site: Path, name: str, *, top_level: str | None = None, record: str | None = None,
         sources: str | None = None, kind: str = "dist-info") -> Path:
    folder = site / f"{name}-1.0.{kind}"
    folder.mkdir()
    (folder / ("METADATA" if kind == "dist-info" else "PKG-INFO")).write_text(f"Name: {name}\nVersion: 1.0\n")
    for file, text in (("top_level.txt", top_level), ("RECORD", record), ("SOURCES.txt", sources)):
        if text is not None:
            (folder / file).write_text(text)
    return folder


def test_the_real_environment_gives_packages_distributions_names(monkeypatch):
    monkeypatch.setattr(installed, "_known", None)
    first, again = installed.names(), installed.names()
    assert first == again == stdlib()
    assert {"pydantic", "click", "pytest"} <= first


def test_hand_made_distributions_of_every_kind(site):
    dist(site, "declared", top_level="alpha\nbeta\n", record="gamma/__init__.py,,\n")
    dist(site, "recorded", record="delta/__init__.py,sha256=x,1\ndelta/sub/m.py,,\nsolo.py,,\nfoo.pth,,\n"
                                  "data/file.txt,,\n../../bin/tool,,\nns/inner/mod.py,,\n")
    dist(site, "blank", top_level="\n", record="eps.py,,\n")  # an empty top_level.txt: the RECORD decides
    dist(site, "legacy", sources="setup.py\nlegacy_pkg/__init__.py\nlegacy_pkg/a.py\n", kind="egg-info")
    dist(site, "bare")  # metadata only: no names
    (site / "extra.pth").write_text("/nowhere\n")
    found = installed.names()
    assert found == stdlib()
    assert {"alpha", "beta", "delta", "solo", "eps", "ns", "legacy_pkg"} <= found and "gamma" not in found


def test_a_package_installed_between_two_calls_is_named(site):
    dist(site, "first", record="one/__init__.py,,\n")
    assert installed.names() == stdlib() == {"one"}
    dist(site, "second", top_level="two\n")
    assert installed.names() == stdlib() == {"one", "two"}


def test_an_edited_top_level_or_record_is_read_again(site):
    folder = dist(site, "pkg", top_level="old\n", record="rec/__init__.py,,\n")
    assert installed.names() == {"old"}
    (folder / "top_level.txt").write_text("newer\n")  # in place: the folder's own stat data does not move
    assert installed.names() == stdlib() == {"newer"}
    (folder / "top_level.txt").unlink()
    assert installed.names() == stdlib() == {"rec"}
    (folder / "RECORD").write_text("rec2/__init__.py,,\n")
    assert installed.names() == stdlib() == {"rec2"}


def test_a_new_path_entry_is_looked_at(site, tmp_path):
    assert installed.names() == frozenset()
    other = tmp_path / "other"
    other.mkdir()
    dist(other, "later", top_level="later\n")
    sys.path.append(str(other))
    assert installed.names() == stdlib() == {"later"}


_PART = st.sampled_from(["a", "b", "pkg", "x.py", "m.py", "__init__.py", "y.pth", "..", ".", "d.data", "z.pyc"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.lists(st.lists(_PART, min_size=1, max_size=3).map("/".join), max_size=5),
                        min_size=1, max_size=3),
       declared=st.lists(st.none() | st.sampled_from(["", "t1", "t1 t2\n", "\n\n"]), min_size=3, max_size=3))
def test_any_records_give_the_standard_names_after_every_change(site, records, declared):
    for i, paths in enumerate(records):
        folder = site / f"d{i}-1.0.dist-info"
        folder.mkdir(exist_ok=True)
        (folder / "METADATA").write_text(f"Name: d{i}\n")
        (folder / "RECORD").write_text("".join(f"{p},,\n" for p in paths))
        if declared[i] is not None:
            (folder / "top_level.txt").write_text(declared[i])
        assert installed.names() == stdlib()


class _OtherFinder:
    """A finder that answers for distributions too (what the key cannot see)."""

    @staticmethod
    def find_distributions(context=None):
        return iter(())


def test_with_another_finder_answering_the_names_are_read_once_a_process(site, monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, _OtherFinder])
    seal.key(index.home())
    dist(site, "first", top_level="first\n")
    assert installed._key() == (None, False)
    assert installed.names() == {"first"} == stdlib()
    dist(site, "second", top_level="second\n")
    assert installed.names() == {"first"}  # as shadowed_names always was: one look a process
    assert not (index.home() / installed.NAME).exists()


def test_names_with_a_recent_write_are_not_kept(site, monkeypatch):
    monkeypatch.setattr(installed, "RACY_SECONDS", 3600)
    seal.key(index.home())
    dist(site, "fresh", top_level="fresh\n")
    assert installed.names() == {"fresh"}
    assert installed._known is None and not (index.home() / installed.NAME).exists()


def test_a_folder_written_a_moment_ago_does_not_stop_the_names_being_kept(site, monkeypatch):
    """A folder's listing is in the key, read again at every call: only a file's stat data must be old to
    vouch for it (the project's own folder is on sys.path under `python -m`, and changes all the time)."""
    monkeypatch.setattr(installed, "RACY_SECONDS", 3600)
    (site / "plain.py").write_text("")
    assert installed.names() == frozenset() and installed._known is not None
    dist(site, "later", top_level="later\n")
    assert installed.names() == {"later"} == stdlib()


def test_the_home_keeps_the_names_for_the_next_process_under_its_seal(site, monkeypatch):
    seal.key(index.home())
    dist(site, "kept", top_level="kept\n")
    assert installed.names() == {"kept"}
    path = index.home() / installed.NAME
    assert path.is_file()
    monkeypatch.setattr(installed, "_known", None)  # a new process
    key = installed._key()[0]
    assert installed._read_kept(key) == {"kept"}
    installed._write_kept("another-python", frozenset({"other"}))  # another environment's, kept beside it
    assert installed._read_kept(key) == {"kept"} and installed._read_kept("another-python") == {"other"}
    mac, _, data = path.read_bytes().partition(b"\n")
    path.write_bytes(mac + b"\n" + data.replace(b'"kept"', b'"kepx"'))  # a maker's edit: the seal fails
    assert installed._read_kept(key) is None
    assert installed.names() == {"kept"}


def test_a_view_takes_the_names_once_and_shadowed_names_follows_installs(site):
    dist(site, "numpyish", top_level="numpyish\n")
    where = syspath.view(None, ["numpyish.py"], own=[])
    assert where.shadows("numpyish.py") and not where.shadows("laterpkg.py")
    dist(site, "laterpkg", top_level="laterpkg\n")
    # a view made without them, once a file, asks for the names as last read: not a look at every file
    assert not syspath.View().shadows("laterpkg.py")
    assert "laterpkg" in syspath.shadowed_names() and syspath.view(None, [], own=[]).shadows("laterpkg.py")
    assert syspath.View().shadows("laterpkg.py")
