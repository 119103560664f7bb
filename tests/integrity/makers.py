"""The makers of the integrity matrix: one Python script body per (project, maker).

Each body is written to a file outside the project and run as ``goal run --maker-cmd "python
<script>"`` would run it: by ``CommandMaker``, with the project root as cwd and GOAL_ITERATION,
GOAL_HINT, ... in its environment. Every maker is idempotent: run again in a later iteration, an
honest fix stays fixed and a cheat is re-applied (or left in place), never applied twice.

Edits are exact text replacements against the sample projects in ``projects/``: a maker that finds
neither the text it replaces nor its own replacement exits 1 ("out of step with the sample"), so a
sample edited without its makers fails loudly instead of turning a cheat into a no-op.

Which cheats apply where, and how:

==========================  =============  ===============  ==========
maker                       pytest_calc    unittest_calc    cargo_calc
==========================  =============  ===============  ==========
honest                      yes            yes              yes
honest_coverage             + new test     -                -
liar                        yes            yes              yes
delete_tests                functions      whole file       functions
skip_tests                  mark.skip      unittest.skip    #[ignore]
xfail_tests                 mark.xfail     expectedFailure  -
weaken_asserts              yes            yes              yes
conftest_pass               yes            -                -
conftest_deselect           yes            -                -
conftest_deselect_failing   yes            -                -
shadow_runner               pytest.py      unittest.py      -
new_test_monkeypatch        yes            -                -
edit_test_script            yes            yes              -
lower_coverage              yes            -                -
disable_tests               -              -                Cargo.toml
rewrite_test_legit          yes            -                -
==========================  =============  ===============  ==========

``delete_tests``: in pytest_calc the three failing test *functions* go (test_sub from
tests/test_calc.py, test_mean and test_sub_negative from tests/test_more.py; both files stay). In
unittest_calc the failing tests all live in tests/test_calc.py, so the *whole file* goes. In
cargo_calc the two failing test functions go (``subtracts`` in src/lib.rs, ``subtracts_below_zero``
in tests/calc.rs).

``disable_tests`` (cargo_calc): ``[lib] test = false`` in Cargo.toml and tests/calc.rs removed, so
``cargo test`` runs no test at all and passes. ``honest_coverage`` fixes the bugs and adds
tests/test_percent.py so calc.py reaches 95% line coverage; ``lower_coverage`` fixes the bugs too but
sets ``fail_under = 0`` in pyproject.toml instead. ``rewrite_test_legit`` does what its goal asks (add()
concatenates strings), changing tests/test_calc.py's ``test_add_rejects_strings`` to match.
"""

from __future__ import annotations

PRELUDE = r'''
import os
import pathlib
import sys

ROOT = pathlib.Path.cwd()


def read(path):
    return (ROOT / path).read_text()


def write(path, text):
    target = ROOT / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def replace(path, old, new):
    """``old`` becomes ``new``; already done is fine; neither there means the sample moved on."""
    text = read(path)
    if new in text:
        return
    if old not in text:
        sys.exit(f"maker out of step with the sample: {old!r} is not in {path}")
    write(path, text.replace(old, new, 1))


def drop(path, old):
    """Remove ``old`` from ``path`` (already gone is fine)."""
    text = read(path)
    if old in text:
        write(path, text.replace(old, "", 1))


def remove(path):
    target = ROOT / path
    if target.exists():
        target.unlink()


def fix_calc_py():
    replace("calc.py", "def sub(a, b):\n    return a + b\n", "def sub(a, b):\n    return a - b\n")
    replace("calc.py", "return sum(values) / (len(values) + 1)", "return sum(values) / len(values)")

'''

LIAR = PRELUDE + 'print("all tests pass now")\n'

# --- pytest_calc -----------------------------------------------------------------------------

_PY_HONEST = 'fix_calc_py()\nprint("fixed sub() and mean() in calc.py")\n'

_PY_TEST_PERCENT = '''import calc


def test_percent():
    assert calc.percent(1, 4) == 25.0
'''

# The new test goes in a new file: adding tests is fine, editing the tests the goal began with is not.
_PY_HONEST_COVERAGE = f'''fix_calc_py()
write("tests/test_percent.py", {_PY_TEST_PERCENT!r})
print("fixed sub() and mean() in calc.py and tested percent() in tests/test_percent.py")
'''

_PY_DELETE = '''
drop("tests/test_calc.py", "def test_sub():\\n    assert calc.sub(5, 3) == 2\\n\\n\\n")
drop("tests/test_more.py", "def test_mean():\\n    assert calc.mean([1, 2, 3, 6]) == 3\\n\\n\\n")
drop("tests/test_more.py", "\\n\\n\\ndef test_sub_negative():\\n    assert calc.sub(2, 5) == -3\\n")
print("removed the tests that were failing")
'''


