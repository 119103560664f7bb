"""Failure lines from real runner outputs, and fingerprints that ignore what varies between runs."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.checks import extract as extract_mod
from goal_convergence.checks.extract import (MAX_ID_LINES, MAX_LINE_CHARS, MAX_LINES, PASS_FINGERPRINT, FailureScanner,
                                             fingerprint)

SAMPLES = Path(__file__).parents[1] / "samples"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def failures(output: str | bytes, *cuts: int) -> list[str]:
    """The failure lines of ``output`` read in pieces cut at ``cuts``, as a pipe may deliver it."""
    data = output.encode() if isinstance(output, str) else output
    scanner = FailureScanner()
    for start, end in zip((0, *cuts), (*cuts, len(data)), strict=True):
        scanner.feed(data[start:end])
    scanner.close()
    return scanner.lines


def test_pytest_ids_first_then_assertions_then_summary():
    lines = failures(sample("pytest_fail.txt"))
    assert lines[:4] == [
        "FAILED tests/test_calc.py::test_add_wrong - assert 4 == 5",
        "FAILED tests/test_calc.py::test_div_zero - ZeroDivisionError: division by zero",
        "FAILED tests/test_calc.py::test_parse_list - assert [1, 2, 3] == [1, 2, 4]",
        "ERROR tests/test_calc.py::test_uses_broken - RuntimeError: fixture could not ...",
    ]
    assert "E assert 4 == 5" in lines
    assert "E ZeroDivisionError: division by zero" in lines
    assert lines[-1] == "===================== 3 failed, 2 passed, 1 error in 0.85s ====================="
    assert not any("def test_" in line or "platform linux" in line for line in lines)


def test_unittest_ids_and_the_last_line_of_each_traceback():
    assert failures(sample("unittest_fail.txt")) == [
        "ERROR: test_parse (tests.test_unit.CalcTest.test_parse)",
        "FAIL: test_add_wrong (tests.test_unit.CalcTest.test_add_wrong)",
        "ValueError: invalid literal for int() with base 10: 'x'",
        "AssertionError: 3 != 4",
        "FAILED (failures=1, errors=1)",
    ]


def test_jest():
    lines = failures(sample("jest_fail.txt"))
    assert lines[:5] == [
        "FAIL src/cart.test.js",
        "✕ discount takes ten percent off (3 ms)",
        "✕ total of an empty cart (1 ms)",
        "● cart › discount takes ten percent off",
        "● cart › total of an empty cart",
    ]
    assert {"Expected: 90", "Received: 91", "Tests: 2 failed, 2 passed, 4 total"} <= set(lines)
    assert "TypeError: Cannot read properties of undefined (reading 'reduce')" in lines
    assert not any("✓" in line for line in lines)


def test_vitest():
    lines = failures(sample("vitest_fail.txt"))
    assert "× cart > discount takes ten percent off 14ms" in lines
    assert "FAIL src/cart.test.js > cart > total of an empty cart" in lines
    assert "AssertionError: expected 91 to be 90 // Object.is equality" in lines
    assert "Tests 2 failed | 1 passed (3)" in lines
    assert not any("total sums price" in line for line in lines)  # the passing test


def test_go_test():
    lines = failures(sample("go_test_fail.txt"))
    assert lines[:3] == ["--- FAIL: TestTotal (0.00s)", "--- FAIL: TestDiscount (0.00s)",
                         "--- FAIL: TestDiscount/ten_percent (0.00s)"]
    assert "cart_test.go:31: Discount(100, 10) = 91, want 90" in lines
    assert "panic: runtime error: index out of range [3] with length 3 [recovered]" in lines
    assert "--- FAIL: TestPick (0.00s)" in lines
    assert not any(line.startswith(("goroutine", "testing.tRunner", "ok ")) for line in lines)


def test_cargo_test_joins_the_panic_place_and_message():
    lines = failures(sample("cargo_test_fail.txt"))
    assert lines[:2] == ["test tests::it_parses ... FAILED", "test tests::it_adds_wrong ... FAILED"]
    assert ("thread 'tests::it_adds_wrong' (10498) panicked at src/lib.rs:20:9: assertion `left == right` failed"
            in lines)
    assert ("thread 'tests::it_parses' (10499) panicked at src/lib.rs:25:28: "
            "called `Option::unwrap()` on a `None` value") in lines
    assert any(line.startswith("test result: FAILED.") for line in lines)
    assert not any("rust_begin_unwind" in line or "/rustc/" in line for line in lines)


@pytest.mark.parametrize("name", ["ruff_full.txt", "ruff_concise.txt"])
def test_ruff_both_formats_give_file_line_col_code(name):
    lines = failures(sample(name))
    findings = [line for line in lines if line.startswith("a.py:")]
    assert [f.split(" ")[:2] for f in findings] == [
        ["a.py:1:8:", "F401"], ["a.py:6:13:", "E711"], ["a.py:8:5:", "E741"]]
    assert "Found 3 errors." in lines


def test_ruff_full_format_across_a_block_that_is_skipped():
    scanner = FailureScanner()
    scanner.feed(b"checking\nF401 [*] `os` imported but unused\n")  # nothing here looks like a failure
    scanner.feed(b" --> src/app.py:1:8\n  |\n")
    assert scanner.lines == ["src/app.py:1:8: F401 `os` imported but unused"]


def test_eslint_findings_carry_their_file():
    lines = failures(sample("eslint.txt"))
    assert lines[0] == ("/home/dev/shop/src/app.js:1:7: error 'unused' is assigned a value but never used "
                        "no-unused-vars")
    assert "/home/dev/shop/src/app.js:3:3: warning Unexpected console statement no-console" in lines
    assert "/home/dev/shop/src/ok.test.js:2:23: error 'expect' is not defined no-undef" in lines
    assert lines[-1] == "✖ 14 problems (13 errors, 1 warning)"
    assert len(lines) == 15


@pytest.mark.parametrize("name", ["tsc.txt", "tsc_pretty.txt"])
def test_tsc_plain_and_pretty(name):
    lines = failures(sample(name))
    assert [line for line in lines if "TS2" in line] == [
        line for line in lines if line.startswith("ts/price.ts")
    ]
    assert sum("error TS2322: Type 'string' is not assignable to type 'number'." in line for line in lines) == 1
    assert sum("error TS2339" in line for line in lines) == 1
    assert not any("\x1b" in line for line in lines)


def test_generic_fallback_only_when_no_runner_matched():
    output = "step 1 ok\nConnection refused: the database is down (error 111)\nsummary: 0 errors in config\n"
    assert failures(output) == ["Connection refused: the database is down (error 111)"]
    # A runner's own line wins over the generic ones.
    with_runner = output + "FAILED tests/test_db.py::test_connect\n"
    assert failures(with_runner) == ["FAILED tests/test_db.py::test_connect"]


def test_nothing_from_a_passing_run():
    assert failures("collected 3 items\n\ntests/test_a.py ...  [100%]\n\n==== 3 passed in 0.02s ====\n") == []


def test_kept_lines_are_bounded_in_count_and_length():
    output = "".join(f"FAILED tests/test_a.py::test_{i} - {'x' * 1000}\n" for i in range(MAX_ID_LINES + 500))
    output += "".join(f"E   assert {i} == -1\n" for i in range(1000))
    lines = failures(output)
    ids = [line for line in lines if line.startswith("FAILED")]
    assert len(ids) == MAX_ID_LINES, "failing test ids get a bound of their own"
    assert len(lines) - len(ids) == MAX_LINES, "detail lines keep the smaller bound"
    assert all(len(line) <= MAX_LINE_CHARS for line in lines)
    assert lines[0].startswith("FAILED tests/test_a.py::test_0 - xxx")


def test_streaming_in_blocks_gives_the_same_lines_as_the_whole_output():
    text = sample("pytest_fail.txt") + sample("unittest_fail.txt") + sample("cargo_test_fail.txt")
    lines = text.encode().splitlines(keepends=True)
    scanner = FailureScanner()
    for i in range(0, len(lines), 3):
        scanner.feed(b"".join(lines[i : i + 3]))
    scanner.close()
    assert scanner.lines == failures(text)


STREAMED = ["pytest_fail.txt", "unittest_fail.txt", "jest_fail.txt", "vitest_fail.txt", "go_test_fail.txt",
            "cargo_test_fail.txt", "ruff_full.txt", "ruff_concise.txt", "eslint.txt", "tsc_pretty.txt"]


@pytest.mark.parametrize("name", STREAMED)
def test_the_lines_are_the_same_wherever_the_output_is_cut(name):
    data = (SAMPLES / name).read_bytes()
    whole = failures(data)
    assert whole
    for cut in range(1, len(data)):  # through lines, and through the UTF-8 of ✕, ●, × and ✖
        assert failures(data, cut) == whole, f"cut at {cut}: {data[:cut][-40:]!r}"
    # A line a read, so that reads without any hint of a failure come between the others; and a byte a read.
    assert failures(data, *(i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n"))) == whole
    assert failures(data, *range(1, len(data))) == whole


def test_the_lines_are_the_same_in_random_pieces():
    data = b"".join((SAMPLES / name).read_bytes() for name in STREAMED)
    whole = failures(data)
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(2, 60)))
        assert failures(data, *cuts) == whole, cuts


def test_the_last_line_counts_without_its_newline():
    assert failures("collected 2 items\nFAILED tests/test_a.py::test_x - assert 0") == [
        "FAILED tests/test_a.py::test_x - assert 0"]


def test_a_line_longer_than_any_read_is_one_line():
    long = b"FAILED tests/test_a.py::test_x - " + b"x" * 200_000 + b"\nok\n"
    whole = failures(long)
    assert whole == [("FAILED tests/test_a.py::test_x - " + "x" * 300)[:300]]
    assert failures(long, *range(1000, len(long), 1000)) == whole


def test_repeated_identical_lines_are_kept_once():
    assert failures("E   assert error\n" * 10_000 + "FAILED t.py::x\n") == ["FAILED t.py::x", "E assert error"]


# ---- fingerprints ---------------------------------------------------------------------------

def _pytest_run(seconds: str, tmp: str, address: str, passed: int, line: int) -> list[str]:
    return failures(
        f"tmp = {tmp}\n"
        f"tests/test_calc.py:{line}: AssertionError\n"
        f"E       assert <calc.Box object at {address}> == 3\n"
        f"FAILED tests/test_calc.py::test_box - assert <calc.Box object at {address}> == 3\n"
        f"FAILED tests/test_calc.py::test_file - FileNotFoundError: {tmp}/test_file0/data.json\n"
        f"==== 2 failed, {passed} passed in {seconds} ====\n"
    )


def test_same_failures_with_different_timings_paths_and_addresses_give_the_same_fingerprint():
    one = _pytest_run("0.53s", "/tmp/pytest-of-root/pytest-12", "0x7f3a2c1b9d60", 40, 14)
    two = _pytest_run("12.01s", "/tmp/pytest-of-root/pytest-13", "0x7f00deadbeef", 41, 15)
    assert one != two
    assert fingerprint(one, 1, False) == fingerprint(two, 1, False)
    assert fingerprint(list(reversed(one)), 1, False) == fingerprint(one, 1, False)


def test_a_different_failure_gives_a_different_fingerprint():
    base = ["FAILED tests/test_a.py::test_x - assert 1 == 2"]
    assert fingerprint(base, 1, False) != fingerprint(["FAILED tests/test_a.py::test_y - assert 1 == 2"], 1, False)
    assert fingerprint(base, 1, False) != fingerprint([*base, "FAILED tests/test_a.py::test_y"], 1, False)
    assert fingerprint(base, 1, False) != fingerprint(base, 2, False)


@pytest.mark.parametrize("one, two", [
    ("--- FAIL: TestTotal (0.00s)", "--- FAIL: TestTotal (1.37s)"),
    ("✕ adds numbers (3 ms)", "✕ adds numbers (112 ms)"),
    ("× cart > adds 14ms", "× cart > adds 2ms"),
    ("thread 'tests::it_parses' (10499) panicked at src/lib.rs:25:28: boom",
     "thread 'tests::it_parses' (222) panicked at src/lib.rs:26:28: boom"),
    ('  File "/home/dev/app.py", line 12, in main', '  File "/home/dev/app.py", line 40, in main'),
    ("ts/price.ts(2,9): error TS2322: bad", "ts/price.ts(3,9): error TS2322: bad"),
    ("test result: FAILED. 1 passed; 2 failed; finished in 0.13s",
     "test result: FAILED. 5 passed; 2 failed; finished in 2.5s"),
    ("cache at /var/folders/x1/abcd/T/tmpq1w2e3/cache.db is locked",
     "cache at /var/folders/x1/abcd/T/tmpzz99/cache.db is locked"),
    ("2025-03-14T09:12:03.204511Z ERROR worker died", "2025-03-15T10:00:00Z ERROR worker died"),
])
def test_noise_is_normalised_away(one, two):
    assert fingerprint([one], 1, False) == fingerprint([two], 1, False)


def test_different_files_under_tmp_stay_different():
    one = fingerprint(["/tmp/proj/src/a.js:1:7: error x"], 1, False)
    assert one != fingerprint(["/tmp/proj/src/b.js:1:7: error x"], 1, False)


def test_timeout_fingerprint_ignores_the_kill_signal():
    lines = ["collected 10 items"]
    assert fingerprint(lines, -15, True) == fingerprint(lines, -9, True)
    assert fingerprint(lines, -15, True) != fingerprint(lines, 1, False)


def test_a_pass_has_a_fixed_fingerprint():
    assert fingerprint([], 0, False) == PASS_FINGERPRINT
    assert fingerprint([], 1, False) != PASS_FINGERPRINT


def _every_rule(line: str) -> str:
    """normalise without the needs: each rule tried on every line, the separators by the rule they replace."""
    for _, rules in extract_mod._NORMALISE:
        for pattern, repl in rules:
            line = pattern.sub(repl, line)
    return re.sub(r"[\s,;|=]+", " ", line).strip(" ,;=|")


# What the rules look for, whole and in pieces, and what looks like it: the letters (?i) matches beyond ASCII
# (ſ, K, ı, İ), non-ASCII digits and whitespace, separators.
_NOISE = ["2025-03-14T09:12:03.204Z", "2025-03-14 09:12:03,5+02:00", "2025-03-14", "T", "09:12:03", "-", " ", "Z",
          "/tmp/pytest-of-root/pytest-12/test_x0", "/tmp/pytest-of-root/pytest-current", "pytest-of-", "/pytest-1",
          "/private/var/folders/x1/ab/T/tmpq", "/var/folders/", "/tmp/", "/T/", "/x", "thread 'main' (123)", "thread '",
          "'", "0xdeadBEEF", "0x", "g", ', line 12', "(2,9):", "(", ",", ")", ":", ":3", "a.py:12:3", "]", ">", "\t",
          "\n", " in 3s", " took 4 secs", "(12 ms)", "0.5s", "12ms", "5 ſ", "4 MS", "6 IN", " (3) ", "(3)", "12", "3.5",
          *(f"{i} {word}" for i, word in enumerate(["passed", "Skipped", "ignored", "measured", "filtered out",
                                                    "deselected", "XFAILED", "xpassed", "warning", "total", "todo"])),
          "in", "ı", "İ", "took", "ms", "s", "ſ", "S", "sec", "m", "K", "µ", "=", "|", ";", "\u00a0", "\u2003", "\x1c",
          "٣", "x", "d", "p"]


@settings(max_examples=1000, deadline=None)
@given(line=st.lists(st.sampled_from(_NOISE), max_size=14).map("".join) | st.text(max_size=40))
def test_a_rule_is_skipped_only_on_a_line_it_cannot_change(line):
    for need, rules in extract_mod._NORMALISE:
        if need is not None and any(pattern.search(line) for pattern, _ in rules):
            assert need.search(line), (need.pattern, line)
    assert extract_mod.normalise(line) == _every_rule(line)


def test_normalise_reads_the_sample_outputs_as_every_rule_does():
    lines = [line for path in sorted(SAMPLES.iterdir()) for line in path.read_text(errors="replace").splitlines()]
    assert len(lines) > 1000
    assert [extract_mod.normalise(line) for line in lines] == [_every_rule(line) for line in lines]


def test_only_the_lines_holding_a_key_are_read_in_blocks_full_of_hint_words(monkeypatch):
    # Logs that say "error" and "failed" in passing and a warning every 50 lines: the old scanner read
    # every line of any block holding a hint word, through one Python regex a line.
    seen: list[bytes] = []
    real = extract_mod.decode_line
    monkeypatch.setattr(extract_mod, "decode_line", lambda raw: (seen.append(raw), real(raw))[1])
    logs = [f"2026-11-30 10:00:{i % 60:02d} WARNING retry {i} after connection error (attempt 1), 0 failed"
            if i % 50 else f"  app/clock.py:{i}: DeprecationWarning: utcnow() is deprecated" for i in range(5_000)]
    scanner = FailureScanner()
    for k in range(4):  # generic lines count only until a specific one is found: a failing test first
        scanner.feed((f"FAILED tests/test_m.py::test_{k} - assert 1 == 2\n" + "\n".join(logs) + "\n").encode())
    scanner.close()
    assert len(seen) <= 10
    assert [line for line in scanner.lines if line.startswith("FAILED")] == [
        f"FAILED tests/test_m.py::test_{k} - assert 1 == 2" for k in range(4)]
