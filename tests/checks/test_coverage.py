"""The total coverage figure from each tool's real (or documented) output."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from goal_convergence.checks.coverage import CoverageLines, parse_coverage
from goal_convergence.errors import InvalidInput

SAMPLES = Path(__file__).parents[1] / "samples"


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


def streamed(data: bytes, *cuts: int, regex: str | None = None) -> float | None:
    """The coverage of ``data`` read in pieces cut at ``cuts``, as a pipe may deliver it."""
    lines = CoverageLines(regex)
    for start, end in zip((0, *cuts), (*cuts, len(data)), strict=True):
        lines.feed(data[start:end])
    lines.close()
    return parse_coverage(lines.text(), regex)


def test_the_istanbul_total_row_counts_in_whatever_read_it_arrives():
    output = (b"File      | % Stmts | % Branch | % Funcs | % Lines |\n"
              b"All files |   91.2 |   80 |   90 |   88.8 |\n" + b" src/m.js |  100 |  100 |  100 |  100 |\n" * 3)
    row = output.index(b"All files")
    assert streamed(output, row, output.index(b"\n", row) + 1) == 88.8  # the row in a read of its own
    for cut in range(1, len(output)):
        assert streamed(output, cut) == 88.8, cut


def test_the_llvm_cov_header_counts_in_whatever_read_it_arrives():
    data = (SAMPLES / "cargo_llvm_cov.txt").read_bytes()
    header = data.index(b"Filename")
    assert streamed(data, header, data.index(b"\n", header) + 1) == 79.17


@pytest.mark.parametrize("name, expected", [
    ("coverage_py.txt", 67.0), ("coverage_py_branch.txt", 62.5), ("pytest_cov.txt", 67.0),
    ("jest_coverage.txt", 25.0), ("vitest_coverage.txt", 20.0), ("go_test_cover.txt", 72.4),
    ("go_tool_cover_func.txt", 82.4), ("lcov_summary.txt", 69.2), ("cargo_llvm_cov.txt", 79.17),
    ("tarpaulin.txt", 78.57),
])
def test_the_figure_is_the_same_wherever_the_output_is_cut(name, expected):
    data = (SAMPLES / name).read_bytes()
    for cut in range(1, len(data)):
        assert streamed(data, cut) == expected, f"cut at {cut}: {data[:cut][-40:]!r}"
    assert streamed(data, *(i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n"))) == expected
    assert streamed(data, *range(1, len(data))) == expected
    rng = random.Random(3)
    for _ in range(50):
        assert streamed(data, *sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 12)))) == expected


def test_a_coverage_regex_reads_streamed_lines_whole():
    data = "Überdeckung: 87,5 % – lines covered: 91.5 percent\n".encode()
    regex = r"covered: ([\d.]+) percent"
    for cut in range(1, len(data)):  # through the two-byte Ü and the three-byte dash too
        assert streamed(data, cut, regex=regex) == 91.5, cut


def test_the_last_line_counts_without_its_newline():
    assert streamed(b"Name    Stmts   Miss  Cover\nTOTAL      10      2    80%") == 80.0
