"""Throwaway virtualenvs for the environment cheats (issue 24, class 2): a maker that plants a
``.pth``, a ``sitecustomize.py`` or a pytest plugin in site-packages must never plant it in the venv
that runs this suite. A template venv holds pytest and what it needs (copied, not linked: a cheat may
edit pytest's own files), made once per session; each goal gets its own copy beside its project."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

# pytest and its dependencies, nothing else: no plugin loads unless a cheat adds one.
DISTS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def template(dest: Path) -> Path:
    """A venv at ``dest`` with this interpreter's pytest (and its dependencies) copied in."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = site_packages(dest)
    for name in DISTS:
        dist = importlib.metadata.distribution(name)
        for rel in dist.files or []:
            if rel.parts[0] == ".." or "__pycache__" in rel.parts:
                continue
            target = site / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(dist.locate_file(rel), target)
    return dest


def copy(template_venv: Path, dest: Path) -> Path:
    """A copy of the template; by cp, as its python links into the interpreter's home (pyenv's, under the
    real HOME), which the suite's guard against touching the real home would refuse in-process."""
    subprocess.run(["cp", "-a", str(template_venv), str(dest)], check=True)
    return dest
