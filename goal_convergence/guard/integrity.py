"""The integrity guard: a goal is done only against the checks it started with.

When a goal is made, ``record`` keeps the check-defining files (tests, runner configs, the scripts
the conditions run, ``--protect`` matches) with their content under the home, and the test census of
a first run. At every iteration ``inspect`` compares the tree and the census with that start; when
every condition passes it also re-runs the conditions in a scratch copy of the tree in which the
baseline files are restored and the check-sensitive files the maker added are removed (SWE-bench's
grader resets the test files the same way). Its issues keep a green run from converging whatever
the judge says; a goal made with ``tests_may_change`` shows them without enforcing them.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field, PrivateAttr

from ..checks import census, conditions
from ..errors import GoalConvergenceError
from ..models import (Baseline, Census, ConditionEvidence, Goal, Integrity, IntegrityIssue, Iteration, Model,
                      PristineRun, StoppingCondition, TestOutcome)
from ..storage.store import write_atomic
from ..system import files as documents
from ..system import seal
from ..vcs import filehash, tree
from . import environment, protect, scratch, syspath, tripwire
from .blobs import Blobs
from .environment import Environment

MAX_FILES = 20_000
MAX_FILE_BYTES = 1 << 20
MAX_KEPT_BYTES = 64 << 20
MAX_LISTED = 50
MAX_ISSUES = 20
RAN: tuple[TestOutcome, ...] = ("passed", "failed", "xpassed")


class Manifest(Model):
    """The part of the baseline that stays out of the goal file: every path with its start hash, the
    check-sensitive files there were and the start census's test ids. Sealed as a whole (seal.py)."""

    files: dict[str, str | None] = Field(default_factory=dict)
    kept: list[str] = Field(default_factory=list)
    sensitive: list[str] = Field(default_factory=list)
    outcomes: list[dict[str, str] | None] = Field(default_factory=list)
    # A plain hash of the goal's terms, written before the seal; read, no longer checked: anyone can
    # recompute a plain hash, and the seal covers the goal file whole.
    contract: str = ""
    start_tree: str = ""  # the work tree as the goal began, a git tree object (tripwire.start)
    sources: dict[str, str] = Field(default_factory=dict)  # outside git: the product sources' start hashes
    environment: Environment | None = None
    own: list[str] | None = None  # the project's own top-level modules (syspath.own_modules); None: not kept
    # protect.narrow's answer as the goal began, and the mark of the module names it looked for (protect.renarrow)
    narrowed: list[str] | None = None
    names: str = ""
    _tampered: str | None = PrivateAttr(default=None)  # why the file's seal does not hold, when it does not


def _folder(home: Path) -> Path:
    path = Path(home) / "baselines"
    documents.private_folder(path / "blobs")  # each level 0700 whatever the umask (mkdir's parents take the umask's)
    return path


