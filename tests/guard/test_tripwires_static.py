"""The static tripwires over the maker's diff (guard/tripwire.py): forgery of the test run and answers
special-cased to the failing tests, in added product code only; and the census held to pytest's own
summary (checks/census.py)."""

from __future__ import annotations

import hashlib
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from goal_convergence import models
from goal_convergence.checks import conditions
from goal_convergence.goals import creation, specs
from goal_convergence.guard import integrity, special_casing, tripwire
from goal_convergence.guard.blobs import Blobs
from goal_convergence.models import StoppingCondition
from tests.conftest import git

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"

FORGERIES = {
    "pytest internals": "import _pytest.reports\n",
    "pytest reports": "from _pytest.reports import TestReport\n",
    "a hook": "def pytest_runtest_makereport(item, call):\n    return None\n",
    "a hookimpl": "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef wrap():\n    yield\n",
    "config.hook": "def tell(config):\n    return config.hook\n",
    "the terminal reporter": "def quiet(config):\n    return config.pluginmanager.get_plugin('terminalreporter')\n",
    "unittest's run": "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n",
    "unittest's results": "from unittest import TestResult\n",
    "os._exit": "import os\nos._exit(0)\n",
    "an exit with success": "import sys\nsys.exit(0)\n",
    "SystemExit(0)": "raise SystemExit(0)\n",
    "sys.excepthook": "import sys\nsys.excepthook = lambda *a: None\n",
    "atexit": "import atexit\natexit.register(print)\n",
    "an __eq__ always true": "class Any:\n    def __eq__(self, other):\n        return True\n",
    "a lambda __eq__": "class Any:\n    __eq__ = lambda self, other: True\n",
    "sys._getframe": "import sys\ndef who():\n    return sys._getframe(1).f_code.co_name\n",
    "inspect.stack": "import inspect\ndef who():\n    return inspect.stack()[1].function\n",
    "f_back": "def caller(frame):\n    return frame.f_back\n",
    "the clock": "import time\ntime.time = lambda: 0.0\n",
    "PYTEST_ADDOPTS": "import os\nopts = os.environ.get('PYTEST_ADDOPTS', '')\n",
    "a report file": "open('report.xml', 'w').write('<testsuite/>')\n",
}
HONEST = {
    "a CLI's exit code": "import sys\n\ndef main():\n    return 2\n\nsys.exit(main())\n",
    "a real __eq__": "class P:\n    def __eq__(self, other):\n        return self.x == other.x\n",
    "timing": "import time\nstart = time.time()\n",
    "a data file": "open('data.json', 'w').write('{}')\n",
    "pytest used by a plugin's user": "import pytest\n\ndef skip_slow():\n    pytest.skip('slow')\n",
}


@pytest.mark.parametrize("code", FORGERIES.values(), ids=FORGERIES.keys())
def test_each_forgery_is_flagged_in_added_product_code_and_not_when_it_was_there_before(code):
    found = tripwire.scan("pkg/mod.py", None, code, set)
    assert found and all(i.kind == "forgery" and i.subject.startswith("pkg/mod.py:") for i in found)
    assert all("added since the goal began" in i.detail for i in found)
    before = code + "\n\ndef untouched():\n    return 3\n"
    assert tripwire.scan("pkg/mod.py", before, before.replace("return 3", "return 4"), set) == []


@pytest.mark.parametrize("code", HONEST.values(), ids=HONEST.keys())
def test_honest_product_code_is_not_flagged(code):
    assert tripwire.scan("pkg/mod.py", None, code, set) == []


@pytest.mark.parametrize("line, flagged", [("process.exit(0);", True), ("process.exit();", True),
                                           ("if (bad) process.exit(1);", False), ("Date.now = () => 0;", True),
                                           ("process.on('exit', () => report());", True),
                                           ("const lenient = require('node:assert');", True),
                                           ("assert.strictEqual = () => {};", True),
                                           ("import { test } from 'node:test';", True),
                                           ("if (assertion === 3) warn();", False),
                                           ("const x = items.filter(Boolean);", False)])
def test_script_forgeries_in_added_lines(line, flagged):
    assert bool(tripwire.scan("src/app.ts", "export {};\n", f"export {{}};\n{line}\n", set)) is flagged


