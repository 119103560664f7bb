"""The snapshot's index of the tree is kept between snapshots and trusted only where git's stat data can vouch."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

from goal_convergence.vcs import snapshot, tree
from tests.conftest import git

OLD = 1_000_000_000 * 10**9  # 2001: an mtime a maker sets back to


def _rewrite_keeping_stat(path, text: str) -> None:
    """The same size, the mtime set back to what it was: only the ctime (kept to the second by git) moved."""
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _start_of_a_second() -> None:
    while time.time() % 1 > 0.2:
        time.sleep(0.01)


def test_the_index_is_kept_and_only_what_changed_is_listed_as_changed(git_repo, tmp_path):
    state = tmp_path / "home" / "indexes" / "goal-x"
    for i in range(20):
        (git_repo / f"m{i}.py").write_text(f"x = {i}\n")
    with snapshot.session(git_repo, state):
        first = tree.tree_fingerprint(git_repo)
        assert state.is_file()
        time.sleep(RACY_WAIT)
        snapshot.take(git_repo).ids  # noqa: B018 - settles the files written in the last seconds
        (git_repo / "m3.py").write_text("x = 33\n")
        snap = snapshot.take(git_repo)
        assert snap.changed == {"m3.py"}
        assert tree.tree_fingerprint(git_repo) != first
    assert tree.tree_fingerprint(git_repo) != first  # a fresh index outside the session agrees


RACY_WAIT = snapshot.RACY_SECONDS + 0.5


def test_a_rewrite_within_the_second_with_the_mtime_set_back_is_seen(git_repo, tmp_path):
    path = git_repo / "calc.py"
    path.write_text("answer = 1\n")
    os.utime(path, ns=(OLD, OLD))
    git(git_repo, "add", "calc.py")
    git(git_repo, "commit", "-q", "-m", "calc")
    time.sleep(RACY_WAIT)
    state = tmp_path / "indexes" / "goal-y"
    with snapshot.session(git_repo, state):
        _start_of_a_second()
        path.write_text("answer = 2\n")
        os.utime(path, ns=(OLD, OLD))
        before = tree.tree_fingerprint(git_repo)  # records calc.py within the second it was written
        _rewrite_keeping_stat(path, "answer = 3\n")  # git's stat data, to the second, cannot tell
        assert tree.tree_fingerprint(git_repo) != before
        path.write_text("answer = 2\n")
        os.utime(path, ns=(OLD, OLD))
        assert tree.tree_fingerprint(git_repo) == before


def test_the_watch_sees_a_file_swapped_and_back_within_the_second(git_repo, tmp_path):
    path = git_repo / "calc.py"
    path.write_text("answer = 1\n")
    git(git_repo, "add", "calc.py")
    git(git_repo, "commit", "-q", "-m", "calc")
    with snapshot.session(git_repo, tmp_path / "indexes" / "goal-z"):
        _start_of_a_second()
        began = time.time_ns()
        there = set(snapshot.take(git_repo).ids)
        _rewrite_keeping_stat(path, "answer = 2\n")
        _rewrite_keeping_stat(path, "answer = 1\n")  # back as it was: the content tells nothing
        assert tree.changed_since(git_repo, began, there) == ["calc.py"]


def test_a_damaged_index_of_ours_is_begun_again(git_repo, tmp_path):
    state = tmp_path / "indexes" / "goal-w"
    with snapshot.session(git_repo, state):
        good = tree.tree_fingerprint(git_repo)
        state.write_bytes(b"not an index")
        assert tree.tree_fingerprint(git_repo) == good
    # Thrown away as not vouched for, though git failed on it too: begun again from none, not from the user's index.
    assert _logged().endswith("its sealed entries do not vouch for it: the whole tree is hashed again")


def test_files_over_the_checkpoint_limit_are_hashed_not_stored(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("GOAL_CONVERGENCE_CHECKPOINT_MAX_MB", "1")
    (git_repo / "big.bin").write_bytes(b"\1" * (2 << 20))
    snap = snapshot.take(git_repo)
    assert snap.tree is None and "above the 1 MB" in (snap.off or "")
    assert "big.bin" in snap.ids
    before = tree.tree_fingerprint(git_repo)
    (git_repo / "big.bin").write_bytes(b"\2" * (2 << 20))
    assert tree.tree_fingerprint(git_repo) != before


def test_an_index_forged_behind_the_goals_back_is_thrown_away_and_the_tree_hashed_again(git_repo, tmp_path):
    """The maker tells the kept index to stop looking at a file (git's assume-unchanged bit), then edits it:
    without the seal, the fingerprint would keep the file's old content."""
    state = tmp_path / "home" / "indexes" / "goal-z"
    path = git_repo / "calc.py"
    path.write_text("answer = 1\n")
    with snapshot.session(git_repo, state):
        tree.tree_fingerprint(git_repo)
        time.sleep(RACY_WAIT)
        before = tree.tree_fingerprint(git_repo)  # calc.py settled: no longer hashed again by its ctime
        subprocess.run(["git", "update-index", "--assume-unchanged", "calc.py"], cwd=git_repo, check=True,
                       env={**os.environ, "GIT_INDEX_FILE": str(state)})
        path.write_text("answer = 2\n")
        assert tree.tree_fingerprint(git_repo) != before
        path.write_text("answer = 1\n")
        assert tree.tree_fingerprint(git_repo) == before  # the index written anew is sealed and used again


def _git_commands(trace) -> list[str]:
    """The git commands git's trace saw, each from its subcommand on (our safety options left out)."""
    found = []
    for line in trace.read_text().splitlines():
        if " start " in line and "--no-pager" in line:
            found.append(line.split("--no-pager", 1)[-1].strip())
    trace.write_text("")
    return found


_HASHING = ("add", "update-index")  # the git commands that hash files into the index


def _listing(command: str) -> str | None:
    """Of a listing of the index's entries (as keptindex.FORMAT asks for them), the paths named ("all": none)."""
    if not command.startswith("ls-files -z") or "--format" not in command:
        return None
    return command.partition(" -- ")[2] or "all"


def test_a_later_snapshot_in_the_process_asks_git_only_about_what_changed(git_repo, tmp_path):
    """The index is parsed once a process; after that only the paths git hashed again are asked for, and a
    racy file whose bytes are the index's blob is not handed back to git."""
    trace = tmp_path / "trace"
    for i in range(30):
        (git_repo / f"m{i}.py").write_text(f"x = {i}\n")
    with snapshot.session(git_repo, tmp_path / "home" / "indexes" / "goal-t"):
        first = tree.tree_fingerprint(git_repo)  # every file new and racy, hashed by git
        git(git_repo, "config", "--global", "trace2.normalTarget", str(trace))  # git's own record of each call
        assert tree.tree_fingerprint(git_repo) == first
        calls = _git_commands(trace)
        assert not [c for c in calls if _listing(c) or c.startswith(_HASHING)], calls  # bytes compared here
        (git_repo / "m3.py").write_text("x = 33\n")
        changed = tree.tree_fingerprint(git_repo)
        calls = _git_commands(trace)
        assert [_listing(c) for c in calls if _listing(c)] == ["m3.py"], calls
    assert changed != first and tree.tree_fingerprint(git_repo) == changed  # a fresh parse agrees


def test_the_files_added_since_a_tree_are_the_same_from_the_index_and_from_the_checkpoints_tree(git_repo, tmp_path):
    """Before the snapshot's tree is written, git compares the index with the start tree; after, the two trees,
    reading only the folders they differ in. Both name the files under the project's folder that are new."""
    trace, project = tmp_path / "trace", git_repo / "app"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "old.py").write_text("x = 1\n")
    start = snapshot.take(project).tree
    assert start is not None
    (project / "pkg" / "new.py").write_text("y = 1\n")
    (project / "pkg" / "old.py").write_text("x = 2\n")  # changed, not added
    (project / "more" / "deep").mkdir(parents=True)
    (project / "more" / "deep" / "t.py").write_text("z = 1\n")
    (git_repo / "outside.py").write_text("w = 1\n")  # not the project's
    git(git_repo, "config", "--global", "trace2.normalTarget", str(trace))
    try:
        from_index = snapshot.take(project).added_since(start)
        later = snapshot.take(project)
        assert later.tree is not None
        from_trees = later.added_since(start)
        calls = [c.split()[0] for c in _git_commands(trace) if c.startswith(("diff-index", "diff-tree"))]
    finally:
        git(git_repo, "config", "--global", "--unset", "trace2.normalTarget")
    assert from_index == from_trees == {"pkg/new.py", "more/deep/t.py"}
    assert calls == ["diff-index", "diff-tree"]


