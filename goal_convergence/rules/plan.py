"""The goal's plan: tasks seeded with `goal new --task` or added by the judge, and the judge's changes to them.

A goal with tasks converges only once none is open (decide.py). The judge's changes come from a model, so
they are applied defensively: titles are cut to a sane length, a title already in the plan is not added
twice, an id the plan does not hold is ignored with a note, and the plan stops growing at ``MAX_TASKS``.
"""

from __future__ import annotations

import re

from ..errors import UsageError
from ..models import Goal, Task, TaskChanges, Verdict
from ..system.text import clip, cut

MAX_TITLE = 160
# Each task reaches the judge's input and the maker's feedback at every stop: a plan of hundreds would crowd out
# the evidence, and a judge adding a task at every iteration would never let the goal converge anyway.
MAX_TASKS = 30
_ID = re.compile(r"^t?([1-9][0-9]*)$")


def title(text: str) -> str:
    """One line, at most ``MAX_TITLE`` characters: a step, not an essay."""
    return clip(" ".join(text.split()), MAX_TITLE)


def _key(text: str) -> str:
    return title(text).casefold()


def seed(titles: list[str], provider: str = "auto") -> list[Task]:
    """The plan a new goal starts with, from its --task flags (in order, duplicates once)."""
    tasks: list[Task] = []
    for text in titles:
        if not title(text):
            raise UsageError("--task needs a title: say what must be done, e.g. --task 'document the new flag'")
        _add(tasks, text, "user", 0)
    if len(tasks) > MAX_TASKS:
        raise UsageError(f"{len(tasks)} tasks are more than a plan can keep ({MAX_TASKS}); give the larger ones")
    require_judge(tasks, provider)
    return tasks


def require_judge(tasks: list[Task], provider: str) -> None:
    """A goal with open tasks could never converge without a judge to find them done."""
    if provider == "conditions" and open_tasks(tasks):
        raise UsageError(f"the plan has open tasks ({', '.join(t.id for t in open_tasks(tasks))}) and --oracle "
                         "conditions has no judge to find one done (no model reads the work): choose another "
                         "--oracle (or, for a new goal, leave --task out)")


def _add(tasks: list[Task], text: str, by: str, number: int) -> Task | None:
    key = _key(text)
    if any(_key(t.title) == key for t in tasks):
        return None
    task = Task(id=f"t{max((int(t.id[1:]) for t in tasks), default=0) + 1}", title=title(text), added_by=by,
                added_in=number)  # type: ignore[arg-type]
    tasks.append(task)
    return task


def apply(tasks: list[Task], changes: TaskChanges | None, number: int) -> tuple[list[Task], list[str]]:
    """The plan once the judge's changes of iteration ``number`` are applied (a new list; ``tasks`` is left as
    it was), and notes on what was ignored. Completions come first: the ids are the judge's view of the plan it
    was shown, before anything it adds now."""
    if changes is None or not (changes.add or changes.complete):
        return tasks, []
    plan = [t.model_copy() for t in tasks]
    by_id = {t.id: t for t in plan}
    notes: list[str] = []
    for raw in changes.complete:
        m = _ID.match(raw.strip().lower())
        task = by_id.get(f"t{m.group(1)}") if m else None
        if task is None:
            notes.append(f"the oracle completed task {cut(raw, 40)!r}, which the plan does not hold: ignored")
        elif task.state == "open":
            task.state, task.done_in = "done", number
    added = []
    for text in changes.add:
        if not title(text):
            continue
        if len(plan) >= MAX_TASKS:
            notes.append(f"the plan holds {MAX_TASKS} tasks, its most: the oracle's task {title(text)!r} was not added")
            continue
        task = _add(plan, text, "oracle", number)
        if task is not None:
            added.append(f"{task.id} {task.title}")
    if added:
        notes.append("the oracle added to the plan: " + "; ".join(added))
    return plan, notes


def apply_verdict(goal: Goal, verdict: Verdict | None, number: int) -> list[str]:
    """Apply a verdict's plan changes to ``goal`` in place; the notes say what was ignored or added."""
    plan, notes = apply(goal.tasks, verdict.tasks if verdict is not None else None, number)
    if plan is not goal.tasks:
        goal.tasks = plan
    return notes


def open_tasks(tasks: list[Task]) -> list[Task]:
    return [t for t in tasks if t.state == "open"]


def listing(tasks: list[Task]) -> str:
    """The open tasks in one line, for a hint: ``t2 add a docstring; t3 update the README``."""
    return "; ".join(f"{t.id} {t.title}" for t in open_tasks(tasks))
