"""The tripwire in conftest.py that fails a test touching the real home. Each test here points a Tripwire of
its own at a temp folder standing in for the real home, so that nothing can reach the real one even if the
tripwire were broken."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from goal_convergence.storage.store import Store
from tests.conftest import _ARMED, REAL_HOME, TRIPWIRE, RealHomeTouched, Tripwire


@pytest.fixture
def fake_real_home(tmp_path) -> Path:
    home = tmp_path / "real-home"
    (home / ".claude" / "goals").mkdir(parents=True)
    (home / ".claude" / "goals" / "kept.json").write_text("{}")
    (home / ".gitconfig").write_text("[user]\n")
    return home


WRITES = {
    "write a file": lambda h: (h / ".claude" / "goals" / "new.json").write_text("{}"),
    "append elsewhere in the home": lambda h: (h / ".bashrc").open("a"),
    "os.open with O_CREAT": lambda h: os.open(h / "x.lock", os.O_CREAT | os.O_WRONLY),
    "mkdir": lambda h: (h / ".claude" / "logs").mkdir(),
    "replace into the home": lambda h: os.replace(h.parent / "outside.json", h / ".claude" / "goals" / "x.json"),
    "remove": lambda h: os.remove(h / ".gitconfig"),
    "rmtree": lambda h: shutil.rmtree(h / ".claude"),
    "read our home": lambda h: (h / ".claude" / "goals" / "kept.json").read_text(),
    "list our home": lambda h: os.listdir(h / ".claude" / "goals"),
}


@pytest.mark.parametrize("how", WRITES)
def test_it_refuses_and_records_a_touch_of_the_home(fake_real_home, how):
    (fake_real_home.parent / "outside.json").write_text("{}")
    before = sorted(str(p) for p in fake_real_home.rglob("*"))
    with Tripwire(fake_real_home).armed() as wire, pytest.raises(RealHomeTouched, match="touched the real home"):
        WRITES[how](fake_real_home)
    assert len(wire.hits) == 1 and str(fake_real_home) in wire.hits[0]
    assert sorted(str(p) for p in fake_real_home.rglob("*")) == before


def test_a_swallowed_refusal_is_still_recorded_for_the_test(fake_real_home, make_goal):
    with Tripwire(fake_real_home).armed() as wire, contextlib.suppress(OSError):
        Store(fake_real_home / ".claude").create(make_goal())
    assert wire.hits and not list((fake_real_home / ".claude" / "goals").glob("goal-*"))


def test_reading_the_rest_of_the_home_and_writing_elsewhere_are_fine(fake_real_home, tmp_path, make_goal):
    with Tripwire(fake_real_home).armed() as wire:
        assert (fake_real_home / ".gitconfig").read_text() == "[user]\n"  # git and rustup read the home
        Store(tmp_path / "gc").create(make_goal())
    assert wire.hits == [] and list((tmp_path / "gc" / "goals").glob("goal-*.json"))


def test_a_disarmed_tripwire_lets_everything_through(fake_real_home):
    wire = Tripwire(fake_real_home)
    (fake_real_home / ".claude" / "goals" / "free.json").write_text("{}")
    assert wire.hits == [] and wire not in _ARMED


def test_the_snapshot_sees_what_a_subprocess_wrote_in_our_files_only(fake_real_home):
    wire = Tripwire(fake_real_home)
    before = wire.snapshot()
    assert sorted(before) == [str(fake_real_home / ".claude" / "goals"), str(fake_real_home / ".claude" / "goals" / "kept.json")]
    claude_codes = fake_real_home / ".claude" / "projects" / "t.jsonl"
    write = "import pathlib, sys; p = pathlib.Path(sys.argv[1]); p.parent.mkdir(exist_ok=True); p.write_text('x')"
    subprocess.run([sys.executable, "-c", write, str(claude_codes)], check=True)
    assert wire.snapshot() == before  # Claude Code's own folders are not ours to watch
    subprocess.run([sys.executable, "-c", write, str(fake_real_home / ".claude" / "baselines" / "b.json")], check=True)
    assert set(wire.snapshot()) - set(before) == {str(fake_real_home / ".claude" / "baselines"),
                                                   str(fake_real_home / ".claude" / "baselines" / "b.json")}


def test_the_session_tripwire_is_armed_on_the_real_home_and_home_points_elsewhere():
    assert TRIPWIRE in _ARMED and TRIPWIRE.home == str(REAL_HOME)
    assert not Path(os.environ["HOME"]).is_relative_to(REAL_HOME)