def record(home: Path, goal_id: str, root: Path, conds: list[StoppingCondition],
           patterns: list[str]) -> tuple[Manifest, Baseline]:
    """Keep the check-defining files of ``root`` as they are now (content under the home)."""
    files = tree.list_files(root)
    protect.check_patterns(root, files, patterns)
    ignored, own = scratch.loadable_ignored(root, MAX_FILES), syspath.own_modules(files)
    names = syspath.shadowed_names()
    near = protect.narrow(files + ignored, patterns, own, names)  # one quick pass; only these are classified
    outside = set(ignored)
    defining = protect.check_defining(root, [f for f in near if f not in outside], conds, patterns, own)
    sensitive = protect.sensitive(near, patterns, syspath.view(root, near, own, outside.union(files)))
    notes = []
    if len(defining) > MAX_FILES:
        notes.append(f"{len(defining) - MAX_FILES} check-defining files past the first {MAX_FILES} are not "
                     f"watched; narrow the goal to a part of the project")
        defining = defining[:MAX_FILES]
    _folder(home)
    blobs = Blobs(home, goal_id)
    manifest = Manifest(sensitive=sensitive, own=own, narrowed=near, names=protect.names_mark(names))
    kept_bytes, unkept = 0, []
    new_blobs: dict[str, bytes] = {}
    base = os.path.join(root, "")  # the paths as tree.file_hash names them, its cache's keys
    for rel in defining:
        path = base + rel
        try:
            # One read: the hash is of the bytes kept, whatever moves on disk afterwards; and cached by the file's
            # stat data, so the goal's first iteration (its session keeps the digests) does not read it again.
            got = filehash.read_hashed(path, min(MAX_FILE_BYTES, MAX_KEPT_BYTES - kept_bytes))
        except OSError:  # a link or a submodule: its hash, no content (and a file that cannot be read, unkept)
            got = None
            if os.path.islink(path) or not os.path.isfile(path):
                manifest.files[rel] = tree.file_hash(root, rel)
                continue
        if got is None:
            manifest.files[rel] = tree.file_hash(root, rel)
            unkept.append(rel)
            continue
        data, manifest.files[rel] = got
        new_blobs[manifest.files[rel]] = data  # the goal's pack is new: every blob goes in it
        manifest.kept.append(rel)
        kept_bytes += len(data)
    manifest.start_tree, manifest.sources, sources = tripwire.start(root, manifest.files)
    # one pack, synced once: a thousand test files are not a thousand commits
    blobs.keep(new_blobs | sources)
    if unkept:
        notes.append(f"{len(unkept)} file(s) over the size limits ({MAX_FILE_BYTES >> 20} MiB each, "
                     f"{MAX_KEPT_BYTES >> 20} MiB in all) are watched but cannot be restored")
    return manifest, Baseline(files=len(defining), kept_bytes=kept_bytes, unkept=unkept[:MAX_LISTED],
                              note="; ".join(notes))


def save(home: Path, goal: Goal, manifest: Manifest, start: list[ConditionEvidence]) -> Goal:
    """Add the start run's census to the baseline and write the manifest beside the goal."""
    assert goal.baseline is not None
    censuses = [e.census for e in start]
    manifest.outcomes = [dict(c.outcomes) if c is not None and c.ids else None for c in censuses]
    goal.baseline.census = censuses
    if manifest.environment is None:  # not probed beside the start run (goals/creation.py)
        manifest.environment = environment.record(Path(goal.project_root), goal.stopping_conditions)
    if manifest.environment.skipped:
        goal.baseline.note = "; ".join(filter(None, [goal.baseline.note, "the runner's environment is not recorded "
                                                     "for " + ", ".join(manifest.environment.skipped)]))
    path = _folder(home) / f"{goal.goal_id}.json"
    write_atomic(path, seal.seal(Path(home), f"baselines/{path.name}", manifest.dump()).encode())
    return goal


def load(home: Path, goal_id: str) -> Manifest | None:
    """The goal's manifest, marked when its seal does not hold; None when it is gone or unreadable."""
    name = f"baselines/{goal_id}.json"
    try:
        text = (Path(home) / name).read_text(encoding="utf-8")
        doc = documents.parse_json(text)
        tampered = seal.check(Path(home), name, text, doc)
        seal.sealed(doc)
        manifest = Manifest.model_validate(doc)
    except (OSError, ValueError):
        return None
    manifest._tampered = tampered
    return manifest


# ---- every iteration -----------------------------------------------------------------------------


