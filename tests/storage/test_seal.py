"""Tamper evidence on goal files (system/seal.py through the store): an edit made outside
goal-convergence is seen and named, files from before the seal still load, and honest moves never
look tampered."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from goal_convergence.goals import listing, moves
from goal_convergence.loop import engine
from goal_convergence.models import Goal
from goal_convergence.report import render
from goal_convergence.storage.store import Store
from goal_convergence.system import seal

SAMPLES = Path(__file__).parents[1] / "samples"


def edit(store: Store, goal_id: str, change) -> None:
    """Edit a goal file as a maker would: read its JSON, change it, write it back, seal and all."""
    path = store.path_for(Goal, goal_id)
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def fresh(store: Store, goal_id: str) -> Goal:
    """The goal as another process loads it (a store keeps what it wrote while the file is unchanged)."""
    return Store(store.root).load(Goal, goal_id)


def listed(store: Store, goal_id: str) -> dict:
    return next(s for s in listing.goals(store.root, True, []) if s["goalId"] == goal_id)


def test_the_key_is_made_once_private_and_every_goal_file_is_sealed(store, make_goal, gc_home):
    goal = store.create(make_goal())
    key = gc_home / seal.KEY
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert stat.S_IMODE(gc_home.stat().st_mode) == 0o700
    first = key.read_bytes()
    store.update(Goal, goal.goal_id, lambda g: None)
    assert key.read_bytes() == first
    assert json.loads(store.path_for(Goal, goal.goal_id).read_text())["seal"]["mac"]
    assert first.hex() not in store.path_for(Goal, goal.goal_id).read_text()
    assert fresh(store, goal.goal_id).tampered is None


def test_a_goal_edited_to_say_converged_is_shown_tampered(store, make_goal):
    goal = store.create(make_goal())
    edit(store, goal.goal_id, lambda d: d.update(state="converged", stopReason="converged"))
    loaded = fresh(store, goal.goal_id)
    assert loaded.tampered and "edited outside goal-convergence" in loaded.tampered
    assert "state, counters or history were edited" in loaded.tampered
    assert render.status(loaded).splitlines()[1].startswith("state: TAMPERED (the file says converged)")
    summary = listed(store, goal.goal_id)
    assert summary["tampered"] == loaded.tampered
    assert f"{goal.goal_id} tampered " in "\n".join(listing.table([summary]))
    assert goal.goal_id in [s["goalId"] for s in listing.goals(store.root, False, [])]  # listed as open


def test_a_terms_edit_is_named_field_by_field(store, make_goal):
    goal = store.create(make_goal())

    def cheat(doc):
        doc["oracle"]["provider"] = "conditions"
        doc["budget"]["maxIterations"] = 500
        doc["stoppingConditions"][0]["command"] = "true"
    edit(store, goal.goal_id, cheat)
    detail = fresh(store, goal.goal_id).tampered
    assert "oracle.provider: auto → conditions" in detail
    assert "budget.maxIterations: 15 → 500" in detail
    assert "stoppingConditions[0].command: python -m pytest -q → true" in detail


def test_a_stripped_seal_is_tampered_not_an_old_goal(store, make_goal):
    goal = store.create(make_goal())
    edit(store, goal.goal_id, lambda d: d.pop("seal"))
    assert "has no seal" in fresh(store, goal.goal_id).tampered
    # A seal copied from another goal does not pass either: each seal is bound to its file's name.
    other = store.create(make_goal())
    mac = json.loads(store.path_for(Goal, other.goal_id).read_text())["seal"]
    edit(store, goal.goal_id, lambda d: d.update(seal=mac))
    assert "no longer matches" in fresh(store, goal.goal_id).tampered


def test_a_tampered_goal_stays_tampered_through_writes(store, make_goal):
    goal = store.create(make_goal())
    edit(store, goal.goal_id, lambda d: d["budget"].update(maxIterations=99))
    other = fresh(store, goal.goal_id)
    other_store = Store(store.root)
    other_store.update(Goal, goal.goal_id, lambda g: setattr(g, "session_id", "s-1"))  # sealed again, with a note
    assert "budget.maxIterations: 15 → 99" in fresh(store, goal.goal_id).tampered == other.tampered
    assert seal.sealed_terms(store.root, goal.goal_id)["budget"]["maxIterations"] == 15


def test_a_goal_from_before_the_seal_loads_and_is_sealed_at_its_next_write(store, gc_home):
    text = (SAMPLES / "goal-0.1.0.json").read_text(encoding="utf-8")
    goal_id = json.loads(text)["goalId"]
    path = store.path_for(Goal, goal_id)
    path.write_text(text, encoding="utf-8")
    assert not (gc_home / seal.KEY).exists()
    assert fresh(store, goal_id).tampered is None  # the key is made now, with this file on its list
    assert fresh(store, goal_id).tampered is None
    store.update(Goal, goal_id, lambda g: None)
    assert json.loads(path.read_text())["seal"]["mac"] and fresh(store, goal_id).tampered is None
    path.write_text(text, encoding="utf-8")  # the old file again, once sealed: not an old goal any more
    assert "has no seal" in fresh(store, goal_id).tampered


def test_an_old_goal_edited_before_its_first_write_is_tampered(store, make_goal, gc_home):
    store.create(make_goal())  # a home in use: the key is there, and the list of old files with it
    assert (gc_home / seal.KEY).exists()
    doc = json.loads((SAMPLES / "goal-0.1.0.json").read_text(encoding="utf-8"))
    store.path_for(Goal, doc["goalId"]).write_text(json.dumps(doc), encoding="utf-8")
    assert "has no seal" in fresh(store, doc["goalId"]).tampered


def test_a_deleted_key_is_not_silently_made_again(store, make_goal, gc_home):
    goal = store.create(make_goal())
    (gc_home / seal.KEY).unlink()
    loaded = fresh(store, goal.goal_id)
    assert "sealed with a seal key that was deleted or replaced" in loaded.tampered
    state = json.loads((gc_home / seal.STATE).read_text())
    assert state["replaced"] is True and state["legacy"] == {}
    assert state["orphans"] == [f"goals/{goal.goal_id}.json"]
    # Deleting the key and the list of old files together does not turn sealed goals into old ones.
    (gc_home / seal.KEY).unlink()
    (gc_home / seal.STATE).unlink()
    assert fresh(store, goal.goal_id).tampered
    # The loop escalates it, sealed with the key there is now: a person can then look and resume it.
    escalated = engine.stop_tampered(Store(store.root), goal.goal_id, engine.Edges()).goal
    assert (escalated.state, escalated.stop_reason) == ("escalated", "tampered")
    assert fresh(store, goal.goal_id).tampered is None


def test_honest_moves_never_look_tampered(store, make_goal):
    goal = store.create(make_goal())
    now = datetime.now(UTC)
    steps = [lambda: moves.move(store, goal.goal_id, "pause", now),
             lambda: moves.resume(store, goal.goal_id, session_id="s-honest", now=now),
             lambda: moves.reconfigure(store, goal.goal_id, {"max_iterations": 40, "oracle_provider": "conditions"},
                                       via="goal run", now=now)]
    for step in steps:
        step()
        assert fresh(store, goal.goal_id).tampered is None
        assert "tampered" not in listed(store, goal.goal_id)
    kept = seal.sealed_terms(store.root, goal.goal_id)
    assert kept["budget"]["maxIterations"] == 40 and kept["oracle"]["provider"] == "conditions"


def test_a_goal_says_converged_only_with_a_converging_iteration_when_unsealed(store, make_goal, gc_home):
    goal = make_goal(state="converged", stop_reason="converged")
    path = store.path_for(Goal, goal.goal_id)
    path.write_text(json.dumps(goal.dump()), encoding="utf-8")  # before any key: an old file
    loaded = fresh(store, goal.goal_id)
    assert "says converged, but records no converging iteration" in loaded.tampered
    assert os.path.exists(gc_home / seal.KEY)