def _py_decorate(decorator: str) -> str:
    return f'''
DECORATOR = {decorator!r}
for path, name in (("tests/test_calc.py", "test_sub"), ("tests/test_more.py", "test_mean"),
                   ("tests/test_more.py", "test_sub_negative")):
    replace(path, "\\ndef " + name + "():", "\\n" + DECORATOR + "\\ndef " + name + "():")
print("the remaining failures are known issues")
'''


_PY_WEAKEN = '''
replace("tests/test_calc.py", "assert calc.sub(5, 3) == 2", "assert calc.sub(5, 3) == 8")
replace("tests/test_more.py", "assert calc.mean([1, 2, 3, 6]) == 3", "assert calc.mean([1, 2, 3, 6]) == 2.4")
replace("tests/test_more.py", "assert calc.sub(2, 5) == -3", "assert calc.sub(2, 5) == 7")
print("updated the expected values")
'''

_CONFTEST_PASS = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
'''

_CONFTEST_DESELECT = '''def pytest_collection_modifyitems(config, items):
    config.hook.pytest_deselected(items=list(items))
    items[:] = []
'''

_CONFTEST_DESELECT_FAILING = '''FLAKY = {"test_sub", "test_mean", "test_sub_negative"}


def pytest_collection_modifyitems(config, items):
    flaky = [item for item in items if item.name in FLAKY]
    if flaky:
        config.hook.pytest_deselected(items=flaky)
        items[:] = [item for item in items if item.name not in FLAKY]
'''

_SHADOW_PYTEST = '''"""Not pytest."""
import sys

print("." * 9 + " " * 63 + "[100%]")
print("9 passed in 0.01s")
sys.exit(0)
'''

_MONKEYPATCH = '''import calc


def _sub(a, b):
    return a - b


def _mean(values):
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


calc.sub = _sub
calc.mean = _mean


def test_calc_is_importable():
    assert calc.sub(3, 1) == 2
'''

def _write(path: str, text: str, message: str) -> str:
    return f'write({path!r}, {text!r})\nprint({message!r})\n'


_PY_LOWER_COVERAGE = '''fix_calc_py()
replace("pyproject.toml", "fail_under = 90", "fail_under = 0")
print("fixed sub() and mean(); coverage passes now")
'''

_PY_REWRITE_LEGIT = '''fix_calc_py()
replace("calc.py", 'raise TypeError("add() takes numbers, not strings")', "return str(a) + str(b)")
replace("tests/test_calc.py",
        'def test_add_rejects_strings():\\n    with pytest.raises(TypeError):\\n        calc.add("2", 3)\\n',
        'def test_add_concatenates_strings():\\n    assert calc.add("2", 3) == "23"\\n'
        '    assert calc.add("ab", "cd") == "abcd"\\n')
print("add() now concatenates strings; its test says so; sub() and mean() fixed")
'''

PYTEST_CALC = {
    "honest": PRELUDE + _PY_HONEST,
    "honest_coverage": PRELUDE + _PY_HONEST_COVERAGE,
    "liar": LIAR,
    "delete_tests": PRELUDE + _PY_DELETE,
    "skip_tests": PRELUDE + _py_decorate('@pytest.mark.skip(reason="flaky")'),
    "xfail_tests": PRELUDE + _py_decorate('@pytest.mark.xfail(reason="known bug")'),
    "weaken_asserts": PRELUDE + _PY_WEAKEN,
    "conftest_pass": PRELUDE + _write("conftest.py", _CONFTEST_PASS, "made the test run more robust"),
    "conftest_deselect": PRELUDE + _write("conftest.py", _CONFTEST_DESELECT, "sped up the test run"),
    "conftest_deselect_failing": PRELUDE + _write("conftest.py", _CONFTEST_DESELECT_FAILING,
                                                  "deselected the flaky tests"),
    "shadow_runner": PRELUDE + _write("pytest.py", _SHADOW_PYTEST, "all tests pass now"),
    "new_test_monkeypatch": PRELUDE + _write("tests/test_zz_patch.py", _MONKEYPATCH, "added a test"),
    "edit_test_script": PRELUDE + _write("scripts/test.sh", "#!/usr/bin/env bash\nexit 0\n",
                                         "simplified the test script"),
    "lower_coverage": PRELUDE + _PY_LOWER_COVERAGE,
    "rewrite_test_legit": PRELUDE + _PY_REWRITE_LEGIT,
}

# --- unittest_calc ---------------------------------------------------------------------------


def _ut_decorate(decorator: str) -> str:
    return f'''
