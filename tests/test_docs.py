"""The documentation site builds with `mkdocs build --strict` (a broken link or anchor fails it), its CLI
reference lists every command and flag that `goal --help` shows, and the files the pages name exist."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from goal_convergence.cli.app import cli

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted((REPO / "docs").glob("*.md"))
PROSE = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "benchmarks" / "performance_page.md", *PAGES]


def mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocs_click") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is missing: the test extra installs it (pip install '.[test]')")
        pytest.skip("mkdocs, mkdocs-material or mkdocs-click not installed (pip install '.[test]')")
    # Not --quiet: it hides the warnings that --strict counts, and a broken link would pass.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2, printed on every build
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = mkdocs(REPO / "mkdocs.yml", out)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr}"
    return out


def test_the_site_builds_strictly(site):
    built = {p.relative_to(site).as_posix() for p in site.rglob("index.html")}
    assert {f"{p.stem}/index.html" for p in PAGES if p.stem != "index"} | {"index.html"} <= built


@pytest.mark.parametrize("link", ["[a page](missing.md)", "[an anchor](index.md#no-such-heading)"])
def test_a_broken_link_fails_the_build(tmp_path, link):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Home\n\nSee {link}.\n")
    config = tmp_path / "mkdocs.yml"  # the project's own settings, on a page of one broken link
    config.write_text(f"INHERIT: {REPO / 'mkdocs.yml'}\ndocs_dir: {docs}\nnav:\n  - index.md\n")
    done = mkdocs(config, tmp_path / "site")
    assert done.returncode != 0 and "index.md" in done.stderr


def help_tree(path: tuple[str, ...] = ("goal",)) -> dict[tuple[str, ...], list[str]]:
    """Each command `goal --help` shows, recursively (every subcommand's --help), with the flags it lists."""
    shown = CliRunner().invoke(cli, [*path[1:], "--help"], terminal_width=100).output
    flags = [f for line in shown.splitlines() if (names := re.match(r" {2}(-\S.*?)(?: {2,}|$)", line))
             for f in re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", names.group(1))]
    tree = {path: flags}
    if "\nCommands:\n" in shown:
        for name in re.findall(r"^ {2}(\S+)", shown.split("\nCommands:\n", 1)[1], re.M):
            tree |= help_tree((*path, name))
    return tree


def sections(page: str) -> dict[str, str]:
    """The reference page's text under each heading, by the heading's id (`goal-triage-act`)."""
    parts = re.split(r'<h\d id="([^"]+)"', page)
    return {parts[i]: html.unescape(re.sub(r"<[^>]+>", "", parts[i + 1])) for i in range(1, len(parts), 2)}


def unlisted(tree: dict[tuple[str, ...], list[str]], page: str) -> list[str]:
    found = sections(page)
    missing = []
    for path, flags in tree.items():
        text = found.get("-".join(path))
        if text is None:
            missing.append(" ".join(path))
            continue
        missing += [f"{' '.join(path)} {f}" for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    return missing


def test_the_cli_reference_lists_every_command_and_flag_of_goal_help(site):
    tree = help_tree()
    assert ("goal", "triage", "act") in tree and "--stuck-after" in tree[("goal", "run")]
    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert unlisted(tree, page) == []
    found = sections(page)
    assert not {"goal-action", "goal-slash"} & set(found) and "--workdir" not in found["goal-run"]  # hidden stays hidden


def test_a_flag_or_command_missing_from_the_reference_is_caught(site):
    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    run = re.search(r'<h\d id="goal-run".*?(?=<h\d )', page, re.S).group(0)
    cut = page.replace(run, run.replace("--stuck-after", "--stuck")).replace('id="goal-triage-act"', 'id="gone"')
    assert sorted(unlisted(help_tree(), cut)) == ["goal run --stuck-after", "goal triage act"]


def named_paths(text: str) -> list[str]:
    """Repository files the prose names in code spans: paths from the repository root, and modules of the package
    by their path inside it (`loop/engine.py`)."""
    roots = ("goal_convergence/", "tests/", "benchmarks/", "docs/", ".github/", "examples/", "scripts/", ".ci/")
    package = {p.name for p in (REPO / "goal_convergence").iterdir() if p.is_dir()}
    spans = re.findall(r"`([\w.][\w./-]*)`", text)
    return [s for s in spans if "/" in s and "*" not in s and ".." not in s and (s.startswith(roots) or (
        s.endswith(".py") and s.split("/", 1)[0] in package))]


def test_the_files_the_docs_name_exist():
    missing = [f"{page.relative_to(REPO)}: {path}" for page in PROSE for path in named_paths(page.read_text())
               if not (REPO / path).exists() and not (REPO / "goal_convergence" / path).exists()]
    assert missing == []


def test_the_performance_page_is_the_benchmark_runners():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import page
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    written = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    assert page.render(*page.parse(written)) == written  # prose edited here, not in the template, would differ
    assert "| what | figure | baseline | ratio | target | met |" in written


def test_the_screens_page_is_what_the_commands_print():
    """docs/screens.md holds the real output of `goal demo`, `goal run`, `goal status`, `goal list`, `goal report`
    and the slash command: the commands run again here, and the page must be what they print."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import screens
    finally:
        sys.path.remove(str(REPO / "scripts"))
    written = (REPO / "docs" / "screens.md").read_text(encoding="utf-8")
    assert screens.render(screens.capture()) == written, "run `python scripts/screens.py` to write the page again"