def test_a_new_process_reads_the_kept_entries_and_trusts_them_only_as_sealed_for_that_index(git_repo, tmp_path):
    """The next process takes the index's entries from the sealed file beside it (the changes since a base that
    file names by its digest), not from git's listing. Entries sealed without the home's key, a base whose bytes
    are not those of its digest, or an index written since (the same bytes copied back), are not trusted: the
    index is begun again and the tree hashed by git."""
    import json
    import marshal

    from goal_convergence.system import seal
    from goal_convergence.vcs import keptindex

    trace, home = tmp_path / "trace", tmp_path / "home"
    state = home / "indexes" / "goal-e"
    kept = state.with_name(state.name + ".entries")
    for i in range(30):
        (git_repo / f"m{i}.py").write_text(f"x = {i}\n")
    with snapshot.session(git_repo, state):
        tree.tree_fingerprint(git_repo)
    time.sleep(RACY_WAIT)
    with snapshot.session(git_repo, state):
        first = tree.tree_fingerprint(git_repo)  # the racy files settled: the entries kept now are all vouched for
    blob_then = _kept_entries(state)["m3.py"]

    def next_process() -> tuple[str, list[str]]:
        keptindex._known.clear()  # a new process knows nothing
        git(git_repo, "config", "--global", "trace2.normalTarget", str(trace))
        try:
            with snapshot.session(git_repo, state):
                return tree.tree_fingerprint(git_repo), _git_commands(trace)
        finally:
            git(git_repo, "config", "--global", "--unset", "trace2.normalTarget")

    found, calls = next_process()
    assert found == first and not [c for c in calls if _listing(c) or c.startswith(_HASHING)], calls
    (git_repo / "m3.py").write_text("x = 33\n")
    time.sleep(RACY_WAIT)
    found, calls = next_process()
    assert found != first and [_listing(c) for c in calls if _listing(c)] == ["m3.py"], calls
    # Entries that hide the change (m3.py's old blob kept), for the index as it is now:
    mac, head, dumped = kept.read_bytes().split(b"\n", 2)
    changes = marshal.loads(dumped)
    assert "m3.py" in changes and len(changes) < 30  # the change is kept, not every entry again
    forged = marshal.dumps({**changes, "m3.py": blob_then})

    def forge(with_key: bool) -> None:
        mac = seal.mac_of_bytes(home, f"indexes/{kept.name}", head, forged) if with_key else "0" * 64
        kept.write_bytes(mac.encode() + b"\n" + head + b"\n" + forged)

    forge(with_key=True)
    assert next_process()[0] == first  # what the sealed entries say is what is read
    forge(with_key=False)
    truth, calls = next_process()
    assert truth == found and any(c.startswith(_HASHING) for c in calls), calls  # begun again, hashed by git
    assert _logged().endswith("its sealed entries do not vouch for it: the whole tree is hashed again")
    # The base forged instead, under the name the sealed file gives it:
    base = state.with_name(state.name + ".base-" + json.loads(kept.read_bytes().split(b"\n", 2)[1])[2][:16])
    base.write_bytes(marshal.dumps({**marshal.loads(base.read_bytes()), "m3.py": blob_then}))
    truth, calls = next_process()
    assert truth == found and any(c.startswith(_HASHING) for c in calls), calls
    assert _logged().endswith("its sealed entries do not vouch for it: the whole tree is hashed again")
    # The index written again since, with the same bytes: its stat data moved, so its sealed entries do not vouch.
    index = state.read_bytes()
    state.unlink()
    state.write_bytes(index)
    truth, calls = next_process()
    assert truth == found and any(c.startswith(_HASHING) for c in calls), calls
    # An index kept by a version before the sealed entries has none: begun again, and the log says so, not forgery.
    kept.unlink()
    truth, calls = next_process()
    assert truth == found and any(c.startswith(_HASHING) for c in calls), calls
    assert "it has no sealed entries beside it (kept by an earlier version" in _logged()
    # Entries sealed whole, as a version before the base kept them: begun again, and the log says so.
    sig = json.loads(kept.read_bytes().split(b"\n", 2)[1])[0]
    head, whole = json.dumps([sig, []]).encode(), marshal.dumps(_kept_entries(state))
    kept.write_bytes(seal.mac_of_bytes(home, f"indexes/{kept.name}", head, whole).encode() + b"\n" + head + b"\n"
                     + whole)
    truth, calls = next_process()
    assert truth == found and any(c.startswith(_HASHING) for c in calls), calls
    assert _logged().endswith("its sealed entries were kept by an earlier version: the whole tree is hashed again")


