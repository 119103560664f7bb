"""The test census: real pytest, unittest and cargo runs through the condition runner, the sample
outputs of the other runners, JUnit XML, and the streaming contract (blocks of whole lines)."""

from __future__ import annotations

import os
import random
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.checks import census as census_mod
from goal_convergence.checks.census import CensusScanner, collect, normalise_id, read_junit, runner_env
from goal_convergence.checks.conditions import run_condition, run_conditions
from goal_convergence.models import Census, StoppingCondition
from goal_convergence.system.process import run_command

SAMPLES = Path(__file__).parents[1] / "samples"
PY = shlex.quote(sys.executable)
PYTEST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PY} -m pytest -p no:cacheprovider"
# Read before conftest points HOME at a temp folder: rustup finds its toolchains here (read only).
RUSTUP_HOME = os.environ.get("RUSTUP_HOME") or str(Path.home() / ".rustup")


@pytest.fixture(autouse=True)
def no_addopts(monkeypatch):
    """A --junitxml in the PYTEST_ADDOPTS these tests run under would keep the conditions' own out."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def run(root: Path, command: str) -> Census | None:
    return run_condition(StoppingCondition(type="test_pass", command=command), 0, root).census


def scan(data: bytes, *cuts: int) -> Census | None:
    """The census of ``data`` read in pieces cut at ``cuts``, as a pipe may deliver it."""
    scanner = CensusScanner()
    for start, end in zip((0, *cuts), (*cuts, len(data)), strict=True):
        scanner.feed(data[start:end])
    scanner.close()
    return scanner.result()


def summary(c: Census | None) -> tuple:
    assert c is not None
    return c.runner, c.ran, c.passed, c.failed, c.skipped, c.xfailed, c.deselected, c.ids


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


# ---- pytest, for real -----------------------------------------------------------------------

PYTEST_PROJECT = {
    "pytest.ini": "[pytest]\nmarkers =\n    slow: a slow one\n",
    "tests/test_shop.py": """
        import pytest

        def test_ok():
            pass

        def test_bad():
            assert 1 + 1 == 3

        @pytest.mark.skip(reason="not today")
        def test_later():
            pass

        @pytest.mark.xfail(reason="known bug")
        def test_known():
            assert False

        # An id with an object's address in it differs from run to run.
        @pytest.mark.parametrize("n", [1, 2, pytest.param(3, id=repr(object()))])
        def test_param(n):
            assert n

        class TestGroup:
            def test_method(self):
                pass

        @pytest.mark.slow
        def test_slow():
            pass
    """,
}
SHOP = {
    "tests.test_shop::test_ok": "passed",
    "tests.test_shop::test_bad": "failed",
    "tests.test_shop::test_later": "skipped",
    "tests.test_shop::test_known": "xfailed",
    "tests.test_shop::test_param[1]": "passed",
    "tests.test_shop::test_param[2]": "passed",
    "tests.test_shop::test_param[<object object at 0x?>]": "passed",
    "tests.test_shop.TestGroup::test_method": "passed",
    "tests.test_shop::test_slow": "passed",
}


@pytest.fixture
def shop(tmp_path) -> Path:
    return write(tmp_path, PYTEST_PROJECT)


def test_pytest_census_comes_from_its_junit_xml(shop):
    c = run(shop, f"{PYTEST} -q")
    assert summary(c) == ("pytest", 7, 6, 1, 1, 1, 0, 9)
    assert c.outcomes == SHOP


def test_pytest_deselected_tests_are_counted_and_not_named(shop):
    c = run(shop, f"{PYTEST} -q -k 'not slow'")
    assert summary(c) == ("pytest", 6, 5, 1, 1, 1, 1, 8)
    assert c.outcomes == {k: v for k, v in SHOP.items() if not k.endswith("test_slow")}


def test_the_users_own_junitxml_wins_and_the_verbose_output_gives_the_same_census(shop):
    c = run(shop, f"{PYTEST} -v --junitxml=mine.xml")
    assert (shop / "mine.xml").is_file()
    assert summary(c) == ("pytest", 7, 6, 1, 1, 1, 0, 9)
    assert c.outcomes == SHOP


def test_pytest_short_summaries_name_what_they_name_and_partial_lists_are_dropped(shop):
    c = run(shop, f"{PYTEST} -rA --junitxml=mine.xml")
    assert summary(c) == ("pytest", 7, 6, 1, 1, 1, 0, 8)  # -rA names skips by place, not by id
    assert c.outcomes == {k: v for k, v in SHOP.items() if v != "skipped"}
    # The default summary names only the failures: counts, but no ids, even when every test failed.
    assert summary(run(shop, f"{PYTEST} -q --junitxml=mine.xml")) == ("pytest", 7, 6, 1, 1, 1, 0, 0)
    assert summary(scan(b"FAILED t.py::test_a - boom\nFAILED t.py::test_b\n2 failed in 0.1s\n")) == (
        "pytest", 2, 0, 2, 0, 0, 0, 0)


def test_two_pytest_sessions_in_one_command_are_summed_from_the_output(tmp_path):
    write(tmp_path, {"test_a.py": "def test_a():\n    pass\n", "test_b.py": "def test_b():\n    pass\n"})
    c = run(tmp_path, f"{PYTEST} -v test_a.py && {PYTEST} -v test_b.py")
    assert summary(c) == ("pytest", 2, 2, 0, 0, 0, 0, 2)
    assert c.outcomes == {"test_a::test_a": "passed", "test_b::test_b": "passed"}


def test_a_test_erring_in_teardown_is_one_failed_id(tmp_path):
    write(tmp_path, {"test_td.py": """
        import pytest

        @pytest.fixture
        def leaky():
            yield
            raise RuntimeError("teardown")

        def test_td(leaky):
            pass

        @pytest.mark.xfail
        def test_lucky():
            pass
    """})
    from_xml = run(tmp_path, f"{PYTEST} -q")
    assert from_xml.outcomes == {"test_td::test_td": "failed", "test_td::test_lucky": "passed"}  # JUnit has no xpass
    from_output = run(tmp_path, f"{PYTEST} -v --junitxml=mine.xml")
    assert summary(from_output) == ("pytest", 3, 1, 1, 0, 0, 0, 2)  # pytest says 1 passed, 1 error, 1 xpassed
    assert from_output.outcomes == {"test_td::test_td": "failed", "test_td::test_lucky": "xpassed"}


def test_no_tests_and_no_test_runner(tmp_path):
    assert summary(run(tmp_path, f"{PYTEST} -q")) == ("pytest", 0, 0, 0, 0, 0, 0, 0)
    assert run(tmp_path, "echo hello; echo all done") is None


# ---- unittest and cargo, for real -----------------------------------------------------------

UNITTEST_PROJECT = {"test_calc.py": """
    import unittest

    class CalcTest(unittest.TestCase):
        def test_add(self):
            self.assertEqual(1 + 1, 2)

        def test_wrong(self):
            self.assertEqual(1 + 1, 3)

        def test_broken(self):
            raise RuntimeError("boom")

        @unittest.skip("later")
        def test_later(self):
            pass

        @unittest.expectedFailure
        def test_known(self):
            self.assertEqual(1, 2)

        @unittest.expectedFailure
        def test_lucky(self):
            pass
