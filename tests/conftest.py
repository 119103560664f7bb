"""Shared fixtures. Tests never touch the real ~/.claude: HOME and GOAL_CONVERGENCE_HOME point at a
temp folder for every test, and a tripwire fails any test that touches the real home anyway."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytest_plugins = ["tests.fakeapi", "tests.stress.report"]

# ---- the tripwire ------------------------------------------------------------------------------
# Recorded at import, before any fixture moves HOME: the home a test must never touch.
REAL_HOME = Path(os.path.abspath(os.path.expanduser("~")))
REAL_GC_HOME = Path(os.path.abspath(os.environ.get("GOAL_CONVERGENCE_HOME") or REAL_HOME / ".claude"))
# What our code keeps in its home (store folders, log, locks, baselines, settings): the subprocess check.
OURS = ("goals", "triage", "quarantine", "locks", "logs", "baselines", "events.jsonl", "config.toml", "prices.json",
        "reports")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRITES = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link", "os.chmod", "os.chown",
           "os.utime", "os.truncate", "shutil.rmtree", "shutil.copyfile", "shutil.copytree", "shutil.move"}
_READS = {"open", "os.listdir", "os.scandir"}


class RealHomeTouched(PermissionError):
    """Raised where a test writes under the real home (or reads our real home); the test fails too."""


class Tripwire:
    """Refuses, in this process, writes anywhere under ``home`` and any access to our home under it (``gc_home``),
    and remembers each one so the test that did it fails even if the code under test swallowed the error.
    Subprocesses are not audited: ``snapshot`` of our files in that home, before and after, covers them."""

    def __init__(self, home: Path, gc_home: Path | None = None):
        self.home, self.gc_home = str(home), str(gc_home or home / ".claude")
        self.hits: list[str] = []

    @staticmethod
    def _under(path: str, folder: str) -> bool:
        return path == folder or path.startswith(folder + os.sep)

    def check(self, event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writes = bool((mode and any(c in mode for c in "wax+")) or (mode is None and flags & _WRITE_FLAGS))
            paths = [path]
        elif event in _WRITES:
            paths, writes = list(args[:2] if event in ("os.rename", "os.symlink", "os.link", "shutil.copyfile",
                                                       "shutil.copytree", "shutil.move") else args[:1]), True
        else:  # os.listdir / os.scandir
            paths, writes = [args[0]], False
        for raw in paths:
            if not isinstance(raw, (str, bytes, os.PathLike)):
                continue  # a file descriptor: opened (and checked) before
            path = os.path.abspath(os.fsdecode(raw))
            if (writes and self._under(path, self.home)) or self._under(path, self.gc_home):
                self.hits.append(f"{event} {path}")
                raise RealHomeTouched(f"a test touched the real home: {event} {path}")

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """Size and mtime of every file and folder of ours in the home (for what subprocesses did)."""
        seen: dict[str, tuple[int, int]] = {}
        for name in OURS:
            top = os.path.join(self.gc_home, name)
            for folder, dirs, files in [("", [], [top])] + list(os.walk(top)):
                for entry in [os.path.join(folder, n) for n in dirs + files]:
                    with contextlib.suppress(FileNotFoundError):
                        st = os.stat(entry)
                        seen[entry] = (st.st_size, st.st_mtime_ns)
        return seen

    @contextlib.contextmanager
    def armed(self) -> Iterator[Tripwire]:
        _ARMED.append(self)
        try:
            yield self
        finally:
            _ARMED.remove(self)


_ARMED: list[Tripwire] = []
_local = threading.local()


def _audit(event: str, args: tuple) -> None:
    if (event in _READS or event in _WRITES) and _ARMED and not getattr(_local, "busy", False):
        _local.busy = True  # the check's own os calls must not re-enter it
        try:
            for wire in _ARMED:
                wire.check(event, args)
        finally:
            _local.busy = False


sys.addaudithook(_audit)  # hooks cannot be removed: this one is inert unless a Tripwire is armed
TRIPWIRE = Tripwire(REAL_HOME, REAL_GC_HOME)


@pytest.fixture(autouse=True)
def real_home_tripwire(request):
    """Fails the test that touched the real home in this process (whatever it caught on the way)."""
    before = len(TRIPWIRE.hits)
    with TRIPWIRE.armed():
        yield
    if len(TRIPWIRE.hits) > before:
        pytest.fail("the test touched the real home: " + "; ".join(TRIPWIRE.hits[before:]), pytrace=False)


def pytest_sessionstart(session):
    session.config.stash[_SNAPSHOT] = TRIPWIRE.snapshot()


def pytest_sessionfinish(session, exitstatus):
    changed = sorted(set(TRIPWIRE.snapshot().items()) ^ set(session.config.stash[_SNAPSHOT].items()))
    if changed:  # a subprocess (out of the audit hook's sight) wrote our files in the real home
        session.config.stash[_CHANGED] = sorted({path for path, _ in changed})
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if changed := config.stash.get(_CHANGED, None):
        terminalreporter.write_line("FAILED: the tests changed the real home: " + ", ".join(changed), red=True)


_SNAPSHOT = pytest.StashKey[dict]()
_CHANGED = pytest.StashKey[list]()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GOAL_CONVERGENCE_HOME", str(home / ".claude"))
    # The pytest runs the tests start (conditions, censuses, pristine copies) are of small projects that need
    # none of this venv's plugins; hypothesis's alone costs seconds per start on a loaded machine.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_SESSION_ID",
                "CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDECODE",
                "GOAL_CONVERGENCE_MAKER"):  # a maker running this suite: its tests' goals are no maker's
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def gc_home(isolated_home) -> Path:
    return Path(os.environ["GOAL_CONVERGENCE_HOME"])


@pytest.fixture
def store(gc_home):
    from goal_convergence.storage.store import Store

    return Store(gc_home)


@pytest.fixture
def make_goal(tmp_path):
    """A factory of valid goals built directly from the model (not through `goal new`), for tests of
    the store and the lifecycle; keyword arguments override any field."""
    from goal_convergence.models import Budget, Goal, OracleConfig, StoppingCondition, new_id, now_iso

    def make(**fields) -> Goal:
        stamp = now_iso()
        base = dict(goal_id=new_id("goal-"), objective="make all tests pass",
                    stopping_conditions=[StoppingCondition(type="test_pass", command="python -m pytest -q")],
                    budget=Budget(max_iterations=15, max_duration="2h", max_dollars=10.0),
                    oracle=OracleConfig(model="claude-haiku-5-5"), project_root=str(tmp_path),
                    created_at=stamp, updated_at=stamp)
        return Goal(**{**base, **fields})

    return make


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path) -> Path:
    """An empty git repository with one commit, in a temp folder."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("fixture\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def find_claude() -> str | None:
    """The real Claude Code binary: $CLAUDE_BIN, the npm package in the checkout, or PATH."""
    candidates = [os.environ.get("CLAUDE_BIN"),
                  str(REPO / "node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
                  shutil.which("claude")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture
def claude_bin() -> str:
    found = find_claude()
    if not found:
        if os.environ.get("CI"):
            pytest.fail("the Claude Code binary is missing; .ci/run installs it from npm")
        pytest.skip("Claude Code binary not installed (npm install @anthropic-ai/claude-code)")
    return found


# ---- the `goal` command in this process --------------------------------------------------------

def run_goal(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`goal ARGS` in ``cwd``, in this process: the same `main` as the console script (its exit codes and
    error mapping), its stdout and stderr apart, stdin empty. Where the process boundary is not the point,
    this saves each call the interpreter's start-up; tests of the boundary itself run the real script."""
    from click.testing import CliRunner

    from goal_convergence.entry import run as main

    before = os.getcwd()
    os.chdir(cwd)
    try:
        with CliRunner().isolation(input="") as (out, err, _):
            code = main(list(args))
        return subprocess.CompletedProcess(["goal", *args], code, out.getvalue().decode(), err.getvalue().decode())
    finally:
        os.chdir(before)


def wait_until(done: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait for work a test cannot wait for otherwise (SessionEnd's, done by a child the hook does not wait for)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.05)


def fresh_index(root: Path) -> list[dict] | None:
    """The goal summaries of the index under ``root`` when it is current (as reindex.py judges it), None when
    it is missing or stale, [] when there is no goals folder: what the tests check the store keeps it."""
    from goal_convergence.system import index

    try:
        on_disk, _ = index.scan(root)
    except FileNotFoundError:
        return [] if not (root / "goals").exists() else None
    except OSError:
        return None
    entries = index.cached(root)
    if on_disk.keys() != entries.keys() or index.changed(entries, on_disk):
        return None
    return list(entries.values())