def test_the_entries_kept_are_the_changes_since_a_base_dumped_again_once_they_are_many(git_repo, tmp_path):
    import json
    import marshal

    from goal_convergence.vcs import keptindex

    state = tmp_path / "home" / "indexes" / "goal-b"
    kept = state.with_name(state.name + ".entries")
    for i in range(2200):
        (git_repo / f"m{i}.py").write_text(f"x = {i}\n")
    time.sleep(RACY_WAIT)

    def edit(files: range) -> tuple[str, dict[str, str | None]]:
        for i in files:
            (git_repo / f"m{i}.py").write_text(f"x = {i} + 1\n")
        keptindex._known.clear()  # a new process knows nothing
        with snapshot.session(git_repo, state):
            snapshot.take(git_repo).tree  # noqa: B018 - what an iteration's checkpoint writes
        _, head, dumped = kept.read_bytes().split(b"\n", 2)
        return json.loads(head)[2], marshal.loads(dumped)

    first, changes = edit(range(0))  # begun: every entry in the base
    assert changes == {}
    assert edit(range(1100)) == (first, {f"m{i}.py": _blob(git_repo / f"m{i}.py") for i in range(1100)})
    (git_repo / "m0.py").unlink()
    assert edit(range(0))[1]["m0.py"] is None  # a file gone: its entry too
    again, changes = edit(range(1100, 2200))  # 2,201 changes in all: past the bound, dumped whole again
    assert again != first and changes == {}
    assert [p.name for p in state.parent.iterdir() if ".base-" in p.name] == [f"goal-b.base-{again[:16]}"]
    keptindex._known.clear()
    with snapshot.session(git_repo, state):
        ids = dict(snapshot.take(git_repo).ids)
    assert ids == dict(snapshot.take(git_repo).ids) and "m0.py" not in ids  # a fresh index outside agrees


