"""The oracle's read-only tools, all confined to the project root.

Read a file, list files by glob, grep, read-only git, and re-run one of the goal's own stopping
conditions. No write tool and no shell. Every path is checked before use: no ``..``, no absolute
path outside the root, symlinks resolved and checked, size caps on everything read and returned.
A refused or failed call is answered as a tool error the model can read, never raised.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import GoalConvergenceError
from ..models import ConditionEvidence
from ..text import cut
from ..tree import SKIP_DIRS

MAX_RESULT_CHARS = 8_000
MAX_READ_LINES = 400
MAX_LIST_ENTRIES = 300
MAX_GREP_MATCHES = 200
MAX_GREP_FILE_BYTES = 1_000_000
MAX_LINE_CHARS = 300
WALK_SECONDS = 5.0  # a walk of a huge tree stops and says so
GIT_SECONDS = 30.0
# Refs, ranges and revision expressions only: no leading "-", so a ref can never become an option.
_REF = re.compile(r"^[\w./~^@{}:+-]{1,200}$")


class ToolRefused(GoalConvergenceError):
    """A tool call outside what the oracle may do; its message is the tool error the model reads."""


_PATH = {"type": "string", "description": "A path relative to the project root."}
DEFINITIONS: list[dict[str, Any]] = [
    {"name": "read_file", "description": f"Read a text file of the project, with line numbers. At most "
     f"{MAX_READ_LINES} lines per call: give start_line/end_line for long files.",
     "input_schema": {"type": "object", "properties": {
         "path": _PATH, "start_line": {"type": "integer", "minimum": 1},
         "end_line": {"type": "integer", "minimum": 1}}, "required": ["path"], "additionalProperties": False}},
    {"name": "list_files", "description": f"List the project's files matching a glob (e.g. 'tests/**/*.py'), "
     f"at most {MAX_LIST_ENTRIES}.",
     "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}},
                      "required": ["pattern"], "additionalProperties": False}},
    {"name": "grep", "description": f"Search the project's text files for a Python regular expression; "
     f"answers path:line: text, at most {MAX_GREP_MATCHES} matches.",
     "input_schema": {"type": "object", "properties": {
         "pattern": {"type": "string"}, "path": {**_PATH, "description": "A folder or file to search (default: all)."},
         "glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. '*.py'."}},
         "required": ["pattern"], "additionalProperties": False}},
    {"name": "git", "description": "Read-only git: status, diff (working tree against ref, default HEAD), "
     "log, or show one commit. Paths limit the output.",
     "input_schema": {"type": "object", "properties": {
         "command": {"enum": ["status", "diff", "log", "show"]},
         "ref": {"type": "string", "description": "A commit, branch or range (diff, log, show)."},
         "paths": {"type": "array", "items": _PATH}, "stat": {"type": "boolean"},
         "max_count": {"type": "integer", "minimum": 1, "maximum": 50}},
         "required": ["command"], "additionalProperties": False}},
]
RERUN_DEFINITION: dict[str, Any] = {
    "name": "rerun_condition", "description": "Run one of the goal's own stopping conditions again, by its index "
    "in the input, and get its fresh result (for example to tell a flaky failure from a real one).",
    "input_schema": {"type": "object", "properties": {"index": {"type": "integer", "minimum": 0}},
                     "required": ["index"], "additionalProperties": False}}


class Toolbox:
    def __init__(self, root: Path, rerun: Callable[[int], ConditionEvidence] | None = None) -> None:
        self.root = Path(root).resolve()
        self._rerun = rerun

    @property
    def definitions(self) -> list[dict[str, Any]]:
        return DEFINITIONS + ([RERUN_DEFINITION] if self._rerun else [])

    def run(self, name: str, args: dict[str, Any], limit: int = MAX_RESULT_CHARS) -> tuple[str, bool]:
        """The text answer to one tool call and whether it is an error, cut to ``limit`` characters."""
        tools: dict[str, Callable[..., str]] = {"read_file": self.read_file, "list_files": self.list_files,
                                                "grep": self.grep, "git": self.git}
        if self._rerun:
            tools["rerun_condition"] = self.rerun_condition
        try:
            if name not in tools:
                raise ToolRefused(f"there is no tool {name!r}; the tools are: {', '.join(tools)}")
            if not isinstance(args, dict):
                raise ToolRefused("tool input must be a JSON object")
            text, error = tools[name](**args), False
        except (TypeError, ValueError, IndexError) as exc:  # IndexError: no condition with that index
            text, error = f"bad arguments for {name}: {exc}", True
        except (GoalConvergenceError, OSError, re.error, subprocess.SubprocessError) as exc:
            text, error = f"{name} failed: {exc}", True
        return cut(text, limit), error

    # ---- confinement ---------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """``path`` as a real path inside the root, or ToolRefused."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise ToolRefused("give a path relative to the project root")
        if ".." in PurePosixPath(path.replace("\\", "/")).parts:
            raise ToolRefused(f"{path!r} refused: '..' is not allowed; paths stay inside the project root")
        candidate = Path(path) if os.path.isabs(path) else self.root / path
        real = candidate.resolve()
        if real != self.root and not real.is_relative_to(self.root):
            raise ToolRefused(f"{path!r} refused: it is outside the project root (symlinks are followed and checked)")
        return real

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def _walk(self, base: Path) -> Iterator[Path]:
        """Files under ``base`` whose real path stays inside the root, without entering skipped folders."""
        if base.is_file():
            yield base
            return
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(folder, d)))
            for name in sorted(files):
                path = Path(folder, name)
                real = path.resolve()
                if real.is_relative_to(self.root) and real.is_file():
                    yield path

    # ---- the tools -------------------------------------------------------------------------

    def read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        real = self.resolve(path)
        if not real.is_file():
            raise ToolRefused(f"{path!r} is not a file")
        start = max(1, int(start_line))
        end = min(int(end_line) if end_line else start + MAX_READ_LINES - 1, start + MAX_READ_LINES - 1)
        out: list[str] = []
        with open(real, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                if b"\0" in raw:
                    raise ToolRefused(f"{path!r} is a binary file")
                if number > end:
                    out.append(f"... (more lines: read on with start_line={number})")
                    break
                if number >= start:
                    out.append(f"{number:6}\t{raw.decode('utf-8', 'replace').rstrip()[:2000]}")
        return "\n".join(out) if out else f"{path!r} has no lines from {start}"

    def list_files(self, pattern: str) -> str:
        if ".." in PurePosixPath(pattern).parts or os.path.isabs(pattern):
            raise ToolRefused(f"{pattern!r} refused: give a glob relative to the project root, without '..'")
        found = []
        deadline = time.monotonic() + WALK_SECONDS
        for path in self._walk(self.root):
            if time.monotonic() > deadline:
                found.append(f"... (stopped after {WALK_SECONDS:.0f} s: narrow the pattern)")
                break
            rel = self._rel(path)
            if fnmatch.fnmatch(rel, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:])):
                found.append(rel)
                if len(found) > MAX_LIST_ENTRIES:
                    found[-1] = f"... (more than {MAX_LIST_ENTRIES} files: narrow the pattern)"
                    break
        return "\n".join(found) if found else f"no files match {pattern!r}"

    def grep(self, pattern: str, path: str = ".", glob: str | None = None) -> str:
        regex = re.compile(pattern)
        base = self.resolve(path)
        deadline = time.monotonic() + WALK_SECONDS
        matches: list[str] = []
        for file in self._walk(base):
            rel = self._rel(file)
            if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(file.name, glob)):
                continue
            if file.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            data = file.read_bytes()
            if b"\0" in data[:8192]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line[:2000]):
                    matches.append(f"{rel}:{number}: {line.strip()[:MAX_LINE_CHARS]}")
                    if len(matches) >= MAX_GREP_MATCHES:
                        return "\n".join(matches + [f"... (stopped at {MAX_GREP_MATCHES} matches)"])
            if time.monotonic() > deadline:
                return "\n".join(matches + [f"... (stopped after {WALK_SECONDS:.0f} s: narrow path or glob)"])
        return "\n".join(matches) if matches else f"no match for {pattern!r}"

    def git(self, command: str, ref: str | None = None, paths: list[str] | None = None, stat: bool = False,
            max_count: int = 20) -> str:
        if ref is not None and (ref.startswith("-") or not _REF.match(ref)):
            raise ToolRefused(f"{ref!r} is not a git ref or range")
        rels = [self._rel(self.resolve(p)) for p in paths or []]
        # No pager, no external diff or textconv programs, no fsmonitor hook: git runs nothing but git.
        base = ["git", "-c", "core.fsmonitor=false", "--no-pager"]
        no_programs = ["--no-ext-diff", "--no-textconv"]
        if command == "status":
            args = ["status", "--porcelain=v1", "--untracked-files=all"]
        elif command == "diff":
            args = ["diff", *no_programs, *(["--stat"] if stat else []), *([ref] if ref else ["HEAD"])]
        elif command == "log":
            args = ["log", *no_programs, f"-n{max(1, min(int(max_count), 50))}", "--date=short",
                    "--format=%h %ad %an: %s", *(["--stat"] if stat else []), *([ref] if ref else [])]
        elif command == "show":
            args = ["show", *no_programs, *(["--stat"] if stat else []), ref or "HEAD"]
        else:
            raise ToolRefused(f"git {command!r} is not allowed; use status, diff, log or show")
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}
        done = subprocess.run([*base, *args, "--", *rels], cwd=self.root, env=env, capture_output=True,
                              timeout=GIT_SECONDS, stdin=subprocess.DEVNULL)
        out = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace")[-500:]
            raise ToolRefused(f"git {command} exited {done.returncode}: {stderr}")
        return out or "(no output)"

    def rerun_condition(self, index: int) -> str:
        assert self._rerun is not None
        ev = self._rerun(int(index))
        lines = [f"condition [{ev.index}] {ev.type} `{ev.command}`: {'PASSED' if ev.passed else 'FAILED'} "
                 f"(exit {ev.exit_code}{', timed out' if ev.timed_out else ''}, {ev.duration_seconds:.1f} s)"]
        if ev.error:
            lines.append(f"error: {ev.error}")
        if ev.coverage is not None:
            lines.append(f"coverage: {ev.coverage}")
        lines += ev.failure_lines
        if ev.output_tail:
            lines += ["--- output tail ---", ev.output_tail[-3000:]]
        return "\n".join(lines)