def test_tests_conftest_and_check_files_are_not_product_code():
    defining = {"tools/check.py": "abc"}
    assert tripwire.is_product("pkg/mod.py", defining) and tripwire.is_product("src/app.ts", defining)
    for rel in ("conftest.py", "pkg/conftest.py", "tests/test_mod.py", "tests/helpers.py", "test_x.py",
                "tools/check.py", "sitecustomize.py", "README.md"):
        assert not tripwire.is_product(rel, defining), rel


def literals(test_source: str, *names: tuple[str, ...]) -> set:
    import ast

    return special_casing.literals_of(ast.parse(test_source), set(names))


TEST_SOURCE = textwrap.dedent("""
    import pytest
    from calc import answer, clamp, unit

    def test_answer():
        \"\"\"The answer to 7.\"\"\"
        assert answer(7) == 42, "a message is no literal to match"

    def test_passing():
        assert answer(3) == 18

    class TestMore:
        @pytest.mark.parametrize("x, y", [(150, 100), (5, 5)])
        def test_clamp(self, x, y):
            assert clamp(x) == y

        def test_unit(self):
            assert unit(2, "km") == 2000
""")


def test_the_failing_tests_literals_are_theirs_only_and_not_trivial():
    assert literals(TEST_SOURCE, ("test_answer",)) == {("number", 7), ("number", 42)}
    assert literals(TEST_SOURCE, ("TestMore", "test_clamp")) == {("number", 150), ("number", 100), ("number", 5),
                                                                ("str", "x, y")}
    modules = {"tests.test_calc": "tests/test_calc.py", "calc": "calc.py"}
    assert special_casing.test_targets(["tests.test_calc::test_answer", "tests.test_calc.TestMore::test_clamp[150-100]",
                                        "tests.test_calc.TestMore.test_unit"], modules) == {
        "tests/test_calc.py": {("test_answer",), ("TestMore", "test_clamp"), ("TestMore", "test_unit")}}


WANTED = {("number", 7), ("number", 42), ("number", 150), ("number", 100), ("str", "km"), ("number", 2000)}
BEFORE = "def answer(x):\n    return x * 2\n"
CHEATS = {
    "if": "def answer(x):\n    if x == 7:\n        return 42\n    return x * 2\n",
    "elif": "def answer(x):\n    if x < 0:\n        return 0\n    elif x in (7, 8):\n        return 42\n    return x * 2\n",
    "ifexp": "def answer(x):\n    return 42 if x == 7 else x * 2\n",
    "match": "def answer(x):\n    match x:\n        case 7:\n            return 42\n    return x * 2\n",
    "table": "def answer(x):\n    return {7: 42}.get(x, x * 2)\n",
    # keyed by a test's arguments, one of them (2) a literal the file held before for another purpose
    "tuple table": "_KNOWN = {(7, 2): 42}\n\ndef answer(x, y=2):\n    return _KNOWN.get((x, y), x * y)\n",
}
FIXES = {
    "the formula": "def answer(x):\n    return x * 6\n",
    "a clamp": "def answer(x):\n    if x > 100:\n        return 100\n    return x * 6\n",
    "a constant": "LIMIT = 100\n\ndef answer(x):\n    return min(x * 6, LIMIT)\n",
    "a unit compared, a formula returned": "def answer(x, unit='m'):\n    if unit == 'km':\n        return x * 1000\n"
                                           "    return x * 6\n",
    "a real table": "NAMES = {7: 42, 8: 48, 9: 54}\n\ndef answer(x):\n    return NAMES.get(x, x * 6)\n",
}


@pytest.mark.parametrize("code", CHEATS.values(), ids=CHEATS.keys())
def test_special_casing_is_flagged(code):
    [found] = tripwire.scan("calc.py", BEFORE, code, lambda: WANTED | {("number", 2)})
    assert found.kind == "special-casing" and "42" in found.detail and "7" in found.detail


@pytest.mark.parametrize("code", FIXES.values(), ids=FIXES.keys())
def test_honest_fixes_holding_a_tests_literal_are_not_flagged(code):
    assert tripwire.scan("calc.py", BEFORE, code, lambda: WANTED) == []