def _blob(path) -> str:
    return subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()


def _kept_entries(state) -> dict[str, str]:
    """The entries a goal's index keeps beside it: its base, and the changes since, which the sealed file holds."""
    import json
    import marshal

    _, head, dumped = state.with_name(state.name + ".entries").read_bytes().split(b"\n", 2)
    base = state.with_name(state.name + ".base-" + json.loads(head)[2][:16])
    return {**marshal.loads(base.read_bytes()), **marshal.loads(dumped)}


def _logged() -> str:
    """The last line of the home's log."""
    from goal_convergence.system.log import log_path

    return log_path().read_text(encoding="utf-8").rstrip().splitlines()[-1]


def test_a_repository_config_cannot_turn_off_the_stat_checks_the_kept_index_leans_on(git_repo, tmp_path):
    """A maker writes .git/config: ctime not trusted, only mtime and size looked at, or no look at all. A file
    rewritten with its size kept and its mtime set back must still be seen."""
    for key, value in (("core.trustctime", "false"), ("core.checkStat", "minimal"), ("core.ignoreStat", "true")):
        git(git_repo, "config", key, value)
    path = git_repo / "calc.py"
    path.write_text("answer = 1\n")
    with snapshot.session(git_repo, tmp_path / "indexes" / "goal-c"):
        tree.tree_fingerprint(git_repo)
        time.sleep(RACY_WAIT)
        before = tree.tree_fingerprint(git_repo)  # calc.py settled: its stat data vouches for it now
        _rewrite_keeping_stat(path, "answer = 2\n")
        assert tree.tree_fingerprint(git_repo) != before