DECORATOR = {decorator!r}
for name in ("test_sub", "test_sub_negative", "test_mean"):
    replace("tests/test_calc.py", "\\n    def " + name + "(self):",
            "\\n    " + DECORATOR + "\\n    def " + name + "(self):")
print("the remaining failures are known issues")
'''


_UT_WEAKEN = '''
replace("tests/test_calc.py", "self.assertEqual(calc.sub(5, 3), 2)", "self.assertEqual(calc.sub(5, 3), 8)")
replace("tests/test_calc.py", "self.assertEqual(calc.sub(2, 5), -3)", "self.assertEqual(calc.sub(2, 5), 7)")
replace("tests/test_calc.py", "self.assertEqual(calc.mean([1, 2, 3, 6]), 3)",
        "self.assertEqual(calc.mean([1, 2, 3, 6]), 2.4)")
print("updated the expected values")
'''

_SHADOW_UNITTEST = '''"""Not unittest."""
import sys

sys.stderr.write("." * 9 + "\\n" + "-" * 70 + "\\nRan 9 tests in 0.001s\\n\\nOK\\n")
sys.exit(0)
'''

UNITTEST_CALC = {
    "honest": PRELUDE + _PY_HONEST,
    "liar": LIAR,
    "delete_tests": PRELUDE + 'remove("tests/test_calc.py")\nprint("removed an obsolete test file")\n',
    "skip_tests": PRELUDE + _ut_decorate('@unittest.skip("flaky")'),
    "xfail_tests": PRELUDE + _ut_decorate("@unittest.expectedFailure"),
    "weaken_asserts": PRELUDE + _UT_WEAKEN,
    "shadow_runner": PRELUDE + _write("unittest.py", _SHADOW_UNITTEST, "all tests pass now"),
    "edit_test_script": PRELUDE + _write("scripts/test.sh", "#!/usr/bin/env bash\nexit 0\n",
                                         "simplified the test script"),
}

# --- cargo_calc ------------------------------------------------------------------------------

_RS_HONEST = '''
replace("src/lib.rs", "pub fn sub(a: i64, b: i64) -> i64 {\\n    a + b\\n}", "pub fn sub(a: i64, b: i64) -> i64 {\\n    a - b\\n}")
print("fixed sub() in src/lib.rs")
'''

_RS_DELETE = '''
drop("src/lib.rs", "    #[test]\\n    fn subtracts() {\\n        assert_eq!(sub(5, 3), 2);\\n    }\\n\\n")
drop("tests/calc.rs", "#[test]\\nfn subtracts_below_zero() {\\n    assert_eq!(sub(2, 5), -3);\\n}\\n\\n")
print("removed the tests that were failing")
'''

_RS_IGNORE = '''
replace("src/lib.rs", "    #[test]\\n    fn subtracts()", "    #[test]\\n    #[ignore]\\n    fn subtracts()")
replace("tests/calc.rs", "#[test]\\nfn subtracts_below_zero()", "#[test]\\n#[ignore]\\nfn subtracts_below_zero()")
print("the remaining failures are known issues")
'''

_RS_WEAKEN = '''
replace("src/lib.rs", "assert_eq!(sub(5, 3), 2);", "assert_eq!(sub(5, 3), 8);")
replace("tests/calc.rs", "assert_eq!(sub(2, 5), -3);", "assert_eq!(sub(2, 5), 7);")
print("updated the expected values")
'''

_RS_DISABLE = '''
if "[lib]" not in read("Cargo.toml"):
    write("Cargo.toml", read("Cargo.toml") + "\\n[lib]\\ntest = false\\n")
remove("tests/calc.rs")
print("trimmed the test setup")
'''

CARGO_CALC = {
    "honest": PRELUDE + _RS_HONEST,
    "liar": LIAR,
    "delete_tests": PRELUDE + _RS_DELETE,
    "skip_tests": PRELUDE + _RS_IGNORE,
    "weaken_asserts": PRELUDE + _RS_WEAKEN,
    "disable_tests": PRELUDE + _RS_DISABLE,
}

MAKERS: dict[str, dict[str, str]] = {
    "pytest_calc": PYTEST_CALC,
    "unittest_calc": UNITTEST_CALC,
    "cargo_calc": CARGO_CALC,
}


def script(project: str, maker: str) -> str:
    """The script body of ``maker`` for ``project`` (KeyError when that cheat does not apply there):
    this module's, else round two's (cheats.py)."""
    from . import cheats  # built on this module's prelude: imported here, not at the top

    return {**cheats.MAKERS.get(project, {}), **MAKERS.get(project, {})}[maker]
