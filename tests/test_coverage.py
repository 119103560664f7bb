"""The total coverage figure from each tool's real (or documented) output."""

from __future__ import annotations

from pathlib import Path

import pytest

from goal_convergence.coverage import CoverageLines, parse_coverage
from goal_convergence.errors import InvalidInput

SAMPLES = Path(__file__).parent / "samples"


@pytest.mark.parametrize("name, expected", [
    ("coverage_py.txt", 67.0),  # TOTAL row
    ("coverage_py_branch.txt", 62.5),  # TOTAL row, branch columns before the total
    ("pytest_cov.txt", 67.0),
    ("jest_coverage.txt", 25.0),  # % Lines (statements are 33.33)
    ("vitest_coverage.txt", 20.0),
    ("go_test_cover.txt", 72.4),  # the lowest package
    ("go_tool_cover_func.txt", 82.4),  # total: wins over the packages
    ("lcov_summary.txt", 69.2),
    ("cargo_llvm_cov.txt", 79.17),  # Lines cover, not regions (78.57) nor branches (62.50)
    ("tarpaulin.txt", 78.57),
])
def test_each_format(name, expected):
    text = (SAMPLES / name).read_text()
    assert parse_coverage(text) == expected
    streamed = CoverageLines()
    streamed.feed(text.encode())
    assert parse_coverage(streamed.text()) == expected


@pytest.mark.parametrize("name", ["pytest_fail.txt", "jest_fail.txt", "cargo_test_fail.txt", "eslint.txt"])
def test_outputs_without_a_coverage_report_give_none(name):
    assert parse_coverage((SAMPLES / name).read_text()) is None


def test_istanbul_without_a_header_uses_statements():
    assert parse_coverage("All files |   85.71 |       50 |     100 |   80.5 |\n") == 85.71


def test_llvm_cov_with_an_unknown_layout_takes_the_third_percentage():
    text = ("Filename  Regions  Cover  Functions  Executed  Lines  Cover  Extra\n"
            "TOTAL  10  90.00%  4  75.00%  20  85.00%  7  60.00%\n")
    assert parse_coverage(text) == 85.0


def test_coverage_regex_first_group_last_match():
    text = "partial: covered=50.0 percent\nfinal: covered=91.5 percent\n"
    assert parse_coverage(text, r"covered=([\d.]+) percent") == 91.5
    assert parse_coverage(text, r"covered=\d+\.\d") == 91.5  # no group: the number in the match
    assert parse_coverage(text, r"nothing like this") is None
    # A user's regex replaces the built-in parsers rather than adding to them.
    assert parse_coverage("TOTAL 10 2 80%\n", r"covered=([\d.]+)") is None


def test_an_invalid_regex_says_how_to_fix_it():
    with pytest.raises(InvalidInput, match="coverageRegex '\\(' is not a valid regular expression"):
        parse_coverage("x", "(")


def test_streamed_lines_keep_a_jest_table_longer_than_any_tail():
    rows = "".join(f" src/module_{i}.js |     100 |      100 |     100 |     100 |\n" for i in range(5000))
    text = ("----------|---------|----------|---------|---------|\n"
            "File      | % Stmts | % Branch | % Funcs | % Lines | Uncovered Line #s\n"
            "----------|---------|----------|---------|---------|\n"
            "All files |   91.25 |     80.5 |      90 |   88.75 |\n" + rows)
    streamed = CoverageLines()
    lines = text.encode().splitlines(keepends=True)
    for i in range(0, len(lines), 700):
        streamed.feed(b"".join(lines[i : i + 700]))
    assert parse_coverage(streamed.text()) == 88.75
    assert len(streamed.text()) < 200_000


def test_streamed_go_packages_keep_only_the_lowest():
    text = "".join(f"ok  \texample.com/m/p{i}\t0.01s\tcoverage: {50 + i % 40}.0% of statements\n" for i in range(3000))
    streamed = CoverageLines()
    streamed.feed(text.encode())
    assert parse_coverage(streamed.text()) == 50.0
    assert streamed.text().count("\n") < 5


def test_the_istanbul_total_row_counts_in_whatever_read_it_arrives():
    from goal_convergence.coverage import CoverageLines, parse_coverage

    output = (b"File      | % Stmts | % Branch | % Funcs | % Lines |\n"
              b"All files |   91.2 |   80 |   90 |   88.8 |\n" + b" src/m.js |  100 |  100 |  100 |  100 |\n" * 3)
    for cut in range(1, len(output)):
        lines = CoverageLines()
        head, tail = output[:cut], output[cut:]
        whole = head.rfind(b"\n") + 1  # blocks of whole lines, as the runner feeds them
        lines.feed(head[:whole])
        lines.feed(head[whole:] + tail)
        assert parse_coverage(lines.text(), None) == 88.8, cut
