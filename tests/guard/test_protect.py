from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_convergence.errors import InvalidInput
from goal_convergence.guard import protect, syspath
from goal_convergence.models import StoppingCondition
from goal_convergence.vcs import tree

FILES = ["README.md", "calc.py", "setup.py", "tests/test_calc.py", "tests/data/case.json", "tests/unit/test_deep.py",
         "src/pkg/core.py", "src/pkg/mod.py", "docs/guide.md", "docs/api/index.md", "tests_old/notes.txt"]


def write(root, rel, text="x\n"):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_check_defining_files_are_the_named_ones_protected_ones_configs_and_tests(git_repo):
    write(git_repo, ".gitignore", "node_modules/\n.venv/\n")
    for rel in ("tests/test_api.py", "tests/fixtures/data.json", "pkg/tests/helpers.py", "pkg/api_test.go",
                "web/app.test.ts", "web/app.spec.jsx", "src/test_utils.py", "conftest.py", "pyproject.toml",
                "package.json", "jest.config.js", ".eslintrc.json", "Makefile", "scripts/check.sh", "custom.ini",
                "src/app.py", "docs/guide.md", "node_modules/dep/test_x.py", ".venv/lib/test_y.py"):
        write(git_repo, rel)
    conditions = [StoppingCondition(type="custom_command", command="bash ./scripts/check.sh --fast"),
                  StoppingCondition(type="test_pass", command="pytest -c custom.ini ../elsewhere.ini")]
    found = protect.check_defining(git_repo, tree.list_files(git_repo), conditions, ["docs/*.md"])
    # the commands' files first, then --protect, configs, tests
    assert found[:3] == ["scripts/check.sh", "custom.ini", "docs/guide.md"]
    assert {"conftest.py", "pyproject.toml", "package.json", "jest.config.js", ".eslintrc.json", "Makefile",
            "tests/test_api.py", "tests/fixtures/data.json", "pkg/tests/helpers.py", "pkg/api_test.go",
            "web/app.test.ts", "web/app.spec.jsx", "src/test_utils.py"} <= set(found)
    assert not {"src/app.py", "node_modules/dep/test_x.py", ".venv/lib/test_y.py", "README.md"} & set(found)


@pytest.mark.parametrize(("pattern", "expected"), [
    ("tests/**", ["tests/test_calc.py", "tests/data/case.json", "tests/unit/test_deep.py"]),
    ("tests", ["tests/test_calc.py", "tests/data/case.json", "tests/unit/test_deep.py"]),
    ("tests/", ["tests/test_calc.py", "tests/data/case.json", "tests/unit/test_deep.py"]),
    ("*.py", ["calc.py", "setup.py"]),  # the root's only, unlike fnmatch
    ("/calc.py", ["calc.py"]),
    ("./calc.py", ["calc.py"]),
    ("**/*.py", ["calc.py", "setup.py", "tests/test_calc.py", "tests/unit/test_deep.py", "src/pkg/core.py",
                 "src/pkg/mod.py"]),
    ("tests/*.py", ["tests/test_calc.py"]),
    ("tests/**/*.py", ["tests/test_calc.py", "tests/unit/test_deep.py"]),
    ("docs/**/*.md", ["docs/guide.md", "docs/api/index.md"]),
    ("src/pkg/[cm]*.py", ["src/pkg/core.py", "src/pkg/mod.py"]),
    ("src/pkg/[!c]*.py", ["src/pkg/mod.py"]),
    ("calc.p?", ["calc.py"]),
    ("test", []),  # a folder's name is not a prefix of another's (tests_old, tests)
])
def test_protect_patterns_start_at_the_root_like_gitignore(pattern, expected):
    assert protect.protected_by(FILES, [pattern]) == expected


def test_a_pattern_that_matches_nothing_is_refused_with_how_to_write_one(tmp_path):
    with pytest.raises(InvalidInput) as exc:
        protect.check_patterns(tmp_path, FILES, ["tests/**", "test/**"])
    message = str(exc.value)
    assert "'test/**' matches no file" in message and "'**/*.py' every .py file" in message
    protect.check_patterns(tmp_path, FILES, ["tests/**", "**/*.md"])  # both match: no error
    with pytest.raises(InvalidInput, match="names no file"):
        protect.check_patterns(tmp_path, FILES, ["/"])