def test_a_goal_begun_right_after_the_users_index_was_written_does_not_trust_its_last_second(git_repo, tmp_path):
    """The user's index recorded calc.py in the second it was written; a same-size rewrite in that second, with
    the mtime set back, keeps its stat data. The goal's index, begun from the user's, hashes it again."""
    path = git_repo / "calc.py"
    path.write_text("answer = 1\n")
    git(git_repo, "add", "calc.py")
    git(git_repo, "commit", "-q", "-m", "calc")
    _start_of_a_second()
    path.write_text("answer = 2\n")
    os.utime(path, ns=(OLD, OLD))
    git(git_repo, "add", "calc.py")  # the user's index, written now, records it
    _rewrite_keeping_stat(path, "answer = 3\n")
    blob = subprocess.run(["git", "hash-object", "calc.py"], cwd=git_repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    with snapshot.session(git_repo, tmp_path / "home" / "indexes" / "goal-s"):
        assert snapshot.take(git_repo).ids["calc.py"] == blob


def test_outside_git_the_digests_are_kept_between_processes_and_trusted_only_under_the_seal(tmp_path):
    """A folder outside git is hashed by its bytes; a goal's session keeps the digests, sealed, beside its index,
    so the next process reads only the files whose stat data moved. A kept file forged without the home's key
    is not read."""
    import json

    from goal_convergence.system import seal
    from goal_convergence.vcs import filehash

    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    for i in range(5):
        (project / f"m{i}.py").write_text(f"x = {i}\n")
        os.utime(project / f"m{i}.py", ns=(OLD, OLD))
    time.sleep(RACY_WAIT)  # old enough that their stat data vouches for them
    state = home / "indexes" / "goal-n"
    with snapshot.session(project, state):
        real = snapshot.take(project).ids
    kept = state.with_name(state.name + ".hashes")
    rows = json.loads(kept.read_bytes())
    assert sorted(r[0] for r in rows) == sorted(str(project.resolve() / f"m{i}.py") for i in range(5))

    def next_process(forged_rows, with_key: bool) -> dict[str, str]:
        data = json.dumps(forged_rows).encode()
        kept.write_bytes(data)
        mac = seal.mac_of_bytes(home, f"indexes/{kept.name}", data) if with_key else "0" * 64
        kept.with_name(kept.name + ".mac").write_text(mac + "\n")
        filehash._cache.clear()  # a new process knows nothing
        with snapshot.session(project, state):
            return snapshot.take(project).ids

    forged = [[*row[:-1], "f" * 64] if row[0].endswith("m1.py") else row for row in rows]
    assert next_process(forged, with_key=True)["m1.py"] == "f" * 64  # the kept digest is what is read
    assert next_process(forged, with_key=False) == real  # without the seal, the bytes are read again


def test_a_fifo_in_a_files_place_is_refused_not_waited_on(tmp_path):
    """A maker's process can swap a FIFO in for a file between a stat and the read: hashing it must not wait
    for a writer that never comes (a Stop would hang until its timeout)."""
    import threading

    from goal_convergence.vcs import filehash, keptindex

    fifo = tmp_path / "calc.py"
    os.mkfifo(fifo)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.extend([filehash.hash_file(fifo),
                                                         keptindex.blob_id(str(fifo), "0" * 40)]), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and got == [None, None]


def test_the_index_listing_reads_the_same_in_either_form_and_with_a_git_before_2_38(git_repo, tmp_path, monkeypatch):
    """git 2.38 on lists the index in a format split in C; an older git (its usage error for the option) is read
    as `ls-files -s` prints it. Both give each entry's content id: a file's blob, a link marked, a submodule a
    folder."""
    from goal_convergence.vcs import keptindex

    def listed() -> dict[bool, dict[str, str]]:
        return {form: keptindex.parse(subprocess.run(["git", "ls-files", "-z", *args], cwd=git_repo, check=True,
                                                     capture_output=True).stdout, formatted=form)
                for form, args in ((True, [keptindex.FORMAT]), (False, ["-s"]))}

    (git_repo / "run.sh").write_text("echo\n")
    (git_repo / "run.sh").chmod(0o755)
    (git_repo / "tab\tand\nnewline é.py").write_text("x = 1\n")
    git(git_repo, "add", "-A")
    regular = listed()  # regular files only: the ids taken whole, no step a file
    assert regular[True] == regular[False] and len(regular[True]["run.sh"]) == 40
    os.symlink("run.sh", git_repo / "link")
    inner = git_repo / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    git(inner, "commit", "-q", "--allow-empty", "-m", "inner")
    git(git_repo, "add", "-A")
    found = listed()
    assert found[True] == found[False]
    assert found[True]["link"].startswith("link:") and found[True]["inner"] == "dir"
    assert len(found[True]["run.sh"]) == 40 and "tab\tand\nnewline é.py" in found[True]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(f'#!/bin/sh\nfor a; do case "$a" in --format=*) echo "error: unknown option" >&2; '
                              f'exit 129;; esac; done\nexec {shutil.which("git")} "$@"\n')
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(snapshot, "_OLD_GIT", False)
    assert snapshot.take(git_repo).ids == {**found[True]}
    assert snapshot._OLD_GIT


def test_a_listing_of_many_parts_reads_as_ls_files_s_does(git_repo, tmp_path):
    """A big index's listing is split a megabyte at a time, each cut where an entry begins: paths that are six
    octal digits as a mode is, that look like an id, that hold tabs, newlines or bytes that are not UTF-8, links
    and submodules read as `git ls-files -s` gives them, over several parts."""
    from goal_convergence.vcs import keptindex

    blob, commit = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", git(git_repo, "rev-parse", "HEAD").strip()
    odd = ["100644", blob, f"100644\n{blob}", "tab\tand\nnewline", "caf\udce9", "x 120000", "plain"]

    def path(i: int) -> str:  # a third of them six octal digits at the top, as a mode is
        return f"{i:06o}" if i % 3 == 0 else f"d{i % 50}/{odd[i % len(odd)]}{i}"

    def entry(i: int) -> str:
        return "120000 " + blob if i % 997 == 0 else "160000 " + commit if i % 991 == 0 else "100644 " + blob

    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "big-index")}
    subprocess.run(["git", "update-index", "-z", "--index-info"], cwd=git_repo, env=env, check=True,
                   input=b"".join(f"{entry(i)}\t{path(i)}\0".encode("utf-8", "surrogateescape") for i in range(60_000)))

    def listing(*args: str) -> bytes:
        return subprocess.run(["git", "ls-files", "-z", *args], cwd=git_repo, env=env, check=True,
                              capture_output=True).stdout

    whole = listing(keptindex.FORMAT)
    assert len(whole) > 3 * keptindex._PART
    found = keptindex.parse(whole, formatted=True)
    assert len(found) == 60_000 and found == keptindex.parse(listing("-s"), formatted=False)
    assert found[path(997)] == f"link:{blob}" and found[path(991)] == "dir" and found[path(10)] == blob
    assert found["000000"] == f"link:{blob}" and path(10) == "d10/tab\tand\nnewline10"