"""}


def test_unittest_counts_and_verbose_ids(tmp_path):
    write(tmp_path, UNITTEST_PROJECT)
    c = run(tmp_path, f"{PY} -m unittest -v test_calc")
    assert summary(c) == ("unittest", 4, 1, 2, 1, 1, None, 6)
    assert c.outcomes == {"test_calc.CalcTest.test_add": "passed", "test_calc.CalcTest.test_wrong": "failed",
                          "test_calc.CalcTest.test_broken": "failed", "test_calc.CalcTest.test_later": "skipped",
                          "test_calc.CalcTest.test_known": "xfailed", "test_calc.CalcTest.test_lucky": "xpassed"}
    assert summary(run(tmp_path, f"{PY} -m unittest test_calc")) == ("unittest", 4, 1, 2, 1, 1, None, 0)


def test_unittest_older_verbose_form_and_a_passing_run():
    out = b"test_add (test_calc.CalcTest) ... ok\ntest_sub (test_calc.CalcTest) ... ok\n\n" + b"-" * 70 + (
        b"\nRan 2 tests in 0.001s\n\nOK\n")
    c = scan(out)
    assert summary(c) == ("unittest", 2, 2, 0, 0, 0, None, 2)
    assert c.outcomes == {"test_calc.CalcTest.test_add": "passed", "test_calc.CalcTest.test_sub": "passed"}
    assert summary(scan(b"Ran 3 tests in 0.01s\n\nOK (skipped=1, expected failures=1)\n")) == (
        "unittest", 1, 1, 0, 1, 1, None, 0)


@pytest.mark.skipif(not shutil.which("cargo"), reason="cargo is not installed")
def test_cargo_test_sums_its_binaries_and_keeps_same_named_tests_apart(tmp_path):
    crate = write(tmp_path / "shop", {
        "Cargo.toml": '[package]\nname = "shop"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\ndoctest = false\n',
        "src/lib.rs": """
            pub fn add(a: i32, b: i32) -> i32 { a + b }

            #[cfg(test)]
            mod tests {
                use super::*;
                #[test] fn adds() { assert_eq!(add(1, 2), 3); }
                #[test] fn adds_wrong() { assert_eq!(add(1, 2), 4); }
                #[test] #[ignore] fn slow() {}
                #[test] fn same_name() {}
            }
        """,
        "tests/it.rs": "#[test] fn same_name() { assert_eq!(shop::add(2, 2), 4); }\n#[test] fn other() {}\n",
    })
    env = f"RUSTUP_HOME={shlex.quote(RUSTUP_HOME)} CARGO_HOME={tmp_path}/cargo CARGO_TARGET_DIR={tmp_path}/target"
    c = run(crate, f"{env} cargo test --offline --no-fail-fast -- --skip other")
    assert summary(c) == ("cargo", 4, 3, 1, 1, None, 1, 5)
    assert c.outcomes == {"src/lib.rs (shop)::tests::adds": "passed", "src/lib.rs (shop)::tests::adds_wrong": "failed",
                          "src/lib.rs (shop)::tests::slow": "skipped", "src/lib.rs (shop)::tests::same_name": "passed",
                          "tests/it.rs (it)::same_name": "passed"}


# ---- the other runners, from their output ---------------------------------------------------

@pytest.mark.parametrize(("sample", "expected", "ids"), [
    ("pytest_fail.txt", ("pytest", 6, 2, 4, 0, 0, 0, 0), {}),  # the short summary names only failures
    ("unittest_fail.txt", ("unittest", 4, 2, 2, 0, 0, None, 0), {}),
    ("jest_fail.txt", ("jest", 4, 2, 2, 0, None, None, 4), {
        "src/cart.test.js › cart › total sums price times qty": "passed",
        "src/cart.test.js › cart › discount takes ten percent off": "failed",
        "src/cart.test.js › cart › discount rejects more than 100": "passed",
        "src/cart.test.js › cart › total of an empty cart": "failed"}),
    # vitest's default reporter names the tests of failing files only: a list that would shrink as they pass.
    ("vitest_fail.txt", ("vitest", 3, 1, 2, 0, None, None, 0), {}),
    ("go_test_fail.txt", ("go", None, None, None, None, None, None, 0), {}),  # without -v: failures only
    ("cargo_test_fail.txt", ("cargo", 3, 1, 2, 0, None, 0, 3), {
        "src/lib.rs (mathlib)::tests::it_adds": "passed", "src/lib.rs (mathlib)::tests::it_parses": "failed",
        "src/lib.rs (mathlib)::tests::it_adds_wrong": "failed"}),
])
def test_sample_outputs(sample, expected, ids):
    c = scan((SAMPLES / sample).read_bytes())
    assert summary(c) == expected
    assert c.outcomes == ids


JEST_VERBOSE = """\
PASS src/a.test.js
  cart
    ✓ adds (3 ms)
    nested
      ✓ deep one
    ○ skipped later
  ✓ top level (1 ms)
  ✎ todo write me
