"""The layout holds: the import contracts in pyproject.toml (each folder one layer, imports pointing down, the
standard-library layers free of third-party packages) pass and fail on a break, no module passes 400 lines,
and the hooks' fast path, really imported, loads nothing but the standard library."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "goal_convergence"
MAX_LINES = 400
TOP_LEVEL = 19  # fourteen layers, the entry modules and the typing marker


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter's verdict on the package under ``root`` (its pyproject.toml's contracts)."""
    command = Path(sys.executable).with_name("lint-imports")
    if not command.exists():
        pytest.fail("import-linter is not installed: pip install '.[test]'")
    return subprocess.run([str(command), "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def test_the_import_contracts_hold():
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    ("system/text.py", "from ..loop import engine", "goal_convergence.system is not allowed to import goal_convergence.loop"),
    ("loop/engine.py", "from ..system import text", None),  # an import that points down is no finding
    ("system/index.py", "import click", "goal_convergence.system is not allowed to import click"),
    ("oracle/api.py", "from ..guard import integrity", "goal_convergence.oracle is not allowed to import goal_convergence.guard"),
])
def test_the_contracts_refuse_an_import_that_breaks_the_layers(tmp_path, module, line, broken):
    shutil.copytree(PACKAGE, tmp_path / "goal_convergence", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    path = tmp_path / "goal_convergence" / module
    path.write_text(f"{path.read_text()}\n\ndef _planted():\n    {line}\n")  # a lazy import counts too
    done = lint_imports(tmp_path)
    if broken is None:
        assert done.returncode == 0, done.stdout
    else:
        assert done.returncode != 0 and broken in done.stdout, done.stdout


def test_the_package_top_level_stays_small():
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= TOP_LEVEL, sorted(entries)


def test_no_module_is_longer_than_the_limit():
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
               for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_the_hook_fast_path_loads_only_the_standard_library():
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from goal_convergence.agents.claude_code import fast; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pydantic', 'click', 'anthropic', 'jsonschema', 'filelock', 'httpx', 'rich')))")
    out = subprocess.run([sys.executable, "-S", "-c", probe, str(PACKAGE.parent)], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
