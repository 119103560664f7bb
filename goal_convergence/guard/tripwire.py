"""Static tripwires over the maker's diff: the product files changed since the goal began, read for
forgery of the test run (``forgery``) and for answers special-cased to the failing tests
(``special_casing``). Their hits are findings, not refusals (``Integrity.findings``): a model judge is
asked to check them, and with no model judge a green run that has one waits for a person (rules/decide.py).

The goal's starting tree is the snapshot ``start`` takes when the goal is made (a git tree object, named
in the baseline manifest); the tree a run is compared with is its iteration's checkpoint, else a fresh
snapshot. Outside git, ``start`` keeps the product sources' hashes and content with the baseline's
files instead. Only changed files are read, and only their added lines are looked at.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from ..errors import GoalConvergenceError
from ..models import Census, IntegrityIssue, StoppingCondition
from ..vcs import checkpoint, git, tree
from . import forgery, protect, special_casing
from .blobs import Blobs

PYTHON = (".py",)
SCRIPTS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
MAX_FILES = 300  # changed product files read at one check; a diff that large is reviewed, not scanned
MAX_BYTES = 1 << 20
MAX_KEPT = 32 << 20  # outside git: the product sources' start content kept under the home, in all
MAX_FINDINGS = 20


def is_product(rel: str, defining: dict[str, str | None]) -> bool:
    """A source file of the product: not a test, a runner config, a Python hook or a check-defining file."""
    return rel.endswith(PYTHON + SCRIPTS) and rel not in defining and not protect.sensitive([rel], [])


def start(root: Path, defining: dict[str, str | None]) -> tuple[str, dict[str, str], dict[str, bytes]]:
    """The goal's starting tree: (git tree id, {}, {}) in git; ("", {product source: content hash}, {content hash:
    bytes}) outside it, the bytes up to the size limits, for the caller to keep with the baseline's blobs."""
    try:
        repo = git.open_repo(root)
        if repo is not None:
            return checkpoint.tree_of(repo, root), {}, {}
    except (GoalConvergenceError, OSError):
        return "", {}, {}  # a tree too large or unreadable to snapshot: the tripwires fall back to the base commit
    sources, kept, new = {}, 0, {}
    for rel in tree.list_files(root):
        if not is_product(rel, defining):
            continue
        try:
            data = (root / rel).read_bytes() if (root / rel).stat().st_size <= MAX_BYTES else None
        except OSError:
            continue
        if data is None or kept + len(data) > MAX_KEPT:
            continue
        sources[rel] = digest = hashlib.sha256(data).hexdigest()
        new[digest] = data
        kept += len(data)
    return "", sources, new


def failing_at_start(outcomes: list[dict[str, str] | None], census: list[Census | None],
                     conditions: list[StoppingCondition]) -> list[str] | None:
    """The ids of the tests that failed when the goal began; None when a test condition began red without
    naming them (unittest without -v, an unknown runner such as node --test)."""
    tests = [c for c, cond in zip(census, conditions) if cond.type in ("test_pass", "coverage_threshold")]
    if any(c is None or (c.failed and not c.ids) for c in tests):
        return None
    return [test for ids in outcomes if ids for test, outcome in ids.items() if outcome == "failed"]


def _batch(repo: git.Repo, specs: list[str]) -> list[bytes | None]:
    """The blobs ``TREE:path`` names, in one ``git cat-file --batch``; None for one that is missing. A path
    holding a newline cannot be a line of the batch: it is asked for on its own, its name an argument."""
    if any("\n" in s for s in specs):
        plain = [s for s in specs if "\n" not in s]
        got = dict(zip(plain, _batch(repo, plain), strict=True))
        return [got[s] if s in got else _one(repo, s) for s in specs]
    done = repo.run(repo.top, "cat-file", "--batch", input="".join(s + "\n" for s in specs).encode())
    out, pos, found = done.out, 0, []
    for _ in specs:
        end = out.find(b"\n", pos)
        if end < 0:
            break
        head = out[pos:end].split()
        if len(head) != 3 or head[1] != b"blob":
            found.append(None)
            pos = end + 1
            continue
        size = int(head[2])
        found.append(out[end + 1:end + 1 + size])
        pos = end + 2 + size
    return found + [None] * (len(specs) - len(found))


def _one(repo: git.Repo, spec: str) -> bytes | None:
    done = repo.run(repo.top, "cat-file", "blob", spec)
    return done.out if done.ok else None


def _git_changes(root: Path, goal_id: str, number: int, start_tree: str,
                 base: str | None) -> list[tuple[str, bytes | None, bytes | None]] | None:
    """(path, content before, content now) of the files that differ from the start; None outside git."""
    try:
        repo = git.open_repo(root)
        if repo is None:
            return None
        ref = repo.run(repo.top, "rev-parse", "--verify", "--quiet", checkpoint.ref_for(goal_id, number) + "^{tree}")
        now = ref.out.decode().strip() if ref.ok else checkpoint.tree_of(repo, root)
    except (GoalConvergenceError, OSError):
        return None
    before = start_tree if start_tree and repo.run(repo.top, "cat-file", "-e", start_tree).ok else base
    if not before:
        return None
    done = repo.run(repo.top, "diff-tree", "-r", "-z", "--no-renames", "--name-only", before, now, "--")
    if not done.ok:
        return None
    prefix = os.path.relpath(root, repo.top).replace(os.sep, "/")
    paths = [os.fsdecode(p) for p in done.out.split(b"\0") if p]
    paths = [p for p in paths if prefix == "." or p.startswith(prefix + "/")][:MAX_FILES * 4]
    contents = _batch(repo, [f"{t}:{p}" for p in paths for t in (before, now)])
    rel = (lambda p: p) if prefix == "." else (lambda p: p[len(prefix) + 1:])
    return [(rel(p), contents[2 * i], contents[2 * i + 1]) for i, p in enumerate(paths)]


