"""Inferring stopping conditions from an objective and a real project folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goal_convergence.checks import inference
from goal_convergence.errors import InvalidInput
from goal_convergence.goals import creation, specs


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def package_json(**scripts: str) -> str:
    return json.dumps({"name": "p", "version": "1.0.0", "scripts": scripts})


PYCOV = "python -m pytest -q --cov --cov-report=term"
PYPROJECT = '[project]\nname = "p"\nversion = "0.1"\n[build-system]\nrequires = ["setuptools"]\n'

SAMPLES = {
    "pyproject and a tests folder": (
        {"pyproject.toml": PYPROJECT, "tests/test_a.py": "def test_a(): pass\n"},
        {"test_pass": "python -m pytest -q", "coverage_threshold": PYCOV,
         "build_pass": inference.PYTHON_BUILD}),
    "pytest configured in pyproject, ruff too": (
        {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q"\n[tool.ruff]\nline-length = 100\n'},
        {"test_pass": "python -m pytest -q", "coverage_threshold": PYCOV, "lint_clean": "ruff check ."}),
    "pytest as a declared test dependency": (
        {"pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\ntest = ["pytest>=8"]\n'},
        {"test_pass": "python -m pytest -q", "coverage_threshold": PYCOV}),
    "pytest.ini and ruff.toml": ({"pytest.ini": "[pytest]\n", "ruff.toml": "line-length = 100\n"},
                                 {"test_pass": "python -m pytest -q", "coverage_threshold": PYCOV,
                                  "lint_clean": "ruff check ."}),
    "package.json with test, lint and build": (
        {"package.json": package_json(test="vitest run", lint="eslint src", build="vite build")},
        {"test_pass": "npm test", "lint_clean": "npm run lint", "build_pass": "npm run build",
         "coverage_threshold": "npm test -- --coverage"}),
    "npm init's placeholder test, an eslint config and tsconfig": (
        {"package.json": package_json(test='echo "Error: no test specified" && exit 1'),
         "eslint.config.js": "export default [];\n", "tsconfig.json": "{}"},
        {"lint_clean": "npx eslint .", "build_pass": "npx tsc --noEmit"}),
    "Cargo with integration tests in tests/": (
        {"Cargo.toml": '[package]\nname = "p"\nversion = "0.1.0"\n', "tests/it.rs": "#[test] fn t() {}\n"},
        {"test_pass": "cargo test", "lint_clean": "cargo clippy -- -D warnings", "build_pass": "cargo build",
         "coverage_threshold": "cargo llvm-cov"}),
    "go.mod": ({"go.mod": "module example.com/p\n\ngo 1.22\n"},
               {"test_pass": "go test ./...", "lint_clean": "go vet ./...", "build_pass": "go build ./...",
                "coverage_threshold": "go test -cover ./..."}),
    "a Makefile beats the other files": (
        {"Makefile": ".PHONY: test lint\ntest: deps\n\tpytest\nlint:\n\truff check .\nVAR := 1\n",
         "pyproject.toml": "[tool.pytest.ini_options]\n", "go.mod": "module m\n"},
        {"test_pass": "make test", "lint_clean": "make lint", "build_pass": "go build ./...",
         "coverage_threshold": PYCOV}),
    "nothing at all": ({"README.md": "hello\n", "tests/data.txt": "not code\n"}, {}),
}


@pytest.mark.parametrize("name", SAMPLES)
def test_commands_come_from_the_projects_own_files(tmp_path, name):
    files, expected = SAMPLES[name]
    found = inference.project_commands(project(tmp_path, files))
    assert found == expected


@pytest.mark.parametrize(("objective", "kinds"), [
    ("make all tests pass", ["test_pass"]),
    ("fix the failing spec", ["test_pass"]),
    ("make the linter happy", ["lint_clean"]),
    ("the build must be green and ruff clean", ["lint_clean", "build_pass"]),
    ("get coverage to 85%", ["coverage_threshold"]),
    ("use the latest API", []),  # "latest" is not "test"
    ("refactor the parser", []),
])
def test_kinds_named_in_an_objective(objective, kinds):
    assert inference.kinds_in(objective) == kinds


@pytest.mark.parametrize(("objective", "percent"), [
    ("coverage >= 80%", 80.0), ("raise coverage from 60% to 85.5%", 85.5), ("coverage up", None),
    ("90% of the tests", None), ("coverage 150%", None),
])
def test_the_coverage_figure(objective, percent):
    assert inference.coverage_percent(objective) == percent


def python_project(root: Path) -> Path:
    return project(root, {"pyproject.toml": "[tool.pytest.ini_options]\n", "tests/test_a.py": "def test(): pass\n"})


def test_an_objective_that_names_no_kind_gets_the_tests(tmp_path):
    conditions, missing = inference.infer("refactor the parser", python_project(tmp_path))
    assert [(c.type, c.command) for c in conditions] == [("test_pass", "python -m pytest -q")] and missing == []


def test_a_coverage_figure_replaces_the_plain_test_run(tmp_path):
    conditions, _ = inference.infer("tests pass with coverage >= 90%", python_project(tmp_path))
    assert [(c.type, c.threshold) for c in conditions] == [("coverage_threshold", 90.0)]
    assert conditions[0].command == PYCOV


def test_coverage_without_a_figure_gets_the_default_threshold(tmp_path):
    conditions, _ = inference.infer("improve coverage", python_project(tmp_path))
    assert [(c.type, c.threshold) for c in conditions] == [("coverage_threshold", 80.0)]


def spec(objective: str, root: Path, **flags) -> specs.GoalSpec:
    return specs.GoalSpec(objective=objective, project=root, **flags)


@pytest.mark.parametrize(("objective", "why"), [("refactor the parser", "no stopping condition could be inferred"),
                                               ("make all tests pass", "asks for test but no command")])
def test_nothing_to_infer_is_refused_with_the_flags_listed(store, tmp_path, objective, why):
    with pytest.raises(InvalidInput) as raised:
        creation.new_goal(store, spec(objective, project(tmp_path, {"README.md": "x"})))
    message = str(raised.value)
    assert why in message
    for flag in ("--test CMD", "--lint CMD", "--build CMD", "--coverage PCT", "--coverage-cmd CMD", "--check CMD"):
        assert flag in message
    assert store.summaries() == []


def test_an_objective_asking_for_lint_in_a_project_without_a_linter_is_refused(store, tmp_path):
    with pytest.raises(InvalidInput, match="asks for lint but no command for it was found.*--lint CMD"):
        creation.new_goal(store, spec("make all tests pass and lint clean", python_project(tmp_path)))
    assert store.summaries() == []


def test_inferred_conditions_end_up_in_the_goal(store, tmp_path):
    root = project(tmp_path, {"package.json": package_json(test="jest", lint="eslint .")})
    goal = creation.new_goal(store, spec("tests and lint pass", root))
    assert [(c.type, c.command) for c in goal.stopping_conditions] == [("test_pass", "npm test"),
                                                                      ("lint_clean", "npm run lint")]
    assert all(c.description.startswith("inferred from the objective") for c in goal.stopping_conditions)


def test_flags_win_over_inference(store, tmp_path):
    goal = creation.new_goal(store, spec("make all tests pass and lint clean", tmp_path, test="./run-tests"))
    assert [(c.type, c.command) for c in goal.stopping_conditions] == [("test_pass", "./run-tests")]
