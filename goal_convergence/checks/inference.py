"""Infer stopping conditions from an objective and the project it is about.

The objective says which kinds of check matter ("tests pass", "lint", "coverage 80%", "build");
the project says how to run them (Makefile targets, package.json scripts, pyproject/pytest,
ruff/eslint configs, Cargo, go.mod). An objective that names no kind gets the project's tests.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from ..models import StoppingCondition

KINDS = ("test_pass", "lint_clean", "coverage_threshold", "build_pass")
PYTHON_BUILD = r"python -m compileall -q -x '(^|/)(\.git|\.venv|venv|node_modules|build|dist)/' ."

_OBJECTIVE_WORDS = {
    "test_pass": re.compile(r"\btests?\b|\bspecs?\b|\bpytest\b|\bjest\b|\bvitest\b", re.I),
    "lint_clean": re.compile(r"\blint\w*|\bruff\b|\beslint\b|\bclippy\b|\bflake8\b", re.I),
    "coverage_threshold": re.compile(r"\bcoverage\b", re.I),
    "build_pass": re.compile(r"\bbuild\w*|\bcompil\w*", re.I),
}
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s*%")
_ESLINT_CONFIGS = (".eslintrc", ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.json", ".eslintrc.yml", ".eslintrc.yaml",
                   "eslint.config.js", "eslint.config.mjs", "eslint.config.cjs", "eslint.config.ts")


def kinds_in(objective: str) -> list[str]:
    return [k for k in KINDS if _OBJECTIVE_WORDS[k].search(objective)]


def coverage_percent(objective: str) -> float | None:
    """The coverage figure an objective asks for ("coverage >= 80%"; "from 60% to 85%" means 85)."""
    if not _OBJECTIVE_WORDS["coverage_threshold"].search(objective):
        return None
    figures = [float(m) for m in _PERCENT.findall(objective) if float(m) <= 100]
    return max(figures) if figures else None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _make_commands(root: Path) -> dict[str, str]:
    text = next((t for t in map(_text, (root / "GNUmakefile", root / "makefile", root / "Makefile")) if t), "")
    targets = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, re.M))
    names = {"test_pass": "test", "lint_clean": "lint", "build_pass": "build", "coverage_threshold": "coverage"}
    return {kind: f"make {target}" for kind, target in names.items() if target in targets}


def _node_commands(root: Path) -> dict[str, str]:
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    scripts = package.get("scripts") if isinstance(package, dict) else None
    scripts = scripts if isinstance(scripts, dict) else {}
    found: dict[str, str] = {}
    # `npm init` writes a test script that only fails; it is no test suite.
    if isinstance(scripts.get("test"), str) and "no test specified" not in scripts["test"]:
        found["test_pass"] = "npm test"
        found["coverage_threshold"] = "npm test -- --coverage"
    for kind, name in (("lint_clean", "lint"), ("build_pass", "build"), ("coverage_threshold", "coverage")):
        if name in scripts:
            found[kind] = f"npm run {name}"
    if "lint_clean" not in found and (any((root / n).exists() for n in _ESLINT_CONFIGS) or "eslintConfig" in package):
        found["lint_clean"] = "npx eslint ."
    if "build_pass" not in found and (root / "tsconfig.json").exists():
        found["build_pass"] = "npx tsc --noEmit"
    return found


def _uses_pytest(root: Path, pyproject: dict) -> bool:
    if "pytest" in (pyproject.get("tool") or {}) or (root / "pytest.ini").exists() or (root / "conftest.py").exists():
        return True
    if "[tool:pytest]" in _text(root / "setup.cfg") or "[pytest]" in _text(root / "tox.ini"):
        return True
    if any(root.glob("test_*.py")) or any(root.glob("*_test.py")):
        return True
    # A tests/ folder counts only with Python in it: Rust and Go projects have tests/ folders too.
    if any(next((root / d).rglob("*.py"), None) for d in ("tests", "test") if (root / d).is_dir()):
        return True
    declared = [_text(root / "pyproject.toml"), *map(_text, sorted(root.glob("requirements*.txt")))]
    return any(re.search(r"\bpytest\b", t) for t in declared)


def _python_commands(root: Path) -> dict[str, str]:
    pyproject = _toml(root / "pyproject.toml")
    found: dict[str, str] = {}
    if _uses_pytest(root, pyproject):
        found["test_pass"] = "python -m pytest -q"
        found["coverage_threshold"] = "python -m pytest -q --cov --cov-report=term"
    tool = pyproject.get("tool") or {}
    if "ruff" in tool or (root / "ruff.toml").exists() or (root / ".ruff.toml").exists():
        found["lint_clean"] = "ruff check ."
    if pyproject.get("build-system"):
        # Byte-compiling every module needs nothing installed and catches what breaks a Python build.
        found["build_pass"] = PYTHON_BUILD
    return found


def _cargo_commands(root: Path) -> dict[str, str]:
    if not (root / "Cargo.toml").exists():
        return {}
    return {"test_pass": "cargo test", "lint_clean": "cargo clippy -- -D warnings", "build_pass": "cargo build",
            "coverage_threshold": "cargo llvm-cov"}


def _go_commands(root: Path) -> dict[str, str]:
    if not (root / "go.mod").exists():
        return {}
    return {"test_pass": "go test ./...", "lint_clean": "go vet ./...", "build_pass": "go build ./...",
            "coverage_threshold": "go test -cover ./..."}


def project_commands(root: Path) -> dict[str, str]:
    """How this project runs each kind of check, by what its files say. The project's own Makefile
    wins, then package.json, Python, Cargo and Go, in that order."""
    found: dict[str, str] = {}
    for source in (_make_commands, _node_commands, _python_commands, _cargo_commands, _go_commands):
        for kind, command in source(root).items():
            found.setdefault(kind, command)
    return found


GUARD = "a guard inferred from the project: the objective names no check"


def guard_note(conditions: list[StoppingCondition]) -> str | None:
    """What to tell the user when the checks were chosen as a guard, not because the objective asks for them."""
    guards = [c.command for c in conditions if c.description == GUARD]
    if not guards:
        return None
    return (f"note: the objective names no check this project can run (tests, lint, build, coverage), so "
            f"{', '.join(f'`{g}`' for g in guards)} was chosen as a guard: it must keep passing, but it does not "
            f"measure the objective. Add a check that does with --check CMD (a command that exits 0 only when "
            f"the objective is met), on a new goal: `goal new OBJECTIVE --check CMD`")


def infer(objective: str, root: Path, default_threshold: float = 80.0) -> tuple[list[StoppingCondition], list[str]]:
    """Conditions for ``objective`` in ``root``, and the kinds the objective asks for by name that
    the project cannot run. An objective that names no kind gets the tests, when there are any."""
    commands = project_commands(root)
    asked = kinds_in(objective)
    threshold = coverage_percent(objective)
    if "coverage_threshold" in asked and "test_pass" in asked and threshold is not None:
        asked.remove("test_pass")  # the coverage run is the test run
    conditions = [
        StoppingCondition(
            type=kind,  # type: ignore[arg-type]
            command=commands[kind],
            threshold=(threshold or default_threshold) if kind == "coverage_threshold" else None,
            description="inferred from the objective and project" if asked else GUARD,
        )
        for kind in asked or ["test_pass"]
        if kind in commands
    ]
    return conditions, [kind for kind in asked if kind not in commands]