@pytest.mark.parametrize("rel", [
    "conftest.py", "pkg/sub/conftest.py", "sitecustomize.py", "lib/usercustomize.py", "evil.pth", "deep/x.pth",
    "pytest.py", "unittest.py", "_pytest/__init__.py", "src/json.py", "pytest.ini", "pkg/tox.ini", "setup.cfg",
    "tests/calc.py", "tests/__init__.py", "tests/data/new.json", "pkg/test_new.py", "web/new.test.js",
    "vitest.config.ts", ".cargo/config.toml", "Makefile", "src/__snapshots__/app.test.js.snap",
    "pkg/testdata/golden.txt",
])
def test_files_that_change_what_the_checks_do_are_sensitive(rel):
    assert protect.sensitive([rel], []) == [rel]


@pytest.mark.parametrize("rel", ["calc.py", "src/pkg/core.py", "lib/pytest.py", "docs/json.md", "pkg/json.py",
                                 "README.md", "notes/testing_plan.md"])
def test_product_files_are_not_sensitive(rel):
    assert protect.sensitive([rel], []) == []


def test_files_a_protect_pattern_covers_are_sensitive_when_they_appear():
    assert protect.sensitive(["docs/new.md", "docs/deep/x.md", "other.md"], ["docs/*.md"]) == ["docs/new.md"]


def test_named_files_take_option_values_and_never_leave_the_root(git_repo):
    write(git_repo, "ci/pytest.cfg")
    write(git_repo, "run.sh")
    assert protect.named_files(git_repo, "bash run.sh && pytest --config-file=ci/pytest.cfg ../outside.sh "
                                         "/etc/passwd 'unbalanced") == ["run.sh", "ci/pytest.cfg"]


def test_the_sources_a_linter_or_build_reads_are_the_product_but_its_config_is_not(git_repo):
    for rel in ("src/app.py", "ci/ruff.toml", "run_checks.py"):
        write(git_repo, rel)
    conditions = [StoppingCondition(type="lint_clean", command="ruff check --config ci/ruff.toml src/app.py"),
                  StoppingCondition(type="build_pass", command="python -m py_compile src/app.py"),
                  StoppingCondition(type="custom_command", command="python run_checks.py")]
    found = protect.check_defining(git_repo, tree.list_files(git_repo), conditions, [])
    assert "ci/ruff.toml" in found and "run_checks.py" in found and "src/app.py" not in found


_SEGMENTS = st.sampled_from(["src", "tests", "pkg", "json", "lib", "__tests__", "dist-1.0.dist-info", ".cargo",
                             "spec", "docs"])
_NAMES = st.sampled_from(["conftest.py", "test_calc.py", "calc.py", "__init__.py", "json.py", "pytest.ini",
                          "entry_points.txt", "config.toml", "README.md", "x.pth", "a.test.js", "util.py",
                          "jest.config.ts", "Makefile", "os.py"])
_PATHS = st.lists(st.builds(lambda parts, name: "/".join([*parts, name]), st.lists(_SEGMENTS, max_size=3), _NAMES),
                  max_size=40, unique=True)


@settings(max_examples=150, deadline=None)
@given(before=_PATHS, added=_PATHS, removed=st.data(), patterns=st.sampled_from([[], ["docs/**"], ["**/*.md"]]))
def test_narrowing_from_the_start_answer_is_narrowing_the_whole_tree(before, added, removed, patterns):
    """The guard narrows each iteration from the start's answer and the files added since (integrity.inspect):
    for any trees, that is exactly narrow of the whole tree now."""
    gone = set(removed.draw(st.lists(st.sampled_from(before), unique=True))) if before else set()
    now = [rel for rel in before if rel not in gone] + [rel for rel in added if rel not in before]
    own, names = ["calc"], frozenset({"json", "os"})
    start = protect.narrow(before, patterns, own, names)
    fresh = set(now) - set(before)
    assert protect.renarrow(start, set(now), fresh, patterns, own, names) == \
        sorted(protect.narrow(now, patterns, own, names))
    assert protect.narrow(now, patterns, own, names) == [rel for rel in now if protect.narrow([rel], patterns, own,
                                                                                              names)]


def test_the_mark_of_the_names_looked_for_moves_when_a_name_is_added():
    assert protect.names_mark(frozenset({"json", "os"})) == protect.names_mark(frozenset({"os", "json"}))
    assert protect.names_mark(frozenset({"json", "os"})) != protect.names_mark(frozenset({"json", "os", "calc2"}))