def inspect(home: Path, goal: Goal, found: list[ConditionEvidence], number: int, *,
            green: bool) -> Integrity | None:
    """What changed in the checks since the goal began, and whether that keeps this run from converging.

    The pristine re-run happens only when ``green`` and only when a check-defining file changed or a
    check-sensitive one was added (otherwise the live run was already the pristine one)."""
    if goal.baseline is None:
        return None
    root = Path(goal.project_root)
    manifest = load(home, goal.goal_id)
    if manifest is None:
        return Integrity(enforced=not goal.tests_may_change, issues=[IntegrityIssue(
            kind="pristine-unavailable", subject="baseline",
            detail="the goal's baseline is missing from the home folder, so its checks cannot be verified; "
                   "abandon the goal and start it again")])
    listed, ignored = tree.list_files(root), scratch.loadable_ignored(root, MAX_FILES)
    own = manifest.own if manifest.own is not None else syspath.own_modules(listed)
    present, names = set(listed).union(ignored), syspath.shadowed_names()
    # the few the classification can pick: from those at the start, when the names looked for are the same
    new = tree.added_since(root, manifest.start_tree) if manifest.names == protect.names_mark(names) else None
    files = (protect.narrow(listed + ignored, goal.protect, own, names) if new is None or manifest.narrowed is None
             else protect.renarrow(manifest.narrowed, present, new.union(ignored), goal.protect, own, names))
    changed, deleted = [], []
    for rel, digest in manifest.files.items():
        now = tree.file_hash(root, rel)
        if now is None and digest is not None:
            deleted.append(rel)
        elif now != digest:
            changed.append(rel)
    known = set(manifest.sensitive) | set(manifest.files)
    where = syspath.view(root, files, own, present)
    scan = files if changed or deleted else _new_since_start(root, manifest, files, set(ignored), present, where)
    added = [f for f in protect.sensitive(scan, goal.protect, where) if f not in known]
    issues = []
    if manifest._tampered:
        issues.append(IntegrityIssue(kind="goal-tampered", subject="baseline manifest",
                                     detail=f"the goal's baseline manifest: {manifest._tampered}; its checks cannot "
                                            f"be trusted: abandon the goal and start it again"))
    issues += _census_issues(goal, manifest, found)
    # The runner's environment: what no pristine run can leave out refuses now, the rest if the pristine run fails.
    env = environment.check(manifest.environment, goal)
    issues += env.refused
    report = Integrity(enforced=not goal.tests_may_change, changed=_listed(changed), deleted=_listed(deleted),
                       added=_listed(added), census=[e.census for e in found], notes=env.notes)
    if not green:
        report.pristine_note = "the pristine re-run waits until every condition passes"
        issues += env.undoable
    elif not (changed or deleted or added or env.undoable):
        report.pristine_note = "not needed, as no check-defining file changed and none was added"
    elif issues and not goal.tests_may_change:
        report.pristine_note = "skipped, as the test census or the environment already refuses this run"
        issues += env.undoable
    else:
        pristine, more = _pristine(home, goal, manifest, set(added) | env.remove, changed + deleted, env, where)
        report.pristine = pristine
        issues += more + ([] if pristine is not None and pristine.passed else env.undoable)
        if env.undoable and pristine is not None and pristine.passed:
            report.notes.append("the pristine run passed without " + "; ".join(i.subject for i in env.undoable))
    unique = list({(i.kind, i.subject, i.condition): i for i in issues}.values())
    report.issues = _since(unique, goal.history, number)[:MAX_ISSUES]
    if green:
        report.findings = _findings(home, goal, manifest, found, number)
    return report


def _findings(home: Path, goal: Goal, manifest: Manifest, found: list[ConditionEvidence],
              number: int) -> list[IntegrityIssue]:
    """Suspicions for a person or a model judge to weigh: the census a report file may have forged, and
    the tripwires over the maker's product changes."""
    disagree = [IntegrityIssue(kind="census-disagrees", subject=e.command, condition=e.index, detail=e.census.disagrees)
                for e in found if e.census is not None and e.census.disagrees]
    assert goal.baseline is not None
    failing = tripwire.failing_at_start(manifest.outcomes, goal.baseline.census, goal.stopping_conditions)
    return disagree + tripwire.inspect(Path(goal.project_root), home, goal.goal_id, number, manifest.start_tree,
                                       goal.base_commit, manifest.sources, manifest.files, failing)


def _new_since_start(root: Path, manifest: Manifest, files: list[str], ignored: set[str], present: set[str],
                     where: syspath.View) -> list[str]:
    """Of ``files``, those the protect scan must look at: the ones the start tree lacks, the ignored ones (never
    in a tree), any in a folder newly on the test run's path. The rest were classified as the goal began."""
    new = tree.added_since(root, manifest.start_tree)
    if new is None:
        return files
    fresh = new | ignored
    before = syspath.view(root, [f for f in files if f not in fresh], where.own, present - new)
    folders = tuple(where.folders - before.folders)  # a module in one, or a package just under it
    return [f for f in files if f in fresh or (folders and f.startswith(folders))]