FAIL src/b.test.js (5.1 s)
  cart
    ✕ adds (2 ms)
    ✓ removes

  ● cart › adds

    expect(received).toBe(expected) // Object.is equality

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 1 skipped, 1 todo, 4 passed, 7 total
Snapshots:   0 total
Time:        0.5 s
"""
VITEST_VERBOSE = """\

 RUN  v3.2.7 /home/dev/shop

 ✓ src/a.test.js > cart > adds 1ms
 ✓ src/a.test.js:12:3 > cart > removes 0ms
 ↓ src/a.test.js > cart > later
 × src/b.test.js > cart > adds 3ms
   → expected 3 to be 4

 Test Files  1 failed | 1 passed (2)
      Tests  1 failed | 2 passed | 1 skipped (4)
   Start at  10:00:00
   Duration  300ms
"""
GO_VERBOSE = """\
=== RUN   TestTotal
--- PASS: TestTotal (0.00s)
=== RUN   TestDiscount
=== RUN   TestDiscount/ten_percent
    cart_test.go:31: Discount(100, 10) = 91, want 90
=== RUN   TestDiscount/zero
--- FAIL: TestDiscount (0.00s)
    --- FAIL: TestDiscount/ten_percent (0.00s)
    --- PASS: TestDiscount/zero (0.00s)