def test_files_turned_into_folders_and_links_are_taken_as_git_add_takes_them(git_repo, tmp_path):
    """The changed files are hashed into the goal's index one by one (`git update-index`): a file that became a
    folder, a folder that became a file, and a file that became a link give the ids `git add -A` gives."""
    from goal_convergence.vcs import keptindex

    def as_git_adds_them() -> dict[str, str]:
        env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "fresh-index")}
        subprocess.run(["git", "add", "-A"], cwd=git_repo, env=env, check=True)
        return keptindex.parse(subprocess.run(["git", "ls-files", "-z", keptindex.FORMAT], cwd=git_repo, env=env,
                                              check=True, capture_output=True).stdout, formatted=True)

    (git_repo / "d").mkdir()
    (git_repo / "d" / "x.py").write_text("x = 1\n")
    (git_repo / "a.py").write_text("a = 1\n")
    (git_repo / "b.py").write_text("b = 1\n")
    state = tmp_path / "home" / "indexes" / "goal-t"
    with snapshot.session(git_repo, state):
        assert snapshot.take(git_repo).ids == as_git_adds_them()
    (git_repo / "a.py").unlink()
    (git_repo / "a.py").mkdir()
    (git_repo / "a.py" / "inner.py").write_text("inner = 1\n")
    shutil.rmtree(git_repo / "d")
    (git_repo / "d").write_text("now a file\n")
    (git_repo / "b.py").unlink()
    os.symlink("a.py", git_repo / "b.py")
    with snapshot.session(git_repo, state):
        taken = snapshot.take(git_repo)
        assert taken.ids == as_git_adds_them() and not taken.off
    assert "a.py/inner.py" in taken.ids and taken.ids["b.py"].startswith("link:") and "d/x.py" not in taken.ids