def _folder_changes(root: Path, blobs: Blobs, sources: dict[str, str]) -> list[tuple[str, bytes | None, bytes | None]]:
    out = []
    for rel in tree.list_files(root):
        digest = sources.get(rel)
        if tree.file_hash(root, rel) == digest:
            continue
        try:
            now = (root / rel).read_bytes()
            old = blobs.read(digest) if digest else None
        except OSError:
            continue
        out.append((rel, old, now))
    return out


def added_lines(old: str | None, new: str) -> set[int]:
    """The 1-based lines of ``new`` that are not in ``old`` (all of them for a new file)."""
    lines = new.splitlines()
    if old is None:
        return set(range(1, len(lines) + 1))
    matcher = difflib.SequenceMatcher(None, old.splitlines(), lines, autojunk=False)
    return {j + 1 for op, _, _, j1, j2 in matcher.get_opcodes() if op in ("replace", "insert") for j in range(j1, j2)}


def inspect(root: Path, home: Path, goal_id: str, number: int, start_tree: str, base: str | None,
            sources: dict[str, str], defining: dict[str, str | None],
            failing: list[str] | None) -> list[IntegrityIssue]:
    """The findings of the tripwires on the product files changed since the goal began. ``failing``: the
    ids of the tests that failed at the start, None when some failed unnamed; ``defining``: the baseline's
    files and their hashes."""
    blobs = Blobs(home, goal_id)
    changes = _git_changes(root, goal_id, number, start_tree, base)
    if changes is None:
        changes = _folder_changes(root, blobs, sources)
    changes = [c for c in changes if c[2] is not None and len(c[2]) <= MAX_BYTES and is_product(c[0], defining)]
    wanted: list[set[special_casing.Literal]] = []  # read once, and only when a block could be special-casing

    def literals() -> set[special_casing.Literal]:
        if not wanted:
            wanted.append(_failing_literals(blobs, defining, failing))
        return wanted[0]

    findings: list[IntegrityIssue] = []
    for rel, old, new in changes[:MAX_FILES]:
        assert new is not None
        findings += scan(rel, old.decode("utf-8", "replace") if old is not None else None,
                         new.decode("utf-8", "replace"), literals)
    return findings[:MAX_FINDINGS]


def scan(rel: str, old: str | None, new: str,
         wanted: Callable[[], set[special_casing.Literal]]) -> list[IntegrityIssue]:
    """The findings in one product file's change (``old`` None: a new file); ``wanted`` gives the failing
    tests' literals."""
    added = added_lines(old, new)
    if not added:
        return []
    if rel.endswith(SCRIPTS):
        found = _issues("forgery", rel, forgery.script(new, added))
        if (lines := special_casing.picks(new, added)) and (tests := wanted()):
            found += _issues("special-casing", rel,
                             special_casing.script(lines, tests, special_casing.js_literals(old or "")))
        return found
    try:
        module = ast.parse(new)
    except (SyntaxError, ValueError):
        return []  # it does not import: the checks say so
    nodes = list(forgery.walk_added(module, added))
    found = _issues("forgery", rel, forgery.python(nodes, added))
    if (blocks := special_casing.candidates(nodes, added)) and (tests := wanted()):
        found += _issues("special-casing", rel, special_casing.python(blocks, tests, _parsed_literals(old)))
    return found


def _parsed_literals(old: str | None) -> set[special_casing.Literal]:
    try:
        return special_casing.file_literals(ast.parse(old)) if old else set()
    except (SyntaxError, ValueError):
        return set()


def _issues(kind: str, rel: str, hits: list[tuple[int, str]]) -> list[IntegrityIssue]:
    return [IntegrityIssue(kind=kind, subject=f"{rel}:{line}",  # type: ignore[arg-type]
                           detail=f"{rel}:{line}, added since the goal began, {what}") for line, what in hits]


def _failing_literals(blobs: Blobs, defining: dict[str, str | None],
                      failing: list[str] | None) -> set[special_casing.Literal]:
    """The literals of the tests that failed at the start, read from the test files the baseline kept.
    ``failing`` None: tests failed but the runner did not name them, so every test file's literals count."""
    if failing is None:
        return _test_file_literals(blobs, defining)
    modules = {rel[:-3].replace("/", "."): rel for rel in defining if rel.endswith(".py")}
    found: set[special_casing.Literal] = set()
    for rel, names in special_casing.test_targets(failing, modules).items():
        digest = defining.get(rel)
        data = blobs.read(digest) if digest else None
        try:
            module = ast.parse(data) if data is not None else None
        except (SyntaxError, ValueError):
            module = None
        if module is not None:
            found |= special_casing.literals_of(module, names)
        if len(found) > special_casing.MAX_LITERALS:
            break
    return {key for key in found if key[0] == "number"}


def _test_file_literals(blobs: Blobs, defining: dict[str, str | None]) -> set[special_casing.Literal]:
    """The numbers of every test file. Only numbers: with every test's literals in play, a string compared
    and answered is too often an honest mapping (``if kind == "json": return "application/json"``)."""
    found: set[special_casing.Literal] = set()
    for rel, digest in defining.items():
        if not digest or not protect.is_test_file(rel) or not rel.endswith(PYTHON + SCRIPTS):
            continue
        try:
            text = blobs.read(digest)
            if text is None:
                continue
            found |= (special_casing.test_file_literals(ast.parse(text)) if rel.endswith(PYTHON)
                      else special_casing.js_literals(text.decode("utf-8", "replace")))
        except (OSError, SyntaxError, ValueError):
            continue
        if len(found) > special_casing.MAX_LITERALS:
            break
    return {key for key in found if key[0] == "number"}
