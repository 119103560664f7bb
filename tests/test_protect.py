from __future__ import annotations

import hashlib

from goal_convergence import protect
from goal_convergence.models import StoppingCondition


def write(root, rel, text="x\n"):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_detects_tests_configs_and_the_files_commands_name(git_repo):
    for rel in ("tests/test_api.py", "tests/fixtures/data.json", "pkg/tests/helpers.py", "pkg/api_test.go",
                "web/app.test.ts", "web/app.spec.jsx", "src/test_utils.py", "conftest.py", "pyproject.toml",
                "package.json", "jest.config.js", ".eslintrc.json", "Makefile", "scripts/check.sh", "custom.ini",
                "src/app.py", "docs/guide.md", "node_modules/dep/test_x.py", ".venv/lib/test_y.py"):
        write(git_repo, rel)
    conditions = [StoppingCondition(type="custom_command", command="bash ./scripts/check.sh --fast"),
                  StoppingCondition(type="test_pass", command="pytest -c custom.ini ../elsewhere.ini")]
    found = protect.detect(git_repo, conditions, ["docs/*.md"])
    paths = [p.path for p in found]
    # What the commands run comes first, then --protect matches, then configs, then tests.
    assert paths[:3] == ["scripts/check.sh", "custom.ini", "docs/guide.md"]
    assert set(paths) == {"scripts/check.sh", "custom.ini", "docs/guide.md", "conftest.py", "pyproject.toml",
                          "package.json", "jest.config.js", ".eslintrc.json", "Makefile", "tests/test_api.py",
                          "tests/fixtures/data.json", "pkg/tests/helpers.py", "pkg/api_test.go", "web/app.test.ts",
                          "web/app.spec.jsx", "src/test_utils.py"}
    assert found[0].sha256 == hashlib.sha256(b"x\n").hexdigest()


def test_untracked_files_count_and_the_list_is_capped(git_repo):
    for i in range(protect.MAX_PROTECTED + 20):
        write(git_repo, f"tests/test_{i:04d}.py")
    write(git_repo, "pytest.ini")
    paths = [p.path for p in protect.detect(git_repo, [], [])]
    assert len(paths) == protect.MAX_PROTECTED
    assert paths[0] == "pytest.ini"  # configs are kept before tests when the cap bites


def test_changed_sees_edits_and_deletions_only(git_repo):
    write(git_repo, "tests/test_a.py", "def test_a(): assert 1\n")
    write(git_repo, "tests/test_b.py")
    write(git_repo, "tests/test_c.py")
    protected = protect.detect(git_repo, [], [])
    assert protect.changed(git_repo, protected) == []
    write(git_repo, "tests/test_a.py", "def test_a(): pass  # weakened\n")
    (git_repo / "tests/test_b.py").unlink()
    (git_repo / "tests/test_c.py").touch()  # touched, same bytes: not a change
    assert protect.changed(git_repo, protected) == ["tests/test_a.py", "tests/test_b.py"]