def _narrow_one_path_at_a_time(files, patterns, own, shadowed):
    """protect.narrow as it was, a step of Python and a regex a path: what the passes over all paths must equal."""
    modules = shadowed | {o.rstrip("/").rsplit("/", 1)[-1] for o in own}
    regexes = [protect.pattern_regex(p) for p in patterns]
    found = []
    for rel in files:
        cut = rel.rfind("/")
        name, folder = rel[cut + 1:], rel[:cut + 1]
        if name.endswith(".py"):
            stem = name[:-3] if name != "__init__.py" else rel[rel.rfind("/", 0, cut) + 1:cut]
            if stem in modules:
                found.append(rel)
                continue
        if (protect._TEST_FOLDER.search(folder) or ("-info/" in folder and protect._METADATA.search(folder))
                or protect._NAMED.fullmatch(name) or rel.startswith(".cargo/config")
                or any(r.fullmatch(rel) for r in regexes)):
            found.append(rel)
    return found


_PIECES = st.sampled_from(["test_", "_test", ".test", ".spec", "test", ".py", ".pyc", ".pyd", ".pth", ".so", ".js",
                           ".ts", ".tsx", ".cjs", ".go", "x", "json", "os", "calc", "conftest", "__init__",
                           "__init__.py",
                           ".config.", "jest", "vitest", ".babelrc", ".eslintrc", "rc", ".snap", ".ambr", "Makefile",
                           "GNU", "make", "file", "-info", ".dist", ".egg", "pytest", ".ini", ".toml", "Cargo",
                           "pyproject", "tox", "setup", ".cfg", "package", "mod", "go", ".", "-", "*", "[", "]"])
_GLOBBED = st.builds(lambda glob, fill: glob.replace("*", fill), st.sampled_from(
    protect.CONFIG_NAMES + protect.PYTHON_HOOKS + protect.TEST_NAMES), st.text("ab._/", max_size=3))
_ANY_NAME = st.one_of(_GLOBBED, st.lists(_PIECES, min_size=1, max_size=4).map("".join), st.text(min_size=1, max_size=6)
                      .filter(lambda s: "/" not in s and "\0" not in s))
_FOLDERS = st.sampled_from(["tests", "test", "spec", "src", "a.dist-info", "b.egg-info", "-info", "x.dist-info",
                            ".cargo", "config", "pkg", "json", "os", "__snapshots__", "testing", "testdata", "xtests",
                            "tests_", "__tests__", "calc", "docs", "node_modules"])
_ANY_PATHS = st.lists(st.builds(lambda parts, name: "/".join([*parts, name]).strip("/") or "x",
                                st.lists(_FOLDERS, max_size=3), _ANY_NAME), max_size=30)


@settings(max_examples=400, deadline=None)
@given(files=_ANY_PATHS, own=st.lists(st.sampled_from(["calc", "src/pkg/", "json", "test_x", "a", "__init__/"]),
                                      max_size=3),
       shadowed=st.sets(st.sampled_from(["json", "os", "pytest", "conftest", "mod", "x", "calc", "go", "a.b", "test"])),
       patterns=st.sampled_from([[], ["docs/page1*"], ["**/*.md"], ["tests"], ["*.py", "src/*/x*"]]))
def test_narrow_over_all_paths_joined_picks_what_a_look_at_each_path_picks(files, own, shadowed, patterns):
    """narrow finds its few candidates by passes over all the paths joined, forwards and backwards (past
    ``protect.FEW`` paths; below, it looks at each): for any paths (duplicates and odd names too), the same list,
    in the same order, as the rule applied to each path alone."""
    many = [f"docs/page{i}.md" for i in range(protect.FEW)] + files  # picked by none of the rules
    for paths in (files, many):
        assert protect.narrow(paths, patterns, own, frozenset(shadowed)) == \
            _narrow_one_path_at_a_time(paths, patterns, own, frozenset(shadowed))


def _own_modules_one_path_at_a_time(files):
    """syspath.own_modules as it was, a step of Python a path."""
    found = set()
    for rel in files:
        if rel.count("/") > 2 or (rel.count("/") == 2 and not rel.startswith("src/")):
            continue
        spot = syspath.module(rel)
        if spot is None or spot[0] not in syspath.IMPORT_ROOTS or spot[1] in syspath._NOT_OWN or \
                syspath._COLLECTED.fullmatch(rel):
            continue
        found.add(spot[0] + spot[1] + ("/" if rel.endswith("/__init__.py") or rel == "__init__.py" else ""))
    return sorted(found)


_SHALLOW_PARTS = st.sampled_from(["src", "pkg", "__init__.py", "calc.py", ".py", "setup.py", "test_a.py", "x",
                                  "src/a.py"])


@settings(max_examples=400, deadline=None)
@given(files=_ANY_PATHS, more=st.lists(st.builds("/".join, st.lists(_SHALLOW_PARTS, min_size=1, max_size=4))))
def test_own_modules_over_all_paths_joined_are_what_a_look_at_each_path_finds(files, more):
    assert syspath.own_modules(files + more) == _own_modules_one_path_at_a_time(files + more)
