"""The store: validated, atomic, locked, private files; broken ones quarantined, never lost."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import stat
import time
from pathlib import Path

import pytest

from goal_convergence.errors import CorruptFile, GoalConvergenceError, GoalNotFound, InvalidInput
from goal_convergence.models import Goal, TriageItem, now_iso
from goal_convergence.storage.store import Store
from goal_convergence.system import files
from tests.conftest import fresh_index


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_goal_reads_back_as_written(store, make_goal):
    goal = store.create(make_goal(objective="don't break the API; $(rm -rf /) `x`\nsecond line"))
    assert store.load(Goal, goal.goal_id) == goal
    doc = json.loads(store.path_for(Goal, goal.goal_id).read_text(encoding="utf-8"))
    assert doc["goalId"] == goal.goal_id and doc["objective"] == goal.objective


def test_files_are_0600_and_folders_0700(store, make_goal, gc_home):
    goal = store.create(make_goal())
    store.update(Goal, goal.goal_id, lambda g: None)
    assert mode(gc_home) == 0o700
    for folder in ("goals", "locks"):
        assert mode(gc_home / folder) == 0o700
    for path in (gc_home / "goals").iterdir():
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path
    for path in (gc_home / "goals" / "sessions").iterdir():
        assert mode(path) == 0o600, path
    assert not list((gc_home / "goals").glob(".*.tmp")), "a temp file was left behind"


def test_an_existing_home_keeps_its_mode(tmp_path, make_goal):
    home = tmp_path / "existing"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    Store(home).create(make_goal())
    assert mode(home) == 0o755 and mode(home / "goals") == 0o700


def test_create_refuses_an_existing_id(store, make_goal):
    goal = store.create(make_goal())
    with pytest.raises(InvalidInput, match="already exists"):
        store.create(make_goal(goal_id=goal.goal_id))


def test_a_failed_change_saves_nothing(store, make_goal):
    goal = store.create(make_goal())
    before = store.path_for(Goal, goal.goal_id).read_bytes()

    def change(g: Goal) -> Goal:
        g.spent.iterations = 99
        raise InvalidInput("no")

    with pytest.raises(InvalidInput):
        store.update(Goal, goal.goal_id, change)
    assert store.path_for(Goal, goal.goal_id).read_bytes() == before


def test_a_missing_goal_is_not_found(store):
    with pytest.raises(GoalNotFound, match="goal-abcd1234.*goal list --all"):
        store.load(Goal, "goal-abcd1234")


@pytest.mark.parametrize("bad", ["../x", "goal-../../etc", "goal-abcd1234/../../x", "/etc/passwd",
                                 "GOAL-ABCD1234", "goal-ABCD1234", "goal-abcd1234\n", "goal-abcd123", "",
                                 "goal-abcd1234.json", "tri-abcd1234"])
def test_path_like_ids_are_refused_before_they_become_paths(store, gc_home, bad):
    with pytest.raises(InvalidInput, match="not a valid goal id"):
        store.path_for(Goal, bad)
    with pytest.raises(InvalidInput):
        store.load(Goal, bad)
    with pytest.raises(InvalidInput):
        store.update(Goal, bad, lambda g: None)
    outside = [p for p in gc_home.parent.rglob("*") if gc_home not in p.parents and p != gc_home]
    assert outside == [], "something was created outside the home"


@pytest.mark.parametrize("bad", ["../x", "tri-../../etc", "/etc/passwd", "tri-ABCD1234", "tri-abcd1234\n",
                                 "goal-abcd1234"])
def test_path_like_triage_ids_are_refused(store, bad):
    with pytest.raises(InvalidInput, match="not a valid triage id"):
        store.load(TriageItem, bad)


SAMPLES = Path(__file__).parents[1] / "samples"


@pytest.mark.parametrize(("kind", "sample"), [(Goal, "goal-0.1.0.json"), (TriageItem, "triage-item-0.1.0.json")])
def test_files_written_by_0_1_0_load_and_save_unchanged(store, kind, sample):
    # Every field filled, as 0.1.0 wrote it: the models that now define the schemas still read it whole.
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    doc = json.loads(text)
    item_id = doc["goalId"] if kind is Goal else doc["triageId"]
    path = store.path_for(kind, item_id)
    path.write_text(text, encoding="utf-8")
    assert store.load(kind, item_id).dump() == doc
    store.update(kind, item_id, lambda item: None)
    saved = json.loads(path.read_text(encoding="utf-8"))
    if kind is Goal:
        assert saved.pop("seal")["mac"], "a goal from before the seal is sealed at its next write"
    assert saved.pop("updatedAt") != doc.pop("updatedAt") and saved == doc


def test_the_store_refuses_to_write_a_document_it_could_not_read_back(store, make_goal):
    goal = store.create(make_goal())
    before = store.path_for(Goal, goal.goal_id).read_bytes()
    with pytest.raises(CorruptFile, match="refusing to write an invalid Goal: stoppingConditions: List should have"):
        store.update(Goal, goal.goal_id, lambda g: g.stopping_conditions.clear())  # in place: no assignment check
    assert store.path_for(Goal, goal.goal_id).read_bytes() == before


# ---- concurrent writers ----------------------------------------------------------------------

WRITERS, ROUNDS = 4, 25


def _writer(root: str, goal_id: str, name: str) -> None:
    store = Store(Path(root))

    def bump(goal: Goal) -> None:
        goal.spent.iterations += 1
        goal.transcript_offsets = {**goal.transcript_offsets, name: goal.transcript_offsets.get(name, 0) + 1}

    for _ in range(ROUNDS):
        store.update(Goal, goal_id, bump)


def test_concurrent_writers_lose_no_update_and_readers_never_see_half_a_file(store, make_goal, gc_home):
    goal = store.create(make_goal())
    path = store.path_for(Goal, goal.goal_id)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(gc_home), goal.goal_id, f"w{i}")) for i in range(WRITERS)]
    for p in procs:
        p.start()
    reads = 0
    while any(p.is_alive() for p in procs):  # read without the lock: atomic renames alone must suffice
        doc = files.parse_json(path.read_text(encoding="utf-8"))
        assert doc.pop("seal")["mac"]
        Goal.from_doc(doc)
        reads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    final = store.load(Goal, goal.goal_id)
    assert final.spent.iterations == WRITERS * ROUNDS
    assert final.transcript_offsets == {f"w{i}": ROUNDS for i in range(WRITERS)}
    assert reads > 0
    summary = next(s for s in store.summaries() if s["goalId"] == goal.goal_id)
    assert summary["iterations"] == WRITERS * ROUNDS  # the index kept up too


def test_a_lock_held_too_long_is_a_clear_error(store, make_goal, monkeypatch):
    goal = store.create(make_goal())
    monkeypatch.setattr(files, "LOCK_TIMEOUT", 0.2)
    with open(store.root / "locks" / f"{goal.goal_id}.json.lock", "rb") as held:  # as another process holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(GoalConvergenceError, match="locked by another goal-convergence process"):
            store.update(Goal, goal.goal_id, lambda g: None)


# ---- quarantine ------------------------------------------------------------------------------

def _break(path: Path, how: str) -> bytes:
    text = path.read_bytes()
    broken = {
        "truncated": text[: len(text) // 2],
        "schema-invalid": json.dumps({**json.loads(text), "state": "running"}).encode(),
        "not utf-8": text.replace(b"make all", b"make \xff\xfe all"),
        "NaN": json.dumps({**json.loads(text), "spent": {"activeSeconds": float("nan")}}).encode(),
        "empty": b"",
    }[how]
    path.write_bytes(broken)
    return broken


@pytest.mark.parametrize(("how", "reason"), [("truncated", "not valid JSON"), ("schema-invalid", "state"),
                                             ("not utf-8", "not UTF-8"), ("NaN", "not valid JSON"),
                                             ("empty", "not valid JSON")])
def test_a_broken_file_is_quarantined_with_its_reason_and_nothing_is_lost(store, make_goal, gc_home, how, reason):
    broken_goal, good_goal = store.create(make_goal()), store.create(make_goal())
    path = store.path_for(Goal, broken_goal.goal_id)
    content = _break(path, how)
    with pytest.raises(CorruptFile, match=reason) as raised:
        store.load(Goal, broken_goal.goal_id)
    moved = raised.value.moved_to
    assert str(path) in str(raised.value) and str(moved) in str(raised.value)
    assert not path.exists() and moved.parent == gc_home / "quarantine"
    assert moved.read_bytes() == content, "the broken file must be kept byte for byte"
    note = moved.with_name(moved.name + ".reason.txt")
    assert note.read_text() == f"{path}\n{raised.value.reason}\n" and reason in raised.value.reason
    assert (mode(moved.parent), mode(moved), mode(note)) == (0o700, 0o600, 0o600)
    assert store.load(Goal, good_goal.goal_id) == good_goal
    with pytest.raises(GoalNotFound):  # moved aside once, not reported again
        store.load(Goal, broken_goal.goal_id)


def test_a_full_read_skips_quarantines_and_reports_broken_files_once(store, make_goal):
    goals = [store.create(make_goal()) for _ in range(3)]
    _break(store.path_for(Goal, goals[1].goal_id), "truncated")
    _break(store.path_for(Goal, goals[2].goal_id), "schema-invalid")
    listed = {s["goalId"] for s in store.summaries(refresh=True)}
    assert listed == {goals[0].goal_id}
    assert sorted(reason.split()[0] for _, reason in store.quarantined) == sorted(
        str(store.root / "goals" / f"{g.goal_id}.json") for g in goals[1:])
    store.quarantined.clear()
    assert {s["goalId"] for s in store.summaries(refresh=True)} == {goals[0].goal_id}
    assert store.quarantined == []


# ---- the index -------------------------------------------------------------------------------

def test_the_index_follows_writes_by_other_processes(store, make_goal, gc_home):
    goal = store.create(make_goal())
    assert [s["state"] for s in store.summaries()] == ["active"]
    other = Store(gc_home)
    other.update(Goal, goal.goal_id, lambda g: setattr(g, "state", "paused"))
    assert [s["state"] for s in store.summaries()] == ["paused"]
    # an edit behind the store's back (same size, new content) makes the index stale, not wrong
    path = store.path_for(Goal, goal.goal_id)
    path.write_text(path.read_text().replace('"paused"', '"active"'))
    assert fresh_index(gc_home) is None
    assert [s["state"] for s in store.summaries()] == ["active"]


def test_a_rebuild_from_an_old_read_is_not_trusted(store, make_goal, gc_home):
    goal = store.create(make_goal())
    snapshot = store._read_all(Goal)  # what a slow `goal list` read before ...
    Store(gc_home).update(Goal, goal.goal_id, lambda g: setattr(g, "state", "paused"))  # ... a write landed
    store._index_rebuild(snapshot)
    assert fresh_index(gc_home) is None
    assert [s["state"] for s in store.summaries()] == ["paused"]


def test_a_file_with_a_wrong_name_does_not_keep_the_index_stale(store, make_goal, gc_home):
    store.create(make_goal())
    (gc_home / "goals" / "notes.json").write_text("{}")
    (gc_home / "goals" / "goal-UPPERCAS.json").write_text("{}")
    store.summaries()
    assert fresh_index(gc_home) is not None


def test_updated_at_moves_on_every_write(store, make_goal):
    goal = store.create(make_goal())
    time.sleep(0.002)
    later = store.update(Goal, goal.goal_id, lambda g: None)
    assert later.updated_at > goal.updated_at and later.updated_at <= now_iso()


# ---- any unreadable file, quarantined without harm (issue 12 items 7 and 14) ---------------------

UNREADABLE = {"nested": b"[" * 100_000, "not utf-8": b"\xff\xfe{}", "invalid": b"{\"goalId\": 5}"}


@pytest.mark.parametrize("how", sorted(UNREADABLE))
def test_an_unreadable_goal_file_is_quarantined_by_the_next_refresh_and_nothing_else_is_affected(
        store, make_goal, gc_home, how):
    good = store.create(make_goal(session_id="s-1"))
    bad = gc_home / "goals" / "goal-zzzzzzzz.json"
    bad.write_bytes(UNREADABLE[how])
    assert [s["goalId"] for s in store.summaries()] == [good.goal_id]
    [(moved, reason)] = store.quarantined
    assert not bad.exists() and moved.read_bytes() == UNREADABLE[how] and "goal-zzzzzzzz.json" in reason
    assert fresh_index(gc_home) is not None and store.load(Goal, good.goal_id) == good
    with pytest.raises(GoalNotFound):
        store.load(Goal, "goal-zzzzzzzz")


@pytest.mark.parametrize("how", sorted(UNREADABLE))
def test_an_unreadable_triage_file_is_quarantined_by_a_full_read(store, gc_home, how):
    store._dir("triage")
    (gc_home / "triage" / "tri-zzzzzzzz.json").write_bytes(UNREADABLE[how])
    assert store.iter_all(TriageItem) == []
    [(moved, _)] = store.quarantined
    assert moved.read_bytes() == UNREADABLE[how]


def test_a_goal_file_whose_id_is_not_its_name_is_quarantined_and_the_index_stays_fresh(store, make_goal, gc_home):
    goal = store.create(make_goal())
    path = store.path_for(Goal, goal.goal_id)
    path.rename(path.with_name("goal-zzzzzzzz.json"))  # a copy by hand, renamed
    store.summaries()
    [(moved, reason)] = store.quarantined
    assert "does not match the file name goal-zzzzzzzz" in reason and moved.name.startswith("goal-zzzzzzzz.json")
    assert fresh_index(gc_home) == []


def test_temp_files_of_killed_writes_are_removed_on_refresh(store, make_goal, gc_home):
    goal = store.create(make_goal())
    old, fresh = gc_home / "goals" / f".{goal.goal_id}.json.abc.tmp", gc_home / "goals" / f".{goal.goal_id}.json.def.tmp"
    old.write_text("{half")
    fresh.write_text("{in flight")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    store.update(Goal, goal.goal_id, lambda g: None)
    path = store.path_for(Goal, goal.goal_id)
    path.write_text(path.read_text() + " ")  # changed behind the store's back: the next reader refreshes
    store.summaries()
    assert not old.exists() and fresh.exists()


def test_an_old_iteration_changed_in_place_is_still_validated_before_a_write(store, make_goal):
    from goal_convergence.models import Decision, Iteration

    def record(n: int) -> Iteration:
        return Iteration(number=n, started_at=now_iso(), ended_at=now_iso(), decision=Decision(action="continue"))

    goal = store.create(make_goal(history=[record(1), record(2)]))
    before = store.path_for(Goal, goal.goal_id).read_bytes()
    with pytest.raises(CorruptFile, match="refusing to write an invalid Goal: history.0.number"):
        store.update(Goal, goal.goal_id, lambda g: g.history[0].__dict__.update(number=0))  # past assignment checks
    assert store.path_for(Goal, goal.goal_id).read_bytes() == before
    store.update(Goal, goal.goal_id, lambda g: g.history.append(record(3)))  # untouched ones pass as read
    assert [it.number for it in store.load(Goal, goal.goal_id).history] == [1, 2, 3]
