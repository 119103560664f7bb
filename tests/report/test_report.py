"""`goal report`: the page a goal gets (self-contained, every goal-provided string escaped), where it is
written, which goal it is of, the index of `--all`, `--open`, and the slash command. What the page looks like
in a real browser is tests/test_report_browser.py."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from goal_convergence.agents.claude_code import control
from goal_convergence.agents.claude_code.slash import run_command
from goal_convergence.models import Goal, Pending, SettingChange, SettingsChange, Task, TaskChanges
from goal_convergence.report import chart, page
from tests.conftest import run_goal
from tests.histories import history_goal

EVIL = "</script><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">'\"&amp;{{ 7*7 }}"


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each script and style element."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.inline: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in self.inline else None

    def handle_data(self, data):
        if self._in:
            self.inline[self._in].append(data)
            self._in = None

    def named(self, tag: str) -> list[dict]:
        return [a for t, a in self.tags if t == tag]


def evil_goal(**fields) -> Goal:
    goal = history_goal(4, end="ceiling", **fields)
    goal.objective = f"objective {EVIL}"
    goal.tasks.append(Task(id="t6", title=f"task {EVIL}", added_by="oracle", added_in=2))
    last = goal.history[-1]
    last.maker_summary = f"summary {EVIL}"
    last.verdict.reasons = [f"reason {EVIL}"]
    last.verdict.tasks = TaskChanges(add=[f"added {EVIL}"])
    last.decision.hint = f"hint {EVIL}"
    last.decision.notes = [f"note {EVIL}"]
    last.conditions[0].failure_lines = [f"failure {EVIL}", "second"]
    last.conditions[0].output_tail = f"tail {EVIL}"
    last.conditions[0].passed = False
    goal.stopping_conditions[0].command = f"pytest {EVIL}"
    return goal


def test_every_goal_provided_string_reaches_the_page_as_text_and_only_our_script_may_run():
    text = page.render_goal(evil_goal())
    tags = Tags(text)
    assert len(tags.named("script")) == 2 and tags.named("img") == []  # ours: the data block and the code
    assert [a.get("type") for a in tags.named("script")] == ["application/json", None]
    assert "window.__pwned" not in "".join(tags.inline["script"])
    for where in ("objective", "task", "summary", "reason", "added", "hint", "note", "failure", "tail", "pytest"):
        assert f"{where} &lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img" in text, where
    assert ("objective &lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x "
            "onerror=&#34;window.__pwned=2&#34;&gt;&#39;&#34;&amp;amp;{{ 7*7 }}") in text  # data, never a template
    # the policy admits exactly the inline style and script by hash, and nothing from anywhere else
    [policy] = [a["content"] for a in tags.named("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    digest = lambda s: "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
    code = tags.inline["script"][1]
    assert f"script-src {digest(tags.inline['style'][0])} {digest(code)};" in policy
    assert policy.startswith("default-src 'none';") and "unsafe" not in policy and "http" not in policy


def test_the_page_is_self_contained():
    text = page.render_goal(history_goal(12))
    tags = Tags(text)
    fetching = [(t, a) for t, a in tags.tags if t in ("link", "iframe", "img", "object", "embed")
                or (t == "script" and "src" in a)]
    assert fetching == []
    assert not re.search(r"(src|href)=\"(https?:)?//", text) and "url(" not in "".join(tags.inline["style"])


def test_the_page_shows_the_goal_its_budget_chart_plan_and_timeline():
    goal = history_goal(12)
    text = page.render_goal(goal)
    tags = Tags(text)
    lines = {a["data-series"]: a for a in tags.named("path") if "data-series" in a}
    assert set(lines) == {"passing", "failing", "coverage", "cost"}
    assert lines["passing"]["data-values"] == ",".join(str(sum(c.passed for c in it.conditions)) for it in goal.history)
    gauges = {a["id"]: a for a in tags.named("div") if a.get("id", "").startswith("gauge-")}
    assert set(gauges) == {"gauge-iterations", "gauge-time", "gauge-dollars", "gauge-tokens"}
    assert float(gauges["gauge-dollars"]["data-spent"]) == pytest.approx(goal.spent.dollars)
    tasks = [a["id"] for a in tags.named("tr") if a.get("id", "").startswith("task-")]
    assert tasks == [f"task-{t.id}" for t in goal.tasks]
    entries = [a for a in tags.named("details") if "it" in a.get("class", "").split()]
    assert [a["id"] for a in entries] == [f"it-{n}" for n in range(1, 13)]
    assert [("open" in a) for a in entries] == [False] * 9 + [True] * 3  # the latest three are open
    assert f"goal rewind {goal.goal_id} 12" in text and f"goal diff {goal.goal_id} 7" in text


def test_the_header_says_what_is_in_flight_and_which_settings_changed():
    goal = history_goal(3, end="ceiling")
    goal.pending = Pending(number=4, started_at=goal.updated_at)
    goal.settings_history = [SettingsChange(at=goal.updated_at, via="goal resume --max-iterations 9 <x>",
                                            changes=[SettingChange(setting="maxIterations", before=3, after=9)])]
    text = page.render_goal(goal)
    assert "Iteration 4 is in flight" in text
    assert "by <code>goal resume --max-iterations 9 &lt;x&gt;</code>: maxIterations 3 → 9" in text


def test_a_goal_without_history_census_coverage_checkpoints_or_tasks_still_reports(make_goal):
    text = page.render_goal(make_goal())
    assert "No iteration yet" in text and "No plan" in text and 'id="chart"' not in text
    goal = history_goal(3)
    for it in goal.history:
        it.checkpoint = None
        for c in it.conditions:
            c.census, c.coverage = None, None
    goal.checkpoints_off = "the project is not a git repository"
    text = page.render_goal(goal)
    series = {a["data-series"] for a in Tags(text).named("path") if "data-series" in a}
    assert series == {"passing", "cost"} and "goal rewind" not in text
    assert "Checkpoints are off: the project is not a git repository" in text


@pytest.fixture
def project(tmp_path, git_repo) -> Path:
    return git_repo


def _saved(store, project: Path, goal_id: str = "goal-saved000") -> Goal:
    return store.create(history_goal(5, project=str(project)).model_copy(update={"goal_id": goal_id}))


def test_report_writes_into_the_goal_home_and_says_where(store, project, gc_home):
    goal = _saved(store, project)
    done = run_goal(project, "report")
    assert done.returncode == 0, done.stderr
    path = gc_home / "reports" / f"{goal.goal_id}.html"
    assert done.stdout.strip().splitlines()[-1] == f"wrote the report of {goal.goal_id}: {path}"
    assert f'data-goal="{goal.goal_id}"' in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"  # the home's files are private
    listed = json.loads(run_goal(project, "report", goal.goal_id, "--json").stdout)
    assert listed == {"path": str(path), "index": None, "reports": {goal.goal_id: str(path)}}


def test_output_takes_a_file_or_a_folder_and_refuses_a_missing_folder(store, project, tmp_path):
    goal = _saved(store, project)
    assert run_goal(project, "report", "--output", "mine.html").returncode == 0
    assert (project / "mine.html").read_text().startswith("<!DOCTYPE html>")
    (tmp_path / "out").mkdir()
    assert run_goal(project, "report", "--output", str(tmp_path / "out")).returncode == 0
    assert (tmp_path / "out" / f"{goal.goal_id}.html").is_file()
    missing = run_goal(project, "report", "--output", str(tmp_path / "nope" / "r.html"))
    assert missing.returncode == 65 and "does not exist; create it or choose another --output" in missing.stderr


def test_without_an_id_the_report_is_of_the_open_goal_else_the_newest(store, project, make_goal):
    old = _saved(store, project, goal_id="goal-oldoldol")
    store.update(Goal, old.goal_id, lambda g: setattr(g, "created_at", "2026-01-01T00:00:00Z"))
    new = _saved(store, project, goal_id="goal-newnewne")
    assert new.goal_id in run_goal(project, "report").stdout  # both ended: the newest
    store.create(make_goal(goal_id="goal-openopen", project_root=str(project)))
    assert "goal-openopen" in run_goal(project, "report").stdout  # an open one comes first
    elsewhere = run_goal(project.parent, "report")
    assert elsewhere.returncode == 66 and "no goal in" in elsewhere.stderr


def test_all_writes_every_goal_of_the_project_and_an_index_linking_them(store, project, tmp_path, make_goal):
    mine = [_saved(store, project, goal_id=f"goal-mine000{i}") for i in range(2)]
    store.create(make_goal(goal_id="goal-otherpro", project_root=str(tmp_path / "other")))
    done = json.loads(run_goal(project, "report", "--all", "--output", str(tmp_path / "site"), "--json").stdout)
    index = Path(done["index"])
    assert index == tmp_path / "site" / "index.html" and done["path"] == str(index)
    assert sorted(done["reports"]) == sorted(g.goal_id for g in mine)
    links = [a["href"] for a in Tags(index.read_text()).named("a")]
    assert sorted(links) == sorted(f"{g.goal_id}.html" for g in mine)
    assert all((index.parent / link).is_file() for link in links)
    home = run_goal(project, "report", "--all")
    assert re.fullmatch(r"wrote the index of 2 goal reports: .*/reports/index-project-[0-9a-f]{8}\.html\n",
                        home.stdout)
    both = run_goal(project, "report", mine[0].goal_id, "--all")
    assert both.returncode == 64 and "leave out the goal id" in both.stderr


def test_open_hands_the_page_to_the_browser_named_in_BROWSER(store, project, tmp_path):
    goal = _saved(store, project)
    seen = tmp_path / "seen.txt"
    opener = tmp_path / "opener.sh"
    opener.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {seen}\n")
    opener.chmod(0o755)
    env = {**os.environ, "BROWSER": f"{opener} %s"}
    done = subprocess.run([sys.executable, "-m", "goal_convergence", "report", goal.goal_id, "--open"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip().rsplit(": ", 1)[1])
    assert seen.read_text() == path.as_uri()


def test_the_slash_command_writes_the_sessions_goal_report_and_prints_its_path(store, project, gc_home):
    _saved(store, project, goal_id="goal-someonee")
    bound = store.create(history_goal(3, project=str(project)).model_copy(
        update={"goal_id": "goal-sessions", "session_id": "s-1", "created_at": "2020-01-01T00:00:00Z"}))
    reply = run_command("goal", "report", session_id="s-1", cwd=str(project), store=store)
    path = gc_home / "reports" / f"{bound.goal_id}.html"
    assert f"wrote the report of {bound.goal_id}: {path}" in reply.text and path.is_file()
    assert reply.notice == f"goal-convergence: report at {path}"
    reply = run_command("goal", "report --all --output site", session_id="s-1", cwd=str(project), store=store)
    assert (project / "site" / "index.html").is_file() and "index of 2 goal reports" in reply.text
    bad = run_command("goal", "report --bogus", session_id="s-1", cwd=str(project), store=store)
    assert "could not do that" in bad.text and "--bogus" in bad.text
    assert control.is_control("goal", "report --all")  # showing a report is not an iteration


def test_the_hooks_and_the_cli_start_without_the_template_engine():
    probe = ("import sys, goal_convergence.cli.app, goal_convergence.agents.claude_code.hooks, goal_convergence.agents.claude_code.slash;"
             " print(sorted({m.split('.')[0] for m in sys.modules} & {'jinja2', 'markupsafe'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("value", "top"), [(0, 1), (0.3, 0.5), (1, 1), (3, 5), (38, 50), (64, 100), (2.1, 2.5)])
def test_a_chart_scale_ends_on_a_round_number(value, top):
    assert chart.nice_top(value) == pytest.approx(top)


def test_a_gauge_is_split_by_who_spent_and_never_drawn_past_its_end():
    g = chart.gauge("dollars", "Dollars", "", [("maker", 6.0), ("oracle", 6.0)], 10.0)
    assert g.parts == [("maker", 0.0, 0.6), ("oracle", 0.6, 0.4)] and g.over and g.left == "0% left"
    free = chart.gauge("tokens", "Tokens", "", [("maker", 3), ("oracle", 1)], None)
    assert free.parts == [("maker", 0.0, 0.75), ("oracle", 0.75, 0.25)] and not free.over and free.left == "no limit"