=== RUN   TestSlow
    cart_test.go:40: needs the network
--- SKIP: TestSlow (0.00s)
FAIL
FAIL\texample.com/shop/cart\t0.004s
=== RUN   TestTotal
--- PASS: TestTotal (0.00s)
PASS
ok  \texample.com/shop/pricing\t0.003s
"""


def test_jest_verbose_ids_carry_the_file_and_describe_blocks():
    c = scan(JEST_VERBOSE.encode())
    assert summary(c) == ("jest", 5, 4, 1, 2, None, None, 7)
    assert c.outcomes == {
        "src/a.test.js › cart › adds": "passed", "src/a.test.js › cart › nested › deep one": "passed",
        "src/a.test.js › cart › later": "skipped", "src/a.test.js › top level": "passed",
        "src/a.test.js › write me": "skipped", "src/b.test.js › cart › adds": "failed",
        "src/b.test.js › cart › removes": "passed"}


def test_vitest_verbose():
    c = scan(VITEST_VERBOSE.encode())
    assert summary(c) == ("vitest", 3, 2, 1, 1, None, None, 4)
    assert c.outcomes == {"src/a.test.js > cart > adds": "passed", "src/a.test.js > cart > removes": "passed",
                          "src/a.test.js > cart > later": "skipped", "src/b.test.js > cart > adds": "failed"}


def test_go_verbose_ids_are_prefixed_by_their_package():
    c = scan(GO_VERBOSE.encode())
    assert summary(c) == ("go", 5, 3, 2, 1, None, None, 6)
    assert c.outcomes == {
        "example.com/shop/cart.TestTotal": "passed", "example.com/shop/cart.TestDiscount": "failed",
        "example.com/shop/cart.TestDiscount/ten_percent": "failed", "example.com/shop/cart.TestDiscount/zero": "passed",
        "example.com/shop/cart.TestSlow": "skipped", "example.com/shop/pricing.TestTotal": "passed"}
    # Without -v, go prints only its package lines: the runner is known, its counts are not.
    assert summary(scan(b"ok  \texample.com/shop/pricing\t0.003s\n?   \texample.com/shop/cmd\t[no test files]\n")) == (
        "go", None, None, None, None, None, None, 0)


def test_pytest_summary_lines():
    line = b"= 3 failed, 10 passed, 1 skipped, 2 deselected, 1 xfailed, 1 xpassed, 2 warnings, 1 error in 0.12s ="
    assert summary(scan(line)) == ("pytest", 15, 10, 4, 1, 1, 2, 0)
    assert summary(scan(b"5 deselected in 0.01s\n")) == ("pytest", 0, 0, 0, 0, 0, 5, 0)
    assert summary(scan(b"============ no tests ran in 0.01s ============\n")) == ("pytest", 0, 0, 0, 0, 0, 0, 0)
    # Two sessions in one output, the second's summary without a trailing newline.
    assert summary(scan(b"1 passed in 0.01s\n== 2 passed, 1 failed in 65.2s (0:01:05) ==")) == (
        "pytest", 4, 3, 1, 0, 0, 0, 0)
    assert scan(b"Found 3 errors in 2 files\nadded 12 packages in 2s\n") is None
    # A script's own FAILED line, with no runner's summary: nothing counted, nothing named in full.
    assert scan(b"FAILED tests/test_a.py::test_a - AssertionError: 1 != 2\n") is None


def test_a_bracket_in_a_test_path_or_a_colon_pair_in_a_parameter_keeps_the_id_whole():
    lines = b"t/x[1]/a.py::T::t PASSED\nb.py::t[a::b] FAILED\n1 passed, 1 failed in 0.1s\n"
    assert scan(lines).outcomes == {"t.x[1].a.T::t": "passed", "b::t[a::b]": "failed"}


def test_ids_are_normalised():
    assert normalise_id(" t.py::test_x[<Foo at 0x7f3a9c2d1e80>] ") == "t.py::test_x[<Foo at 0x?>]"
    out = b"tests/test_x.py::test_p[<object object at 0x7f3a9c2d1e80>] PASSED  [100%]\n1 passed in 0.01s\n"
    assert scan(out).outcomes == {"tests.test_x::test_p[<object object at 0x?>]": "passed"}


# The pieces of verbose pytest lines and of lines that only look like them: spaces, tabs and outcome words inside
# ids, "<-" places, colons, a summary's words, non-ASCII whitespace.
_PIECES = ["t.py", "::", ":", "x", "T", "[", "]", "a b", " ", "  ", "\t", "\u00a0", "\n", " <- ", "base.py", "=",
           "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS", "XFAILED", "passed", "1 passed in 0.1s", "(0:01)",
           "[ 50%]", "(reason)", "é", "-"]
_OUTCOMES = ["PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS", "SKIP", "passed"]


def _pieces(most: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_PIECES), max_size=most).map("".join)


def _taken_fast(line: str) -> bool:
    """Whether the fast rule takes ``line``; when it does, the alternation takes it as the same pytest line."""
    if quick := census_mod._PYTEST_VERBOSE.fullmatch(line):
        whole = census_mod._LINE.fullmatch(line)
        assert whole is not None and whole.lastgroup == "pyv"
        assert (quick["pv"], quick["pvo"]) == (whole["pv"], whole["pvo"])
    return quick is not None


@pytest.mark.parametrize("line, fast", [
    ("tests/test_m.py::TestB::test_b_00003[case-3] FAILED          [  0%]", True),
    ("t.py::test_x PASSED", True),
    ("t.py::test_x SKIPPED (no db) [ 50%]", True),
    ("t.py::test_x PASSED FAILED", True),  # the first word after the id is its outcome
    ("1::x PASSED", True),
    ("t.py::test_x[a b] PASSED [ 50%]", False),  # a space in the id: the alternation's lazy id only
    ("t.py::test_x[a FAILED b] PASSED", True),  # as the lazy id: up to the first outcome word
    ("t.py::test_x <- base.py PASSED [ 50%]", False),
    ("t.py::test_x\tPASSED", False),
    ("t.py::test_x PASSEDX", False),
    ("t.py::test_x SKIP", False),
    ("t.py:: PASSED", False),
    ("a:b::x PASSED", False),
    (" t.py::test_x PASSED", False),
])
def test_the_fast_rule_for_verbose_pytest_lines_reads_them_as_the_alternation_does(line, fast):
    assert _taken_fast(line) == fast


@settings(max_examples=1000, deadline=None)
@given(line=st.one_of(
    st.builds(lambda path, name, outcome, rest: f"{path}::{name} {outcome}{rest}",
              st.sampled_from(["t.py", "x", "a:b", ":", "", " t.py", "\tt.py", "1 passed in 0.1s", "é"]),
              st.sampled_from(["x", "C::x", "x[a b]", "x[a", "x[", "x <- b.py", ":x", "é", "x\tPASSED"]) | _pieces(3),
              st.sampled_from(_OUTCOMES),
              st.sampled_from(["", " [ 50%]", " (why)", "X", "\t", " PASSED"]) | _pieces(3)),
    _pieces(12), st.text(max_size=40)))
def test_any_line_the_fast_rule_takes_is_the_same_verbose_pytest_line_to_the_alternation(line):
    _taken_fast(line)


# ---- streaming ----------------------------------------------------------------------------

FILLER = "".join(f"build step {i}: compiling module_{i}.o with flags -O2 -g\n" for i in range(6))


@pytest.mark.parametrize("output", [
    FILLER + "tests/test_x.py::test_a PASSED [ 50%]\n" + FILLER + "tests/test_x.py::test_b SKIPPED (later) [100%]\n"
    + FILLER + "==== 1 passed, 1 skipped in 0.02s ====\n",
    FILLER + "test_add (t.T.test_add) ... ok\ntest_sub (t.T.test_sub) ... FAIL\n" + FILLER
    + "Ran 2 tests in 0.001s\n\nFAILED (failures=1)\n" + FILLER,
    "...\n" + FILLER + "Ran 3 tests in 0.001s\n\nOK\n" + FILLER,  # "OK" has no hint of its own
    "   Compiling mathlib v0.1.0 (/home/dev/mathlib)\n" + FILLER
    + "     Running unittests src/lib.rs (target/debug/deps/mathlib-8427ad7e7eefd4f3)\n\nrunning 2 tests\n"
    "test tests::it_adds ... ok\ntest tests::it_parses ... FAILED\n\nfailures:\n\n---- tests::it_parses stdout ----\n"
    + FILLER + "\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.13s\n\n"
    "error: test failed, to rerun pass `--lib`\n" + FILLER
    + "     Running tests/it.rs (target/debug/deps/it-0123456789abcdef)\n\nrunning 1 test\ntest it_adds ... ok\n\n"
    "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n"
    "   Doc-tests mathlib\n\nrunning 1 test\ntest src/lib.rs - add (line 3) ... ok\n\n"
    "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n",
    FILLER + GO_VERBOSE,
    FILLER + JEST_VERBOSE.replace("  cart\n", "  cart\n" + FILLER),
    VITEST_VERBOSE + FILLER,
], ids=["pytest", "unittest", "unittest-ok", "cargo", "go", "jest", "vitest"])
def test_the_census_is_the_same_wherever_the_output_is_cut(output):
    data = output.encode()
    whole = scan(data)
    assert whole is not None and whole.ran
    for cut in range(1, len(data)):
        c = scan(data, cut)
        assert (c, c.outcomes) == (whole, whole.outcomes), f"cut at {cut}: {data[:cut][-40:]!r}"
    # And a line a read, so that reads holding only lines without hints come between the others; a byte a
    # read; and random pieces.
    c = scan(data, *(i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n")))
    assert (c, c.outcomes) == (whole, whole.outcomes)
    c = scan(data, *range(1, len(data)))
    assert (c, c.outcomes) == (whole, whole.outcomes)
    rng = random.Random(11)
    for _ in range(100):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(2, 40))))
        c = scan(data, *cuts)
        assert (c, c.outcomes) == (whole, whole.outcomes), cuts


def test_the_last_line_counts_without_its_newline():
    assert summary(scan(b"collected 1 item\n\n==== 1 passed in 0.01s ====")) == (
        "pytest", 1, 1, 0, 0, 0, 0, 0)


def test_blocks_without_hints_are_not_split_into_lines(monkeypatch):
    seen: list[bytes] = []
    real = census_mod.decode_line
    monkeypatch.setattr(census_mod, "decode_line", lambda raw: (seen.append(raw), real(raw))[1])
    scanner = CensusScanner()
    ordinary = b"2024-01-01 12:00:00 INFO request served in 3 ms from cache, 200 OK\n" * 15_000
    for _ in range(20):
        scanner.feed(ordinary)
    assert seen == [] and scanner.result() is None
    # A flood of one verbose test line is read once, not once a line.
    flood = b"tests/test_m.py::test_case[7] PASSED          [ 42%]\n" * 20_000
    for _ in range(20):
        scanner.feed(flood)
    assert len(seen) <= 2
    assert scanner.result().outcomes == {"tests.test_m::test_case[7]": "passed"}


# ---- JUnit XML ----------------------------------------------------------------------------

def test_read_junit_xunit1_xunit2_and_a_bare_testsuite(tmp_path):
    cases = """
        <testcase classname="tests.test_a" name="test_ok" time="0.001"/>
        <testcase classname="tests.test_a" name="test_bad"><failure message="boom">trace</failure></testcase>
        <testcase classname="tests.test_a" name="test_err"><error message="setup">trace</error></testcase>
        <testcase classname="tests.test_a" name="test_skip"><skipped type="pytest.skip" message="no"/></testcase>
        <testcase classname="tests.test_a" name="test_xf"><skipped type="pytest.xfail" message=""/></testcase>
        <testcase classname="tests.test_a" name="test_strict">
            <skipped message="xfail-marked test passes unexpectedly"/></testcase>
        <testcase classname="tests.test_a.TestK" name="test_m[&lt;A at 0x7f00ab&gt;]"><system-out>hi</system-out>
            <properties><property name="k" value="v"/></properties></testcase>
        <testcase classname="tests.test_a" name="test_td"><failure message="call"/></testcase>
        <testcase classname="tests.test_a" name="test_td"><error message="teardown"/></testcase>
        <testcase classname="" name="tests.test_broken"><error message="collection failure"/></testcase>
    """
    expected = {"tests.test_a::test_ok": "passed", "tests.test_a::test_bad": "failed",
                "tests.test_a::test_err": "failed", "tests.test_a::test_skip": "skipped",
                "tests.test_a::test_xf": "xfailed", "tests.test_a::test_strict": "failed",
                "tests.test_a.TestK::test_m[<A at 0x?>]": "passed", "tests.test_a::test_td": "failed"}
    # tests.test_broken is pytest's stand-in for a module it could not import: no test of its own
    for doc in (f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{cases}</testsuite>'
                "</testsuites>", f'<testsuite name="pytest" tests="10">{cases}</testsuite>'):
        (tmp_path / "j.xml").write_text(doc)
        c = read_junit(tmp_path / "j.xml")
        assert summary(c) == ("pytest", 6, 2, 4, 1, 1, None, 8)
        assert c.outcomes == expected


@pytest.mark.parametrize("content", [
    b"",
    b"\x00\xff\xfe garbage \x89PNG",
    b"<testsuites><testsuite><testcase classname='a' name='b'>",  # cut short
    b"<html><body><testcase classname='a' name='b'/></body></html>",
    b'<?xml version="1.0" encoding="no-such-codec"?><testsuites/>',
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;">'
    b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><testsuites><testcase classname="a" name="&lol3;"/>'
    b"</testsuites>",
    b'<!DOCTYPE t [<!ENTITY e SYSTEM "file:///etc/passwd">]><testsuites><testcase classname="&e;" name="x"/>'
    b"</testsuites>",
    b" " * 70_000 + b'<!DOCTYPE t [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">'
    b'<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">'
    b'<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>'
    b'<testsuites><testcase classname="a" name="&h;"/></testsuites>',
    b"<testsuites>" + b"<testsuite>" * 50 + b"</testsuite>" * 50 + b"</testsuites>",
], ids=["empty", "binary", "truncated", "not-junit", "bad-encoding", "entities", "external-entity", "late-dtd",
        "deep"])
def test_a_hostile_or_garbled_junit_file_is_no_census(tmp_path, content):
    (tmp_path / "pytest-junit.xml").write_bytes(content)
    assert read_junit(tmp_path / "pytest-junit.xml") is None
    scanner = CensusScanner()
    scanner.feed(b"tests/test_a.py::test_a PASSED\n1 passed in 0.01s\n")
    assert summary(collect(scanner, tmp_path)) == ("pytest", 1, 1, 0, 0, 0, 0, 1)  # the output's, then


def test_read_junit_of_nothing(tmp_path):
    assert read_junit(tmp_path / "missing.xml") is None
    assert read_junit(tmp_path) is None  # a folder


def test_runner_env_asks_pytest_for_junit_xml_and_keeps_the_users_options(tmp_path):
    base = {"PATH": "/bin", "PYTEST_ADDOPTS": "-x --tb=short"}
    env = runner_env(base, tmp_path / "a folder")
    assert base["PYTEST_ADDOPTS"] == "-x --tb=short" and env["PATH"] == "/bin"
    ours = f"--junitxml={tmp_path}/a folder/pytest-junit.xml"
    assert shlex.split(env["PYTEST_ADDOPTS"]) == ["-x", "--tb=short", ours]
    assert runner_env({}, tmp_path)["PYTEST_ADDOPTS"] == f"--junitxml={tmp_path}/pytest-junit.xml"
    assert runner_env({"PYTEST_ADDOPTS": "--junitxml=ci.xml"}, tmp_path) == {"PYTEST_ADDOPTS": "--junitxml=ci.xml"}


def test_conditions_get_a_private_junit_folder_removed_afterwards_and_makers_commands_do_not(tmp_path):
    e = run_condition(StoppingCondition(type="test_pass", command="echo $PYTEST_ADDOPTS"), 0, tmp_path)
    path = Path(shlex.split(e.output_head)[0].removeprefix("--junitxml="))
    assert path.suffix == ".xml" and len(path.stem) == 32 and not path.parent.exists()  # unguessable, and gone
    assert "census" not in str(path.parent) and "goal" not in path.parent.name
    assert e.census is None
    assert run_command("echo ${PYTEST_ADDOPTS:-unset}", tmp_path).head == "unset\n"
    # An environment of the caller's own still gets the JUnit request.
    [e] = run_conditions([StoppingCondition(type="test_pass", command="echo $WHO $PYTEST_ADDOPTS")], tmp_path,
                         env={"PATH": os.environ["PATH"], "WHO": "pristine"})
    assert e.output_head.startswith("pristine --junitxml=")


def test_only_the_lines_holding_a_key_are_read_in_blocks_full_of_hint_words(monkeypatch):
    # Logs that say "failed", "error" and "skipped" in passing, a warning every 50 lines, a test line
    # now and then: the old scanner read every line of any block holding a hint word.
    seen: list[bytes] = []
    real = census_mod.decode_line
    monkeypatch.setattr(census_mod, "decode_line", lambda raw: (seen.append(raw), real(raw))[1])
    logs = [f"2026-11-30 10:00:{i % 60:02d} INFO job {i} finished: 0 failed, {i} done, 2 skipped after error"
            if i % 50 else f"/src/app/clock.py:{i}: DeprecationWarning: utcnow() is deprecated" for i in range(5_000)]
    scanner = CensusScanner()
    for k in range(4):
        scanner.feed(("\n".join(logs) + f"\ntests/test_m.py::test_{k} PASSED  [ 42%]\n").encode())
    scanner.feed(b"===== 4 passed in 0.50s =====\n")
    scanner.close()
    assert len(seen) <= 10
    assert scanner.result().outcomes == {f"tests.test_m::test_{k}": "passed" for k in range(4)}
