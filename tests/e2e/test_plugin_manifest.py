"""The plugin as Claude Code's own validator sees it (`claude plugin validate --strict`)."""

from __future__ import annotations

import json
import struct
import subprocess

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("target", [".", ".claude-plugin/plugin.json"])
def test_claude_plugin_validate_strict_passes(claude_bin, isolated_home, target):
    done = subprocess.run([claude_bin, "plugin", "validate", "--profile", "directory", "--strict", target],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout


def test_manifest_names_the_plugin_and_its_icon_is_a_square_png():
    manifest = json.loads((REPO / ".claude-plugin/plugin.json").read_text())
    assert manifest["name"] == "goal-convergence" and manifest["version"]
    market = json.loads((REPO / ".claude-plugin/marketplace.json").read_text())
    assert [p["name"] for p in market["plugins"]] == ["goal-convergence"]
    png = (REPO / ".claude-plugin/icon.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width == height >= 512