def _listed(paths: list[str]) -> list[str]:
    return paths[:MAX_LISTED] + ([f"... and {len(paths) - MAX_LISTED} more"] if len(paths) > MAX_LISTED else [])


def _since(issues: list[IntegrityIssue], history: list[Iteration], number: int) -> list[IntegrityIssue]:
    """Date each issue from the first iteration of the unbroken run of iterations that had it."""
    for issue in issues:
        issue.since = number
        for it in reversed(history):
            same = it.integrity is not None and any((i.kind, i.subject, i.condition) ==
                                                    (issue.kind, issue.subject, issue.condition)
                                                    for i in it.integrity.issues)
            if not same:
                break
            issue.since = it.number
    return issues


def _census_issues(goal: Goal, manifest: Manifest, found: list[ConditionEvidence],
                   where: str = "") -> list[IntegrityIssue]:
    assert goal.baseline is not None
    issues = []
    for ev in found:
        if ev.index >= len(goal.baseline.census) or goal.baseline.census[ev.index] is None:
            continue  # no census at the start (an unknown runner): nothing to hold this run to
        start = goal.baseline.census[ev.index]
        assert start is not None
        ids = manifest.outcomes[ev.index] if ev.index < len(manifest.outcomes) else None
        issues += compare(ev.index, goal.stopping_conditions[ev.index].command, start, ids or {}, ev.census, where)
    return issues


def compare(index: int, command: str, start: Census, start_ids: dict[str, str], now: Census | None,
            where: str = "") -> list[IntegrityIssue]:
    """What a run's census lost against the start: tests gone, skipped, xfailed, deselected, or fewer run."""
    def issue(kind: str, subject: str, detail: str) -> IntegrityIssue:
        return IntegrityIssue(kind=kind, subject=subject, detail=detail + where, condition=index)  # type: ignore[arg-type]
    if now is None or (start.ids and not now.ids):
        return [issue("census-lost", command,
                      f"`{command}` reported its tests at the start ({_count(start)}) and no longer does: "
                      f"is the test runner itself replaced or bypassed?")]
    found: list[IntegrityIssue] = []
    if start.ids and now.ids:  # by name: a new test that is skipped or deselected is no loss
        past = census.beyond(now)  # a run that named more ids than are kept by name: the start's remembered
        for test, before in start_ids.items():
            if before not in RAN or (test not in now.outcomes and past is not None and not past.knows(test)):
                continue  # cannot say: the counts below do
            after = now.outcomes.get(test) or ({True: "passed", False: "skipped"}.get(past.found.get(test))
                                               if past is not None else None)
            if after is None:
                found.append(issue("test-gone", test, f"{test} ran at the start and is gone now (deleted, renamed "
                                                      f"or deselected)"))
            elif after == "skipped":
                found.append(issue("test-skipped", test, f"{test} ran at the start and is skipped now"))
            elif after in ("xfailed", "xpassed") and before != "xpassed":
                found.append(issue("test-xfailed", test, f"{test} ran at the start and is marked as an expected "
                                                        f"failure now"))
        if past is None and len(start_ids) >= start.ids:
            return found
        # Past the ids kept by name (of the start, or of this run): the counts say the rest.
    for kind, field, what in (("test-deselected", "deselected", "deselected"), ("test-skipped", "skipped", "skipped"),
                              ("test-xfailed", "xfailed", "marked as expected failures")):
        before, after = getattr(start, field) or 0, getattr(now, field)
        if after is not None and after > before:
            found.append(issue(kind, command, f"`{command}`: {after} tests are {what}, {before} at the start"))
    if start.ran is not None and now.ran is not None and now.ran < start.ran:
        found.append(issue("fewer-tests", command, f"`{command}`: {now.ran} tests ran, {start.ran} at the start"))
    return found


def _count(census: Census) -> str:
    return f"{census.ran} tests ran" if census.ran is not None else f"{census.ids} test ids"


# ---- the pristine re-run ------------------------------------------------------------------------


