"""The oracle's read-only tools, all confined to the project root.

Read a file, list files by glob, grep, read-only git, and re-run one of the goal's own stopping
conditions. No write tool and no shell. Every path is checked before use: no ``..``, no absolute
path outside the root, symlinks resolved and checked; files that look like secrets (``SECRET_GLOBS``)
and hard-linked files (their other name may be outside the root) are refused unless the goal lists
them (``oracle.mayRead``). Every call is bounded in time (grep runs in a child process that is
stopped at its timeout, so no regular expression can run for ever; git through ``git.py``) and in
size. A refused, failed or timed-out call is answered as a tool error the model can read, never raised.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import GoalConvergenceError
from ..models import ConditionEvidence
from ..system import mask, process
from ..system.text import cut
from ..vcs import git
from ..vcs.tree import SKIP_DIRS

MAX_RESULT_CHARS = 8_000
MAX_READ_LINES = 400
MAX_LIST_ENTRIES = 300
MAX_GREP_MATCHES = 200
MAX_GREP_FILE_BYTES = 1_000_000
MAX_LINE_CHARS = 300
MAX_READ_BYTES = 4_000_000
MAX_OUTPUT_BYTES = 256_000  # of git's or grep's output, before the answer is cut to its limit
WALK_SECONDS = 5.0  # a walk of a huge tree stops and says so
GREP_SECONDS = 10.0
GIT_SECONDS = 20.0
# Names of files that hold credentials; ssh keys by their usual names, so id_utils.py stays readable.
SECRET_GLOBS = (".env*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
                "credentials*", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials")
_SEARCH = Path(__file__).with_name("search.py")
# Refs, ranges and revision expressions only: no leading "-", so a ref can never become an option,
# and no ":", so no `HEAD:.env` reads a file the tools refuse from the history.
_REF = re.compile(r"^[\w./~^@{}+-]{1,200}$")


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
    def __init__(self, root: Path, rerun: Callable[[int], ConditionEvidence] | None = None,
                 may_read: Sequence[str] = ()) -> None:
        self.root = Path(root).resolve()
        self._rerun = rerun
        self._may_read = tuple(may_read)

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
        except (GoalConvergenceError, OSError, re.error) as exc:
            text, error = f"{name} failed: {exc}", True
        return cut(mask.text(text), limit), error

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
        why = self._withheld(real)
        if why:
            raise ToolRefused(f"{path!r} refused: {why}; the goal's oracle.mayRead lists what may be read anyway")
        return real

    def _withheld(self, real: Path) -> str | None:
        """Why the oracle may not read this file (a secret's name, another name elsewhere), or None."""
        try:
            st = real.stat()
        except OSError:
            return None
        if not os.path.isfile(real):
            return None
        rel = self._rel(real)
        if ".git" in PurePosixPath(rel).parts:
            return "git's own files (remote URLs, credentials) are not the project's; use the git tool"
        if any(fnmatch.fnmatch(rel, allowed) for allowed in self._may_read):
            return None
        if any(fnmatch.fnmatch(real.name, secret) for secret in SECRET_GLOBS):
            return "its name is one secrets are kept under"
        if st.st_nlink > 1:
            return "it is hard-linked, and its other name may be outside the project"
        return None

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
                if real.is_relative_to(self.root) and real.is_file() and not self._withheld(real):
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
            data = fh.read(MAX_READ_BYTES + 1)
        if b"\0" in data:
            raise ToolRefused(f"{path!r} is a binary file")
        truncated = len(data) > MAX_READ_BYTES
        lines = data[:MAX_READ_BYTES].split(b"\n")
        if truncated or lines[-1] == b"":
            lines.pop()  # a line cut at the limit, or the empty piece after the last newline
        for number, raw in enumerate(lines, 1):
            if number > end:
                out.append(f"... (more lines: read on with start_line={number})")
                break
            if number >= start:
                out.append(f"{number:6}\t{raw.decode('utf-8', 'replace').rstrip()[:2000]}")
        else:
            if truncated:
                out.append(f"... (only the first {MAX_READ_BYTES // 1_000_000} MB of the file can be read)")
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
        re.compile(pattern)  # a bad pattern is the model's error, said before anything runs
        base = self.resolve(path)
        deadline = time.monotonic() + WALK_SECONDS
        files, note = [], ""
        for file in self._walk(base):
            if time.monotonic() > deadline:
                note = f"... (the search covered the files found in {WALK_SECONDS:.0f} s: narrow path or glob)"
                break
            rel = self._rel(file)
            if not glob or fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(file.name, glob):
                files.append((str(file), rel))
        job = {"pattern": pattern, "files": files, "max_matches": MAX_GREP_MATCHES, "max_line_chars": MAX_LINE_CHARS,
               "max_search_chars": 2000, "max_file_bytes": MAX_GREP_FILE_BYTES}
        with tempfile.TemporaryFile() as out:
            done = process.run([sys.executable, "-I", str(_SEARCH)], self.root, out, err=process.Capture(),
                               input=json.dumps(job).encode(), timeout=GREP_SECONDS)
            out.seek(0)
            text = out.read(MAX_OUTPUT_BYTES).decode("utf-8", "replace").rstrip("\n")
        if done.timed_out:
            raise ToolRefused(f"grep stopped after {GREP_SECONDS:.0f} s (a pattern that backtracks, or too many "
                              f"files): simplify the pattern or narrow path or glob. Found so far:\n{text or '-'}")
        if done.code != 0:
            raise ToolRefused(f"grep failed (exit {done.code})")
        return "\n".join(filter(None, [text, note])) or f"no match for {pattern!r}"

    def git(self, command: str, ref: str | None = None, paths: list[str] | None = None, stat: bool = False,
            max_count: int = 20) -> str:
        if ref is not None and (ref.startswith("-") or not _REF.match(ref)):
            raise ToolRefused(f"{ref!r} is not a git ref or range")
        rels = [self._rel(self.resolve(p)) for p in paths or []]
        no_programs = ["--no-ext-diff", "--no-textconv"]
        if command == "status":
            args = ["status", "--porcelain=v1", "--untracked-files=all", "--ignore-submodules=all"]
        elif command == "diff":
            args = ["diff", *no_programs, *(["--stat"] if stat else []), *([ref] if ref else ["HEAD"])]
        elif command == "log":
            args = ["log", *no_programs, f"-n{max(1, min(int(max_count), 50))}", "--date=short",
                    "--format=%h %ad %an: %s", *(["--stat"] if stat else []), *([ref] if ref else [])]
        elif command == "show":
            args = ["show", *no_programs, *(["--stat"] if stat else []), ref or "HEAD"]
        else:
            raise ToolRefused(f"git {command!r} is not allowed; use status, diff, log or show")
        repo = git.open_repo(self.root, timeout=GIT_SECONDS)
        if repo is None:
            raise ToolRefused("the project is not a git repository")
        # What looks like a secret stays out of diffs too (read_file alone reads what the goal lists).
        hidden = [f":(exclude,glob)**/{name}" for name in SECRET_GLOBS]
        done = repo.run(self.root, *args, "--", *(rels or ["."]), *hidden, timeout=GIT_SECONDS, limit=MAX_OUTPUT_BYTES)
        if done.code is None:
            raise ToolRefused(f"git {command} gave no answer within {GIT_SECONDS:.0f} s ({done.err}); "
                              "narrow it with paths or stat")
        if not done.ok:
            raise ToolRefused(f"git {command} exited {done.code}: {done.err[-500:]}")
        return done.out.decode("utf-8", "replace") or "(no output)"

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
