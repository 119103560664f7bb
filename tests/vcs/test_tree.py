"""Tree fingerprints follow content, not timestamps; diff stats and commits come from real git."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time

from goal_convergence.vcs.tree import diff_stat, hash_file, head_commit, tree_fingerprint
from tests.conftest import git


def _touch_later(path, seconds=5.0):
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


def test_touch_does_not_change_the_fingerprint_and_an_edit_does(git_repo):
    before = tree_fingerprint(git_repo)
    assert tree_fingerprint(git_repo) == before
    _touch_later(git_repo / "README.md")
    assert tree_fingerprint(git_repo) == before
    (git_repo / "README.md").write_text("fixture\nmore\n")
    assert tree_fingerprint(git_repo) != before


def test_an_edit_that_keeps_size_and_comes_right_after_is_seen(git_repo):
    path = git_repo / "README.md"
    path.write_text("aaaa\n")
    first = tree_fingerprint(git_repo)
    path.write_text("bbbb\n")  # same size, same second: only the content differs
    assert tree_fingerprint(git_repo) != first


def test_a_cached_hash_is_not_reused_after_an_edit(git_repo):
    path = git_repo / "README.md"
    old = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(old, old))  # old enough to be cached
    first = tree_fingerprint(git_repo)
    path.write_text("fixturX\n")  # same size: only the mtime tells the cache it changed
    assert tree_fingerprint(git_repo) != first


def test_untracked_files_count_and_ignored_ones_do_not(git_repo):
    (git_repo / ".gitignore").write_text("build/\n*.log\n")
    base = tree_fingerprint(git_repo)
    (git_repo / "debug.log").write_text("noise")
    (git_repo / "build").mkdir()
    (git_repo / "build" / "out.bin").write_bytes(b"\x00" * 100)
    assert tree_fingerprint(git_repo) == base
    (git_repo / "new_module.py").write_text("x = 1\n")
    assert tree_fingerprint(git_repo) != base


def test_a_deleted_tracked_file_changes_it(git_repo):
    (git_repo / "a.py").write_text("a\n")
    git(git_repo, "add", "a.py")
    git(git_repo, "commit", "-q", "-m", "a")
    before = tree_fingerprint(git_repo)
    (git_repo / "a.py").unlink()
    assert tree_fingerprint(git_repo) != before


def test_a_rename_changes_it(git_repo):
    before = tree_fingerprint(git_repo)
    (git_repo / "README.md").rename(git_repo / "README.txt")
    assert tree_fingerprint(git_repo) != before


def test_a_big_tree_hashes_as_its_whole_text_does(tmp_path):
    """The fingerprint is hashed a part at a time (tree.py): it is still the sha256 of the paths, two NULs and the
    content ids, as one text, over a tree of more files than one part takes (and a path and a link's target that
    are not UTF-8)."""
    names = [f"d{i % 3}/m{i:05d}.py" for i in range(20_000)] + ["d0/caf\udce9.py"]
    for folder in ("d0", "d1", "d2", "d0/__pycache__"):
        (tmp_path / folder).mkdir()
    for n, name in enumerate(names):
        (tmp_path / name).write_bytes(b"%d\n" % (n % 5))
    (tmp_path / "d0/__pycache__/m00000.cpython-311.pyc").write_bytes(b"left out")
    ids = {name: hashlib.sha256(b"%d\n" % (n % 5)).hexdigest() for n, name in enumerate(names)}
    os.symlink("caf\udce9", tmp_path / "d1/link")
    names.append("d1/link")
    ids["d1/link"] = "link:caf\udce9"
    text = "\0".join(sorted(names)) + "\0\0" + "\0".join(ids[name] for name in sorted(names))
    assert tree_fingerprint(tmp_path) == hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def test_outside_git_the_folder_is_walked_without_dependency_folders(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    base = tree_fingerprint(tmp_path)
    for skipped in ("node_modules", ".venv", "__pycache__", ".git"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x").write_text("ignored")
    assert tree_fingerprint(tmp_path) == base
    _touch_later(tmp_path / "src" / "app.py")
    assert tree_fingerprint(tmp_path) == base
    (tmp_path / "src" / "app.py").write_text("print(2)\n")
    assert tree_fingerprint(tmp_path) != base


def test_same_content_in_two_folders_gives_the_same_fingerprint(tmp_path):
    for name in ("one", "two"):
        (tmp_path / name / "pkg").mkdir(parents=True)
        (tmp_path / name / "pkg" / "m.py").write_text("x = 1\n")
    assert tree_fingerprint(tmp_path / "one") == tree_fingerprint(tmp_path / "two")


def test_head_commit(git_repo, tmp_path):
    head = head_commit(git_repo)
    assert head == git(git_repo, "rev-parse", "HEAD").strip()
    assert len(head) == 40
    assert head_commit(tmp_path) is None


def test_diff_stat_lists_changes_and_untracked_files(git_repo):
    base = head_commit(git_repo)
    (git_repo / "README.md").write_text("fixture\nchanged\n")
    (git_repo / "new.txt").write_text("n\n")
    stat = diff_stat(git_repo, base)
    assert "README.md" in stat
    assert "1 file changed" in stat
    assert "1 untracked file(s): new.txt" in stat
    assert diff_stat(git_repo, None) == stat  # HEAD is the base


def test_diff_stat_is_bounded_and_empty_outside_git(git_repo, tmp_path):
    for i in range(400):
        (git_repo / f"generated_file_with_a_long_name_{i:04}.txt").write_text("x")
    stat = diff_stat(git_repo, None)
    assert len(stat) <= 2048
    assert stat.endswith("(truncated)")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert diff_stat(outside, None) == ""


def test_diff_stat_against_a_missing_commit_says_so(git_repo):
    assert "no diff against 0000000" in diff_stat(git_repo, "0000000")


def test_hash_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"\x00\xffdata")
    assert hash_file(path) == hashlib.sha256(b"\x00\xffdata").hexdigest()
    assert hash_file(tmp_path / "missing") is None
    assert hash_file(tmp_path) is None


def test_bytecode_and_tool_caches_are_no_change_to_the_tree(git_repo):
    # A maker that only ran the tests (bytecode written, pytest's cache, a coverage data file) changed nothing.
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (git_repo / "test_calc.py").write_text("import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n")
    before = tree_fingerprint(git_repo)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cacheprovider"], cwd=git_repo, env=env, check=True,
                   capture_output=True)
    assert list(git_repo.glob("__pycache__/*.pyc")) and (git_repo / ".pytest_cache").is_dir()
    for rel in (".coverage", ".coverage.host.123", "pkg/.mypy_cache/x.json", ".ruff_cache/a", "old.pyc"):
        (git_repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (git_repo / rel).write_text("cache")
    assert tree_fingerprint(git_repo) == before
    (git_repo / "coverage.py").write_text("x = 1\n")  # a source file named like the tool still counts
    assert tree_fingerprint(git_repo) != before


def test_the_fingerprint_is_each_file_by_path_and_blob_with_caches_and_bytecode_left_out(git_repo):
    """What it hashes, rebuilt here from git's own listing: found by one search of all the paths joined, a cache
    path is left out wherever it sits among the others, and a path that only looks like one is kept."""
    caches = {"pkg/__pycache__/a.cpython-311.pyc": "pyc", ".coverage": "data", "pkg/.coverage.host.1": "data",
              "htmlcov/index.html": "<p>", "pkg/b.pyc": "pyc", ".hypothesis/db": "h", "cov/coverage.xml": "<c/>"}
    lookalikes = {"a.py": "x = 1\n", "src/coverage_tools.py": "y = 2\n", "docs/lcov.info.md": "notes",
                  "z.py": "z = 3\n", "pyc.txt": "p"}
    for rel, text in {**caches, **lookalikes}.items():
        (git_repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (git_repo / rel).write_text(text)
    git(git_repo, "add", "-A")
    blobs = {line.split("\t")[1]: line.split()[1] for line in subprocess.run(
        ["git", "ls-files", "-s"], cwd=git_repo, capture_output=True, text=True, check=True).stdout.splitlines()}
    assert set(caches) | set(lookalikes) <= set(blobs)
    kept = sorted(rel for rel in blobs if rel not in caches)
    text = "\0".join(kept) + "\0\0" + "\0".join(blobs[rel] for rel in kept)
    assert tree_fingerprint(git_repo) == hashlib.sha256(text.encode()).hexdigest()