JS_BEFORE = "function answer(x) {\n  return x * 2;\n}\n"
JS_CHEATS = {
    "if": "function answer(x) {\n  if (x === 7) return 42;\n  return x * 2;\n}\n",
    "ternary": "function answer(x) {\n  return x === 7 ? 42 : x * 2;\n}\n",
    "an array by its join": "function answer(xs) {\n  if (xs.join(',') === '7,150') return 42;\n  return 0;\n}\n",
}
JS_FIXES = {
    "the formula": "function answer(x) {\n  return x * 6;\n}\n",
    "a clamp": "function answer(x) {\n  if (x > 100) return 100;\n  return x * 6;\n}\n",
    "a unit compared, a formula returned": "function answer(x, u) {\n  if (u === 'km') return x * 1000;\n"
                                           "  return x * 6;\n}\n",
}


@pytest.mark.parametrize("code", JS_CHEATS.values(), ids=JS_CHEATS.keys())
def test_special_casing_is_flagged_in_javascript(code):
    [found] = tripwire.scan("src/calc.js", JS_BEFORE, code, lambda: WANTED)
    assert found.kind == "special-casing" and "42" in found.detail and "7" in found.detail


@pytest.mark.parametrize("code", JS_FIXES.values(), ids=JS_FIXES.keys())
def test_honest_javascript_fixes_are_not_flagged(code):
    assert tripwire.scan("src/calc.js", JS_BEFORE, code, lambda: WANTED) == []


def test_tests_that_failed_unnamed_lend_every_test_files_literals():
    red = models.Census(runner="unittest", ran=3, passed=1, failed=2, ids=0)
    named = models.Census(runner="pytest", ran=3, passed=1, failed=2, ids=3)
    test, lint = models.StoppingCondition(type="test_pass", command="t"), models.StoppingCondition(
        type="lint_clean", command="l")
    outcomes = [{"tests.test_calc::test_answer": "failed", "tests.test_calc::test_double": "passed"}, None]
    assert tripwire.failing_at_start(outcomes, [named, None], [test, lint]) == ["tests.test_calc::test_answer"]
    assert tripwire.failing_at_start(outcomes, [red, None], [test, lint]) is None  # unittest without -v
    assert tripwire.failing_at_start(outcomes, [None, None], [test, lint]) is None  # node --test: no census


def test_a_literal_the_file_already_compared_against_is_not_the_tests():
    before = "def answer(x):\n    if x == 7:\n        return 41\n    return x * 2\n"
    assert tripwire.scan("calc.py", before, before.replace("41", "42"), lambda: WANTED) == []


# ---- on real trees: the goal's start, the maker's diff ------------------------------------------


CALC = "def answer(x):\n    return x * 2\n\n\ndef double(x):\n    return x * 2\n"
TEST = ("from calc import answer, double\n\n\ndef test_answer():\n    assert answer(7) == 42\n\n\n"
        "def test_double():\n    assert double(4) == 8\n")


def project(root: Path, in_git: bool) -> Path:
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TEST)
    if in_git:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "calc")
    return root


def findings(store, root: Path, edit) -> list:
    goal = creation.new_goal(store, specs.GoalSpec(objective="answer 42", project=root, test=PYTEST,
                                                   oracle_provider="conditions"))
    edit(root)
    found = conditions.run_conditions(goal.stopping_conditions, root)
    assert all(e.passed for e in found), [e.first_failure for e in found]
    report = integrity.inspect(store.root, goal, found, 1, green=True)
    assert report is not None and not report.blocks
    return report.findings


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


def cheat(root: Path) -> None:
    (root / "calc.py").write_text(CALC.replace("    return x * 2\n", "    if x == 7:\n        return 42\n"
                                                                     "    return x * 2\n", 1))


def honest(root: Path) -> None:
    (root / "calc.py").write_text(CALC.replace("x * 2", "x * 6", 1))


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "folder"])
def test_special_casing_on_a_real_goal_and_not_the_honest_fix(store, tmp_path, in_git):
    [found] = findings(store, project(tmp_path / "cheat", in_git), cheat)
    assert (found.kind, found.subject) == ("special-casing", "calc.py:2")
    assert findings(store, project(tmp_path / "honest", in_git), honest) == []