def _pristine(home: Path, goal: Goal, manifest: Manifest, added: set[str], touched: list[str],
              env: environment.Check, where: syspath.View) -> tuple[PristineRun | None, list[IntegrityIssue]]:
    """Run the conditions with the original tests and check files (strict). A condition that fails
    there although every original test passed (a coverage bar, say) runs once more with the original
    check files but the maker's tests (lenient): new tests may raise coverage, not lower a bar."""
    started = time.monotonic()
    try:
        found, restored, unrestorable = _run_copy(home, goal, manifest, added, touched,
                                                  range(len(goal.stopping_conditions)), env)
        again = [e.index for e in found if not e.passed and _tests_clean(e)]
        if again:
            lenient, _, _ = _run_copy(home, goal, manifest, {a for a in added if not protect.is_plain_test(a, where)},
                                      [rel for rel in touched if not protect.is_plain_test(rel, where)], again, env)
            passed = {e.index: e for e in lenient if e.passed}
            found = [passed.get(e.index, e) for e in found]
    except (GoalConvergenceError, OSError) as exc:
        return None, [IntegrityIssue(kind="pristine-unavailable", subject="scratch copy", detail=str(exc))]
    failures = [f"[{e.index}] `{e.command}`: {e.first_failure}" for e in found if not e.passed]
    run = PristineRun(passed=not failures, duration_seconds=round(time.monotonic() - started, 3),
                      restored=_listed(sorted(restored)), removed=_listed(sorted(added)),
                      failures=failures[:MAX_LISTED], census=[e.census for e in found])
    what = _what_was_reset(restored, added)
    issues = [IntegrityIssue(kind="pristine-failed", subject=e.command, condition=e.index,
                             detail=f"in a copy of the tree {what}, `{e.command}` fails: {e.first_failure}")
              for e in found if not e.passed]
    issues += [IntegrityIssue(kind="pristine-unavailable", subject=rel,
                              detail=f"{rel} changed and its start content was not kept (over the size limit, "
                                     f"or removed from the home), so it cannot be restored: revert it yourself")
               for rel in unrestorable]
    issues += _census_issues(goal, manifest, found, where=" (in the pristine copy)")
    return run, issues


def _tests_clean(ev: ConditionEvidence) -> bool:
    """Every test the run reported passed: what failed is something else (a coverage bar, a linter)."""
    return ev.census is not None and ev.census.failed == 0 and bool(ev.census.ran or ev.census.ids)


def _run_copy(home: Path, goal: Goal, manifest: Manifest, remove: set[str], restore: list[str],
              indexes: Iterable[int],
              changes: environment.Check) -> tuple[list[ConditionEvidence], list[str], list[str]]:
    root = Path(goal.project_root)
    with scratch.scratch_copy(home, root, manifest, remove, restore, goal.goal_id) as (copy, restored, unrestorable):
        conds = [c.model_copy(update={"command": c.command.replace(str(root), str(copy))})
                 for c in goal.stopping_conditions]
        # Build output of its own, kept between this goal's pristine runs: a cargo target shared with
        # the work tree would hand each side the other's test binaries (cargo trusts file times, and
        # the copy keeps them).
        target = Path(tempfile.gettempdir()) / f"goal-pristine-target-{goal.goal_id}"
        env = {**environment.pristine_env(os.environ, changes), "CARGO_TARGET_DIR": str(target)}
        found = conditions.run_conditions(conds, copy, only=list(indexes), env=env, bytecode_of=root,
                                          expected=lambda i: (manifest.outcomes[i:i + 1] or [None])[0] or ())
    for ev in found:
        ev.command = goal.stopping_conditions[ev.index].command
    return found, restored, unrestorable


def _what_was_reset(restored: list[str], added: set[str]) -> str:
    """``with the original tests/a.py and without conftest.py``: what the pristine copy put back."""
    def some(paths: list[str]) -> str:
        return ", ".join(paths[:5]) + (" ..." if len(paths) > 5 else "")
    parts = ([f"with the original {some(sorted(restored))}"] if restored else []) + (
        [f"without {some(sorted(added))}"] if added else [])
    return " and ".join(parts) or "as the goal began"
