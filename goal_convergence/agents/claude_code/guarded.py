"""The judge's files: what of goal-convergence's home a maker's tool call must not name, read or write.

The goal file holds the terms and the hidden expectation, the baseline manifest what the checks were
at the start, ``makers/`` who is a maker, and ``seal.key`` the key that makes an edit made outside
goal-convergence show. When the home is Claude Code's own folder (the default, ``~/.claude``), only
goal-convergence's entries in it are guarded, so the maker keeps its settings, skills and
transcripts; a home of its own (``GOAL_CONVERGENCE_HOME``) is guarded whole. ``worktrees/`` never
is: attempts and waves work there. Standard library only: it runs before every tool call.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# goal-convergence's entries in its home (docs/files.md), and the one it shares with the maker
ENTRIES = ("goals", "baselines", "makers", "triage", "locks", "runs", "quarantine", "logs", "reports", "seal.key",
           "seal.json", "terms", "config.toml", "prices.json", "events.jsonl", "installed-names.json", "indexes")
SHARED = ("worktrees",)
GLOB_CHARS = "*?["
BOUNDARY = r"(?=$|[/\s'\"`;|&()<>])"


def _real(path: str) -> str:
    return os.path.realpath(path)


class Guarded:
    """The guarded paths of ``home``, with relative paths resolved from ``cwd``."""

    def __init__(self, home: Path, cwd: str) -> None:
        self.home = os.path.abspath(home)
        self.real_home = _real(self.home)
        self.cwd = cwd
        own = self.real_home != _real(os.path.join(os.path.expanduser("~"), ".claude"))
        names = ENTRIES if not own else tuple(sorted({*ENTRIES, *_listing(self.real_home)} - set(SHARED)))
        self.roots = [os.path.join(self.real_home, name) for name in names]
        # the home's own folder counts as named: `grep -r x ~/.claude` reads the goal files
        self.folders = [self.real_home]
        homes = {self.home, self.real_home}
        spelled = [re.escape(h) + "/" + re.escape(name) for h in homes for name in names]
        spelled += [re.escape(h) + r"/?(?=$|[\s'\"`;|&()<>])" for h in homes]
        base = re.escape(os.path.basename(self.real_home))
        spelled += [rf"(?<![\w.-]){base}/{re.escape(name)}" for name in names]
        spelled += [r"GOAL_CONVERGENCE_HOME\b", r"(?<![\w-])seal\.key\b"]
        self._text = re.compile("|".join(f"(?:{s}){BOUNDARY}" if not s.endswith(r"\b") else f"(?:{s})"
                                         for s in spelled))

    def text_names(self, text: str) -> str | None:
        """What of the home ``text`` spells out (a path, the variable, the key's name), or None."""
        found = self._text.search(text)
        return found.group(0) if found else None

    def resolve(self, word: str) -> str:
        """``word`` as the absolute path a tool or shell would open (``~`` and ``$HOME`` expanded)."""
        word = re.sub(r"^\$\{?HOME\}?(?=/|$)", lambda _: os.path.expanduser("~"), word)
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(word)))

    def reaches(self, word: str, *, folder_too: bool = True) -> str | None:
        """The guarded path ``word`` is, or is inside, or could match as a glob; None when it is not one."""
        path = self.resolve(word)
        cut = min((path.find(c) for c in GLOB_CHARS if c in path), default=-1)
        if cut >= 0:  # a glob: anything its literal part could grow into, inside the home (`/*/*` is no match)
            head, partial = os.path.split(path[:cut])
            prefix = os.path.join(_real(head), partial)
            if prefix.startswith(self.real_home) and any(
                    root.startswith(prefix) or prefix.startswith(root + "/") for root in self.roots):
                return path
            return None
        real = _real(path)
        inside = any(real == root or real.startswith(root + "/") for root in self.roots)
        if inside or (folder_too and real in self.folders):
            return path
        return None

    def holds(self, folder: str) -> bool:
        """Whether a search from ``folder`` (a Grep or Glob) would walk into a guarded path."""
        real = _real(self.resolve(folder))
        return any(root == real or root.startswith(real.rstrip("/") + "/") or real.startswith(root + "/")
                   for root in self.roots)


def _listing(home: str) -> list[str]:
    try:
        return os.listdir(home)
    except OSError:
        return []
