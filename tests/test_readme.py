"""The README stays short and says the two commands: the one that installs and runs the main job, and the one
that runs the tests (which .ci/run runs). It links every page of the documentation site; everything else is
there (tests/test_docs.py checks the site, its CLI reference among it)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", text, re.S)


def nav_pages(nav: list) -> list[str]:
    pages = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_first_command_is_the_demo():
    assert shell_blocks(README)[0] == "pip install . && goal demo"


def test_the_second_command_runs_the_tests_as_ci_does():
    assert shell_blocks(README)[1] == "pip install '.[test]'\npython -m pytest -q"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install '.[test]'" in ci and "python -m pytest -q" in ci


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_the_readme_links_every_page_of_the_site_and_only_pages_that_exist():
    linked = re.findall(r"\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)", README)
    assert [p for p in linked if not (REPO / p).is_file()] == []
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    assert {f"docs/{p}" for p in nav_pages(config["nav"]) if p != "index.md"} - set(linked) == set()