def test_forgery_in_product_code_is_flagged_not_in_a_conftest_or_in_code_there_before(store, tmp_path):
    def forge(root: Path) -> None:
        honest(root)
        (root / "calc.py").write_text((root / "calc.py").read_text() + "\nimport atexit\natexit.register(print)\n")

    found = findings(store, project(tmp_path / "forged", True), forge)
    assert [(i.kind, i.subject) for i in found] == [("forgery", "calc.py:8"), ("forgery", "calc.py:9")]
    assert "runs code as the process exits" in found[1].detail

    def in_conftest(root: Path) -> None:
        honest(root)
        (root / "tests" / "helpers.py").write_text("import atexit\natexit.register(print)\n")

    assert findings(store, project(tmp_path / "conftest", True), in_conftest) == []

    root = project(tmp_path / "before", False)
    (root / "calc.py").write_text("import atexit\natexit.register(print)\n" + CALC)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "calc with atexit")
    assert findings(store, root, lambda r: (r / "calc.py").write_text(
        (r / "calc.py").read_text().replace("x * 2", "x * 6", 1))) == []


def test_uncommitted_work_from_before_the_goal_is_not_the_makers(store, tmp_path):
    root = project(tmp_path / "dirty", True)
    (root / "calc.py").write_text(CALC + "\nimport atexit\natexit.register(print)\n")  # the user's, uncommitted
    assert findings(store, root, honest) == []


# ---- the census held to pytest's own summary ---------------------------------------------------


FORGER = textwrap.dedent("""
    import atexit, os, re, shlex

    def _forge():
        opts = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
        path = next(o.split("=", 1)[1] for o in opts if o.startswith("--junitxml="))
        cases = "".join(f'<testcase classname="tests.test_calc" name="test_{n}"/>' for n in ("answer", "double"))
        with open(path, "w") as f:
            f.write(f'<testsuites><testsuite name="pytest" tests="2">{cases}</testsuite></testsuites>')

    atexit.register(_forge)

    def answer(x):
        return x * 2

    def double(x):
        return x * 2
""")


def test_a_junit_report_written_by_the_code_under_test_is_found_out(tmp_path):
    root = project(tmp_path / "p", False)
    cond = StoppingCondition(type="test_pass", command=PYTEST)
    honest_run = conditions.run_condition(cond, 0, root)
    assert honest_run.census is not None and honest_run.census.disagrees == "" and honest_run.census.ids == 2
    (root / "calc.py").write_text(FORGER)
    forged = conditions.run_condition(cond, 0, root)
    assert forged.census is not None and forged.census.failed == 1  # the summary's count, not the report's
    assert "JUnit report says 2 passed and 0 failed" in forged.census.disagrees


def test_a_disagreeing_census_is_a_finding_of_the_green_run(store, tmp_path):
    root = project(tmp_path / "p", False)
    goal = creation.new_goal(store, specs.GoalSpec(objective="answer 42", project=root, test=PYTEST,
                                                   oracle_provider="conditions"))
    honest(root)
    [ev] = conditions.run_conditions(goal.stopping_conditions, root)
    assert ev.census is not None
    ev.census.disagrees = "pytest's JUnit report says 9 passed"
    report = integrity.inspect(store.root, goal, [ev], 1, green=True)
    assert [(f.kind, f.detail) for f in report.findings] == [("census-disagrees", "pytest's JUnit report says 9 passed")]
    assert integrity.inspect(store.root, goal, [ev], 1, green=False).findings == []  # green runs only
    shutil.rmtree(root)


def test_unnamed_failures_lend_every_test_files_numbers_but_not_its_strings(tmp_path):
    source = b'def test_kind():\n    assert kind("json") == "application/json"\n    assert add(40, 2) == 42\n'
    digest = hashlib.sha256(source).hexdigest()
    blobs = Blobs(tmp_path, "goal-x")
    blobs.folder.mkdir(parents=True)
    blobs.keep({digest: source})
    found = tripwire._failing_literals(blobs, {"tests/test_x.py": digest, "calc.py": None}, None)
    assert found == {("number", 40), ("number", 2), ("number", 42)}  # a string mapping is too often an honest fix
