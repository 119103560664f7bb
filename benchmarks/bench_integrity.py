"""What the integrity guard costs on a realistic Python project, against the live run of its tests.

    python benchmarks/bench_integrity.py [--runs 3] [--quick] [--json]

Builds, in a temp folder, a git repository with a package of 150 modules, 40 test files holding 400
pytest tests (a conftest.py fixture, a few parametrized), a pyproject.toml with the pytest config, an
ignored build/ folder (~300 files) and an ignored node_modules/ (2,000 small files), makes a goal on
it with `creation.new_goal` (GOAL_CONVERGENCE_HOME and HOME in the temp folder) and gives it a history
of iterations. Then it prints, each beside the live run of the conditions measured in the same run:

1. the live run: `conditions.run_conditions` (median of --runs, taken in turn with the pristine runs
   of 3.), and the same run with the project's __pycache__ folders removed (the pristine copy leaves
   them out, so its run compiles the project);
2. `integrity.inspect` on a green run when no check-defining file changed (a source module was
   edited): no pristine run; timed as a Stop runs it, inside the iteration's snapshot of the tree (the
   goal's kept index, taken by the fingerprint first); warm, and cold as a fresh process sees it (hash
   cache, kept-index entries and the installed-module list emptied);
3. `integrity.inspect` on a green run after one test file was edited, so the pristine run happens:
   the whole inspect, `scratch.scratch_copy` alone (entered and left with an empty body), and
   inspect / live (the issue's figure: pristine run time relative to the live run);
   Then the tripwires over a real-size diff (``tripwire.inspect``: 30 product modules changed by 40
   lines each, every start test's literals read, the iteration's checkpoint taken as a Stop takes it),
   relative to the live run;
4. the baseline cost at `goal new` (record + start run, and the whole call) relative to one live run;
5. the bytes the baseline keeps under the home;
6. the environment baseline alone (guard/environment.py) on a green Stop: its check when nothing moved
   (a stat of each recorded file), when something moved (the interpreter probed again and its
   site-packages read), and its record at `goal new`. The conditions run this benchmark's venv: pytest
   with pytest-xdist, hypothesis, anyio and coverage installed, their files checked against RECORD.

PYTHONDONTWRITEBYTECODE is dropped from the environment, as on a developer's machine: with it every
run compiles the whole project and the live run is no faster than the pristine one.
It is a measurement, not a test: it exits 1 only when the setup went wrong (the suite did not pass,
the pristine run did not happen or failed), since the figures would then mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

# The home and HOME must point into the temp folder before the package is imported.
WORKDIR = Path(tempfile.mkdtemp(prefix="bench-integrity-"))
HOME = WORKDIR / "home"
HOME.mkdir()
os.environ["GOAL_CONVERGENCE_HOME"] = str(HOME / ".claude")
os.environ["HOME"] = str(HOME)
# `python -m pytest` in the condition must be this interpreter (the venv's, with pytest).
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
# A developer's machine writes bytecode: without it every run, live or pristine, compiles everything.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# The pristine copies (tempfile.mkdtemp) land in the temp folder too, so nothing outlives the run.
TMP = WORKDIR / "tmp"
TMP.mkdir()
os.environ["TMPDIR"] = str(TMP)
tempfile.tempdir = str(TMP)

from common import Row, report  # noqa: E402

from goal_convergence.checks import conditions  # noqa: E402
from goal_convergence.goals import creation, specs  # noqa: E402
from goal_convergence.guard import environment, installed, integrity, protect, scratch, syspath, tripwire  # noqa: E402
from goal_convergence.models import Decision, Goal, Integrity, Iteration, now_iso  # noqa: E402
from goal_convergence.storage.store import Store  # noqa: E402
from goal_convergence.vcs import checkpoint, filehash, git, keptindex, snapshot, tree  # noqa: E402

DIFF_FILES = 30
# An honest change: a function that compares and returns, as real fixes do, with no forgery in it.
DIFF_BODY = "\n\ndef rebalance(values, limit=RATE):\n" + "".join(
    f"    if len(values) == {n + 3}:\n        values = [v * {n + 2} for v in values]\n" for n in range(19)
) + "    return values\n"

COMMAND = "python -m pytest -q -p no:cacheprovider"
SUBPACKAGES = ("core", "pricing", "tax", "inventory", "orders", "shipping", "reports", "users", "util", "codecs")
MODULES_PER_SUB = 15  # 10 x 15 = 150 modules, plus the __init__.py files
TEST_FILES = 40  # 10 test items each: 400 tests
NODE_PACKAGES, NODE_FILES_PER_PACKAGE = 100, 20  # 2,000 files
HISTORY = 6


# ---- the project ------------------------------------------------------------------------------


def module_source(sub: str, j: int) -> str:
    k = SUBPACKAGES.index(sub) * 100 + j
    helper = "" if sub == "util" else "from ledger.util import m00 as base\n"
    rounding = "base.round_cents(value)" if sub != "util" else "int(value + 0.5) if value >= 0 else -int(-value + 0.5)"
    return textwrap.dedent(f'''\
        """ledger.{sub}.m{j:02d}: line items, rates and small helpers of the {sub} part of the ledger."""

        from __future__ import annotations

        import hashlib
        from dataclasses import dataclass, field

        {helper}
        RATE = {k % 17 + 2}
        LIMIT = {k * 3 + 10}
        NAME = "{sub}-{j:02d}"


        @dataclass(frozen=True)
        class Item:
            name: str
            qty: int
            price: int  # cents
            tags: tuple[str, ...] = field(default=())

            def total(self) -> int:
                return self.qty * self.price

            def taxed(self) -> int:
                return round_cents(self.total() * (100 + RATE) / 100)


        def round_cents(value: float) -> int:
            return {rounding}


        def scale(values: list[int], factor: int = RATE) -> list[int]:
            return [v * factor for v in values]


        def clamp(value: int) -> int:
            if value < 0:
                raise ValueError(f"{{NAME}}: negative value {{value}}")
            return min(value, LIMIT)


        def window(seq: list[int], n: int) -> list[tuple[int, ...]]:
            return [tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)]


        def normalize(text: str) -> str:
            return "-".join(part for part in text.strip().lower().replace("_", " ").split())


        def checksum(text: str) -> str:
            return hashlib.sha256(f"{{NAME}}:{{text}}".encode()).hexdigest()[:12]


        def summary(items: list[Item]) -> dict[str, int]:
            return {{"count": len(items), "qty": sum(i.qty for i in items), "total": sum(i.total() for i in items)}}
        ''')


def test_source(n: int) -> str:
    """Ten test items: seven plain tests, one parametrized over three cases (every fourth file: two
    cases and one more plain test)."""
    sub = SUBPACKAGES[n % len(SUBPACKAGES)]
    a, b = (n * 7) % MODULES_PER_SUB, (n * 11 + 3) % MODULES_PER_SUB
    k = SUBPACKAGES.index(sub) * 100 + a
    rate, limit = k % 17 + 2, k * 3 + 10
    three = n % 4 != 0
    cases = "[(0, 0), (1, 1), (7, 7)]" if three else "[(0, 0), (5, 5)]"
    extra = "" if three else textwrap.dedent(f"""

        def test_window_short():
            assert {sub}_{b:02d}.window([1], 2) == []
        """)
    return textwrap.dedent(f'''\
        import pytest

        from ledger.{sub} import m{a:02d} as {sub}_{a:02d}
        from ledger.{sub} import m{b:02d} as {sub}_{b:02d}


        def test_total():
            item = {sub}_{a:02d}.Item("widget", 3, 250)
            assert item.total() == 750


        def test_taxed():
            item = {sub}_{a:02d}.Item("widget", 2, 100)
            assert item.taxed() == {sub}_{a:02d}.round_cents(200 * (100 + {rate}) / 100)


        def test_scale():
            assert {sub}_{a:02d}.scale([1, 2, 3]) == [{rate}, {2 * rate}, {3 * rate}]


        def test_clamp_limit():
            assert {sub}_{a:02d}.clamp(10**6) == {limit}
            with pytest.raises(ValueError, match="negative"):
                {sub}_{a:02d}.clamp(-1)


        def test_window():
            assert {sub}_{b:02d}.window([1, 2, 3, 4], 2) == [(1, 2), (2, 3), (3, 4)]


        def test_normalize():
            assert {sub}_{b:02d}.normalize("  Big_Order  Total ") == "big-order-total"
            assert len({sub}_{b:02d}.checksum("x")) == 12


        def test_summary(catalog):
            items = [{sub}_{a:02d}.Item(name, qty, price) for name, qty, price in catalog]
            assert {sub}_{a:02d}.summary(items) == {{"count": 3, "qty": 6, "total": 1400}}


        @pytest.mark.parametrize(("value", "expected"), {cases})
        def test_clamp_small(value, expected):
            assert {sub}_{a:02d}.clamp(value) == expected
        ''') + extra


CONFTEST = textwrap.dedent('''\
    import pytest


    @pytest.fixture
    def catalog():
        """Three catalogue lines: (name, qty, price in cents)."""
        return [("pen", 1, 200), ("ink", 2, 300), ("pad", 3, 200)]
    ''')

PYPROJECT = textwrap.dedent('''\
    [build-system]
    requires = ["setuptools>=68"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "ledger"
    version = "1.4.0"
    requires-python = ">=3.11"

    [tool.pytest.ini_options]
    testpaths = ["tests"]
    addopts = "-ra --strict-markers"
    filterwarnings = ["error"]
    ''')


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_project(root: Path) -> dict[str, int]:
    write(root / "pyproject.toml", PYPROJECT)
    write(root / ".gitignore", "build/\nnode_modules/\n__pycache__/\n*.egg-info/\n")
    write(root / "README.md", "# ledger\n\nA small bookkeeping library.\n")
    write(root / "package.json", '{"name": "ledger-docs", "private": true, "devDependencies": {"prettier": "^3"}}\n')
    write(root / "ledger" / "__init__.py", '"""The ledger."""\n__version__ = "1.4.0"\n')
    for sub in SUBPACKAGES:
        write(root / "ledger" / sub / "__init__.py", f'"""ledger.{sub}."""\n')
        for j in range(MODULES_PER_SUB):
            source = module_source(sub, j)
            write(root / "ledger" / sub / f"m{j:02d}.py", source)
            write(root / "build" / "lib" / "ledger" / sub / f"m{j:02d}.py", source)  # 150 copies
            write(root / "build" / "temp.linux-x86_64-cpython-311" / sub / f"m{j:02d}.o", "\x7fELF" + "x" * 900)
    write(root / "tests" / "conftest.py", CONFTEST)
    for n in range(TEST_FILES):
        write(root / "tests" / f"test_{SUBPACKAGES[n % len(SUBPACKAGES)]}_{n:02d}.py", test_source(n))
    for p in range(NODE_PACKAGES):
        pkg = root / "node_modules" / f"dep-{p:03d}"
        write(pkg / "package.json", f'{{"name": "dep-{p:03d}", "version": "1.0.{p}", "main": "index.js"}}\n')
        write(pkg / "README.md", f"# dep-{p:03d}\n")
        write(pkg / "LICENSE", "MIT\n")
        write(pkg / "index.js", "module.exports = require('./lib/f00');\n")
        for f in range(NODE_FILES_PER_PACKAGE - 4):
            write(pkg / "lib" / f"f{f:02d}.js", f"exports.f{f} = (x) => x * {f} + {p};\n" * 4)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "ledger 1.4.0"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)

    def count(folder: Path) -> int:
        return sum(len(files) for _, _, files in os.walk(folder))

    return {"tracked": len(tree.list_files(root)), "build": count(root / "build"),
            "node_modules": count(root / "node_modules")}


# ---- measuring ----------------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def median_of(runs: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        took, result = timed(fn)
        times.append(took)
    return statistics.median(times), result


class Timer:
    """Wraps a module function to add up the time spent in it (creation.new_goal calls it by module)."""

    def __init__(self, module: Any, name: str) -> None:
        self.module, self.name, self.original, self.seconds = module, name, getattr(module, name), 0.0

    def __enter__(self) -> Timer:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        setattr(self.module, self.name, wrapper)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.module, self.name, self.original)


def add_history(store: Store, goal_id: str, found: list) -> Goal:
    """A few red iterations, as a goal that has been worked on for a while has."""
    def change(goal: Goal) -> Goal:
        for n in range(1, HISTORY + 1):
            stamp = now_iso()
            goal.history.append(Iteration(
                number=n, started_at=stamp, ended_at=stamp,
                maker_summary=f"iteration {n}: refactored the pricing rules",
                conditions=found, tree_fingerprint=tree.tree_fingerprint(Path(goal.project_root)),
                decision=Decision(action="continue", hint="the totals are still off by a cent"),
                integrity=Integrity(pristine_note="the pristine re-run waits until every condition passes")))
        goal.spent.iterations = HISTORY
        return goal

    return store.update(Goal, goal_id, change)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def folder_bytes(folder: Path) -> tuple[int, int]:
    files = [Path(d) / f for d, _, names in os.walk(folder) for f in names]
    return len(files), sum(f.stat().st_size for f in files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="Two runs of each measure.")
    parser.add_argument("--json", action="store_true", help="The rows as JSON on stdout (run_all.py); prose on stderr.")
    args = parser.parse_args()
    rows: list[Row] = []
    try:
        with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
            ok = bench(2 if args.quick else args.runs, rows) == 0
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
    return report(rows, ["--json"] if args.json else []) if ok else 1


def bench(runs: int, rows: list[Row]) -> int:
    started = time.perf_counter()
    root = WORKDIR / "ledger"
    took, counts = timed(lambda: make_project(root))
    print(f"project: {counts['tracked']} tracked files ({len(SUBPACKAGES) * MODULES_PER_SUB} modules, {TEST_FILES} "
          f"test files, conftest.py, pyproject.toml), ignored build/ with {counts['build']} files and node_modules/ "
          f"with {counts['node_modules']} files; made in {took:.1f} s")
    # The developer has run the suite before: the bytecode is there, as it is for the live runs.
    cond = specs.build_conditions(specs.GoalSpec(objective="x", project=root, test=COMMAND), root)
    warm = conditions.run_conditions(cond, root)
    if not warm[0].passed:
        print("setup failed: the suite does not pass\n" + warm[0].output_tail)
        return 1

    # ---- goal new -------------------------------------------------------------------------------
    store = Store(Path(os.environ["GOAL_CONVERGENCE_HOME"]))
    spec = specs.GoalSpec(objective="make the ledger's totals round half-even, the tests passing", project=root,
                          test=COMMAND, oracle_provider="conditions")
    with Timer(integrity, "record") as record, Timer(conditions, "run_conditions") as start_run:
        new_took, goal = timed(lambda: creation.new_goal(store, spec))
    goal = add_history(store, goal.goal_id, warm)
    assert goal.baseline is not None
    census = goal.baseline.census[0]
    number = len(goal.history) + 1

    # ---- nothing check-defining changed (a source module edited) --------------------------------
    source = root / "ledger" / "core" / "m03.py"
    source.write_text(source.read_text(encoding="utf-8") + "\n# reviewed\n", encoding="utf-8")
    lives = []
    took, found = timed(lambda: conditions.run_conditions(goal.stopping_conditions, root))
    lives.append(took)
    quiet_runs = max(5, runs * 2)
    state = snapshot.state_path(store.root, goal.goal_id, root)

    def stop_inspect() -> tuple[float, Integrity | None]:
        """The guard as a Stop runs it: inside the iteration's snapshot of the tree, which the fingerprint took
        (the goal's kept index; the snapshot's own cost is bench_repo_scale.py's)."""
        with snapshot.session(root, state), snapshot.pinned(root):
            tree.tree_fingerprint(root)
            return timed(lambda: integrity.inspect(store.root, goal, found, number, green=True))

    stops = [stop_inspect() for _ in range(quiet_runs)]
    quiet, report = statistics.median(took for took, _ in stops), stops[-1][1]
    assert report is not None
    quiet_ok = report.pristine is None and not report.issues
    quiet_note = report.pristine_note

    def fresh_process() -> None:
        """What a new process has not read yet (the home's kept files it reads as a new process would)."""
        filehash._cache.clear()
        keptindex._known.clear()
        git._opened.clear()
        installed._known = installed._last = None

    def fresh_process_inspect() -> float:
        fresh_process()
        return stop_inspect()[0]

    def fresh_names() -> frozenset[str]:
        fresh_process()
        return syspath.shadowed_names()

    cold_quiet = statistics.median(fresh_process_inspect() for _ in range(runs))
    names_took, names = median_of(runs, fresh_names)

    # ---- the tripwires over a real-size diff: 30 product modules changed by 40 lines each ---------
    manifest = integrity.load(store.root, goal.goal_id)
    assert manifest is not None
    edits = sorted((root / "ledger").rglob("m0*.py"))[:DIFF_FILES]
    for path in edits:
        path.write_text(path.read_text(encoding="utf-8") + DIFF_BODY, encoding="utf-8")
    # Every start test counted as failing: the most literals the special-casing tripwire would ever read.
    every = [t for ids in manifest.outcomes if ids for t in ids]
    taken = checkpoint.take(goal, number)  # as a Stop takes it before the guard: the tripwires read its tree
    assert taken.checkpoint is not None, taken.off

    def tripwires() -> list:
        return tripwire.inspect(root, store.root, goal.goal_id, number, manifest.start_tree, goal.base_commit,
                                manifest.sources, manifest.files, every)

    wires_took, wire_findings = median_of(quiet_runs, tripwires)
    took, found = timed(lambda: conditions.run_conditions(goal.stopping_conditions, root))
    lives.append(took)

    # ---- one test file edited: live and pristine runs in turn, so load drift hits both alike ----
    edited_rel = f"tests/test_{SUBPACKAGES[1]}_01.py"
    edited = root / edited_rel
    text = edited.read_text(encoding="utf-8")
    weakened = text.replace("assert item.total() == 750", "assert item.total() >= 0")
    assert weakened != text
    edited.write_text(weakened, encoding="utf-8")
    inspects, report, greens = [], None, [all(e.passed for e in found)]
    for n in range(runs):
        if n:
            took, found = timed(lambda: conditions.run_conditions(goal.stopping_conditions, root))
            lives.append(took)
            greens.append(all(e.passed for e in found))
        took, report = timed(lambda found=found: integrity.inspect(store.root, goal, found, number, green=True))
        inspects.append(took)
    live, pristine_inspect = statistics.median(lives), statistics.median(inspects)
    assert report is not None
    pristine = report.pristine
    # The live run once more without the project's bytecode, as the pristine copy runs (it leaves
    # __pycache__ out); the run writes it again.
    for folder in [d for d, _, _ in os.walk(root) if Path(d).name == "__pycache__"]:
        shutil.rmtree(folder, ignore_errors=True)
    cold_live, cold_found = timed(lambda: conditions.run_conditions(goal.stopping_conditions, root))

    manifest = integrity.load(store.root, goal.goal_id)
    assert manifest is not None and manifest.environment is not None

    # ---- the environment baseline alone: nothing moved, something moved (probe again), its record ----
    recorded = manifest.environment
    env_runs = max(5, runs * 2)
    env_quiet, env_same = median_of(env_runs, lambda: environment.check(recorded, goal))
    moved = recorded.model_copy(update={"interpreters": [it.model_copy(update={"stamp": "moved"})
                                                         for it in recorded.interpreters]})
    env_probe, env_probed = median_of(runs, lambda: environment.check(moved, goal))
    env_record, _ = median_of(runs, lambda: environment.record(root, goal.stopping_conditions))
    env_ok = (not (env_same.refused or env_same.undoable or env_probed.refused or env_probed.undoable)
              and bool(recorded.interpreters))
    watched = sum(len(it.watched) + len(it.runner) for it in recorded.interpreters)

    def enter_and_leave() -> list[str]:
        with scratch.scratch_copy(store.root, root, manifest, set(), [edited_rel], goal.goal_id) as (_, restored, _):
            pass
        return restored

    copy_took, restored = median_of(runs, enter_and_leave)
    # what it holds
    with scratch.scratch_copy(store.root, root, manifest, set(), [edited_rel], goal.goal_id) as (copy, _, _):
        copied = sum(len(f) for _, _, f in os.walk(copy))
        from_build = sum(len(f) for _, _, f in os.walk(copy / "build"))
        linked = (copy / "node_modules").is_symlink()

    # ---- the figures ----------------------------------------------------------------------------
    print(f"live run: `{COMMAND}`: median {ms(live)} over {runs} runs ({census.ran if census else '?'} tests ran "
          f"at the start, {found[0].census.passed if found[0].census else '?'} passed in the last run); the same "
          f"with the project's __pycache__ folders removed: {ms(cold_live)} ({cold_live / live:.2f}x)")
    print(f"guard, green run, no check-defining file changed (a source module edited): inspect median "
          f"{ms(quiet)} over {quiet_runs} = {quiet / live:.4f} of the live run; pristine run: "
          f"{'no' if quiet_ok else 'YES'} ({quiet_note!r})")
    print(f"  the same as a fresh process sees it (nothing read in the process yet): median "
          f"{ms(cold_quiet)} = {cold_quiet / live:.3f} of the live run; listing the {len(names):,} module names a "
          f"file must not shadow alone takes {ms(names_took)}")
    print(f"tripwires, green run, {len(edits)} product modules changed by {DIFF_BODY.count(chr(10))} lines each, "
          f"all {len(every)} start tests counted as failing, the iteration's checkpoint taken: median "
          f"{ms(wires_took)} over {quiet_runs} = {wires_took / live:.4f} of the live run; findings: "
          f"{[i.kind for i in wire_findings] or 'none'}")
    print(f"guard, green run, one test file edited ({edited.relative_to(root)}): inspect median "
          f"{ms(pristine_inspect)} over {runs} = {pristine_inspect / live:.2f}x the live run (pristine run time "
          f"relative to the live run)")
    if pristine is not None:
        print(f"  pristine run: passed {pristine.passed}, restored {pristine.restored}, its own duration "
              f"{pristine.duration_seconds * 1000:,.0f} ms (last run) = {pristine.duration_seconds / live:.2f}x "
              f"the live run; issues: {[i.kind for i in report.issues] or 'none'}")
    print(f"  scratch copy alone (entered and left, empty body): median {ms(copy_took)} = {copy_took / live:.3f} "
          f"of the live run, {copy_took / pristine_inspect:.0%} of the inspect; the copy holds {copied:,} files "
          f"({from_build} of them copied from the ignored build/), node_modules {'linked' if linked else 'COPIED'}")
    print(f"  inspect - live - copy = {ms(pristine_inspect - live - copy_took)}; the live run without the "
          f"project's bytecode (the copy has none) costs {ms(cold_live - live)} more than the warm one")
    files, kept = folder_bytes(store.root / "baselines")
    print(f"goal new: {ms(new_took)} in all = {new_took / live:.2f}x the live run; the baseline record "
          f"{ms(record.seconds)} ({record.seconds / live:.3f}x) + the start run {ms(start_run.seconds)} "
          f"({start_run.seconds / live:.2f}x) = {(record.seconds + start_run.seconds) / live:.2f}x the live run")
    print(f"baseline under the home: {goal.baseline.files} check-defining files watched, "
          f"{goal.baseline.kept_bytes:,} bytes of their content kept; {files} files, {kept:,} bytes on disk in "
          f"{store.root.name}/baselines (blobs + manifest)")
    [seen] = recorded.interpreters[:1] or [None]
    print(f"environment baseline: {len(recorded.interpreters)} interpreter(s), "
          f"{len(seen.dists) if seen else 0} distributions, runner {seen.runner_dists if seen else []} with "
          f"{len(seen.runner) if seen else 0} files; {watched} paths stat'ed each Stop")
    print(f"  check, nothing moved (stat cache): median {ms(env_quiet)} over {env_runs} = {env_quiet / live:.4f} of the "
          f"live run; something moved (probe again): median {ms(env_probe)} = {env_probe / live:.3f} of the live run; "
          f"record at goal new: {ms(env_record)} = {env_record / live:.3f}")
    print(f"benchmark wall time {time.perf_counter() - started:.1f} s")
    live_ms = f"the live run of 400 tests: {ms(live)}"
    rows += [
        Row("integrity guard, green run, no check-defining file changed (no pristine run; in the Stop's snapshot)",
            ms(quiet), live_ms,
            "≤ 0.25× the live run", quiet / live <= 0.25, quiet / live),
        Row("integrity guard, green run after a test file was edited (pristine run in a scratch copy)",
            ms(pristine_inspect), live_ms, "≤ 2× the live run (one extra run)", pristine_inspect / live <= 2,
            pristine_inspect / live),
        Row(f"tripwires over the maker's diff, green run ({len(edits)} product modules changed)", ms(wires_took),
            live_ms, "≤ 0.25× the live run", wires_took / live <= 0.25, wires_took / live),
        Row("`goal new` (baseline record + start run)", ms(new_took), live_ms, "≤ 1.5× the live run",
            new_took / live <= 1.5, new_took / live),
        Row("environment baseline, green Stop, nothing moved (stat cache)", ms(env_quiet), live_ms,
            "≤ 0.02× the live run", env_quiet / live <= 0.02, env_quiet / live),
        Row("environment baseline, green Stop, something moved (interpreter probed again)", ms(env_probe), live_ms,
            "≤ 0.25× the live run", env_probe / live <= 0.25, env_probe / live),
    ]
    ok = (quiet_ok and env_ok and not wire_findings and pristine is not None and pristine.passed and linked and bool(restored) and all(greens)
          and cold_found[0].passed)
    if not ok:
        print("SETUP PROBLEM: the figures above do not measure what they say")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
