"""The report in a real browser: headless Chromium (Debian's package; .ci/run installs it) loads the page
`goal report` wrote for a goal the real loop ran, and the chart must be drawn, its geometry and every number
on the page must be the goal file's (read here as plain JSON, not through our models), goal-provided strings
must stay text, and the page's script must work (hover, click). A screenshot of each page is kept as an
artefact (its path is printed and recorded as the test's `screenshot` property)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.browser import Browser, find_chromium
from tests.conftest import run_goal
from tests.histories import history_goal

EVIL = "</script><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> & 'quotes'"
PY = shlex.quote(sys.executable)

READ = """JSON.stringify({
  ready: document.body.dataset.ready, state: document.getElementById("state").textContent,
  stop: document.getElementById("stop-reason")?.textContent ?? null,
  objective: document.getElementById("objective").textContent,
  series: Object.fromEntries([...document.querySelectorAll("#chart path.line")].map(p => [p.dataset.series, {
    values: p.dataset.values, top: +p.dataset.top, bottom: +p.dataset.bottom, height: +p.dataset.height,
    d: p.getAttribute("d"), drawn: p.getBoundingClientRect().width}])),
  chart: (r => [r.width, r.height])(document.getElementById("chart").getBoundingClientRect()),
  gauges: Object.fromEntries([...document.querySelectorAll(".gauge")].map(g => [g.id.slice(6), {
    spent: +g.dataset.spent, limit: g.dataset.limit, text: g.querySelector(".value").textContent,
    fill: [...g.querySelectorAll("rect:not(.g-track)")].map(r => r.getBBox().width)}])),
  entries: [...document.querySelectorAll("#timeline details.it")].map(d => ({n: +d.dataset.number,
    passing: +d.querySelector(".passing").dataset.passing, total: +d.querySelector(".passing").dataset.total,
    failing: d.querySelector(".failing")?.dataset.failing ?? null,
    dollars: +d.querySelector(".cost").dataset.dollars})),
  tasks: [...document.querySelectorAll("#plan tbody tr")].map(r => r.id),
  scripts: document.scripts.length, images: document.images.length, pwned: window.__pwned ?? null,
})"""

HOVER = """((index) => {
  const svg = document.getElementById("chart");
  const pt = svg.createSVGPoint();
  pt.x = +svg.dataset.left + (index + 0.5) * +svg.dataset.band;
  pt.y = 60;
  const at = pt.matrixTransform(svg.getScreenCTM());
  svg.dispatchEvent(new MouseEvent("mousemove", {clientX: at.x, clientY: at.y, bubbles: true}));
  const tip = document.getElementById("tip");
  const shown = [tip.textContent, getComputedStyle(tip).visibility];
  svg.dispatchEvent(new MouseEvent("click", {clientX: at.x, clientY: at.y, bubbles: true}));
  return shown;
})(%d)"""


@pytest.fixture(scope="module")
def browser():
    binary = find_chromium()
    if not binary:
        reason = os.environ.get("GOAL_BROWSER_SKIP")  # .ci/run's reason when it could not install Chromium
        if os.environ.get("CI") and not reason:
            pytest.fail("Chromium is missing; .ci/run installs it (apt-get install -y chromium)")
        pytest.skip(reason or "Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
    with Browser(binary, width=1100, height=900) as b:
        yield b


def expected(doc: dict) -> dict:
    """What the page must show, worked out from the goal file's JSON on its own."""
    its = doc["history"]
    passing = [sum(c["passed"] for c in it["conditions"]) for it in its]
    # one condition's census, never a sum: the one whose start census ran the most tests (the first on ties)
    start = [(c["ran"] or 0, -i) for i, c in enumerate((doc.get("baseline") or {}).get("census") or []) if c]
    counted = -max(start)[1] if start else next(
        (c["index"] for it in its for c in it["conditions"] if c.get("census")), None)
    failing = [next((c["census"].get("failed") for c in it["conditions"] if c["index"] == counted and c.get("census")),
                    None) for it in its]
    coverage = [next((c["coverage"] for c in it["conditions"] if c.get("coverage") is not None), None) for it in its]
    cumulative, total = [], 0.0
    for it in its:
        total += it["makerCost"]["dollars"] + it["oracleCost"]["dollars"]
        cumulative.append(total)
    return {"passing": passing, "failing": failing, "coverage": coverage, "cost": cumulative,
            "total": [len(it["conditions"]) for it in its], "dollars": [it["makerCost"]["dollars"] +
                                                                       it["oracleCost"]["dollars"] for it in its]}


def vertices(d: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r"[ML]([-0-9.]+) ([-0-9.]+)", d)]


def check_series(shown: dict, want: list[float | None], step: bool = False) -> None:
    """The numbers carried are the goal file's, and the line is drawn through exactly those values."""
    values = [None if v == "" else float(v) for v in shown["values"].split(",")]
    assert values == pytest.approx(want, abs=1e-6)
    ys = [y for _, y in vertices(shown["d"])]
    if step:
        ys = ys[::2]  # a step series draws each band's value at both of its ends
    wanted_ys = [shown["bottom"] - min(v, shown["top"]) / shown["top"] * shown["height"] for v in want if v is not None]
    assert ys == pytest.approx(wanted_ys, abs=0.01)
    assert shown["drawn"] > 0 or len(wanted_ys) == 1


def screenshot(b: Browser, tmp_path: Path, name: str, record_property, capsys) -> Path:
    path = b.screenshot(tmp_path / name)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    record_property("screenshot", str(path))
    with capsys.disabled():
        print(f"\nreport screenshot: {path}")
    return path


@pytest.fixture
def converged(git_repo, tmp_path, gc_home) -> tuple[Path, dict]:
    """A goal the real loop ran to convergence in three iterations (a command maker, the conditions as judge):
    tests failing 2, 1, 0 as the pytest census counts them, coverage 60, 75, 90 against a target of 80."""
    project = git_repo
    (project / "test_shop.py").write_text("import os\n\n\ndef test_a():\n    assert os.path.exists('fixed_a')\n\n\n"
                                          "def test_b():\n    assert os.path.exists('fixed_b')\n\n\ndef test_c():\n"
                                          "    pass\n")
    (project / "cov.py").write_text("import os\n\nn = sum(os.path.exists(f) for f in ('fixed_a', 'fixed_b'))\n"
                                    "print('Name    Stmts   Miss  Cover')\nprint('-' * 30)\n"
                                    "print(f'TOTAL     100   {40 - 15 * n:4d}    {60 + 15 * n}%')\n")
    maker = tmp_path / "maker.py"
    maker.write_text("import pathlib, sys\nstate = pathlib.Path(sys.argv[1])\n"
                     "n = int(state.read_text()) if state.exists() else 0\nstate.write_text(str(n + 1))\n"
                     "if n == 1: pathlib.Path('fixed_a').touch()\nif n == 2: pathlib.Path('fixed_b').touch()\n"
                     "print('Looked at the tests.' if n == 0 else f'Fixed part {n}.')\n")
    done = run_goal(project, "run", f"make the shop tests pass {EVIL}",
                    "--test", f"{PY} -m pytest -q -p no:cacheprovider",
                    "--coverage", "80", "--coverage-cmd", f"{PY} cov.py", "--oracle", "conditions",
                    "--maker-cmd", f"{PY} {maker} {tmp_path / 'turns'}", "--max-iterations", "6", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    goal_id = json.loads(done.stdout)["goalId"]
    doc = json.loads((gc_home / "goals" / f"{goal_id}.json").read_text())
    return project, doc


def test_the_report_of_a_real_run_draws_the_goal_files_numbers(browser, converged, tmp_path, record_property,
                                                              capsys):
    project, doc = converged
    done = run_goal(project, "report", doc["goalId"], "--output", str(tmp_path / "report.html"))
    assert done.returncode == 0, done.stderr
    want = expected(doc)
    assert want["failing"] == [2, 1, 0] and want["coverage"] == [60, 75, 90]  # the run went as planned

    browser.load((tmp_path / "report.html").as_uri())
    page = json.loads(browser.evaluate(READ))
    assert page["ready"] == "3" and page["scripts"] == 2 and page["images"] == 0 and page["pwned"] is None
    assert page["objective"] == doc["objective"] and EVIL in page["objective"]  # shown as text, run never
    assert (page["state"], page["stop"]) == ("converged", "converged")
    assert page["chart"][0] > 900 and page["chart"][1] > 300
    assert set(page["series"]) == {"passing", "failing", "coverage", "cost"}
    check_series(page["series"]["passing"], want["passing"], step=True)
    check_series(page["series"]["failing"], want["failing"])
    check_series(page["series"]["coverage"], want["coverage"])
    check_series(page["series"]["cost"], want["cost"])
    assert [(e["n"], e["passing"], e["total"], int(e["failing"])) for e in page["entries"]] == list(zip(
        [it["number"] for it in doc["history"]], want["passing"], want["total"], want["failing"], strict=True))
    spent = doc["spent"]
    assert page["gauges"]["iterations"]["spent"] == spent["iterations"] == 3
    assert page["gauges"]["iterations"]["text"] == "3 / 6"
    assert page["gauges"]["iterations"]["fill"] == [pytest.approx(50, abs=0.01)]  # 3 of 6: half the bar
    assert page["gauges"]["dollars"]["spent"] == pytest.approx(spent["makerDollars"] + spent["oracleDollars"])

    tip, visibility = browser.evaluate(HOVER % 1)
    assert (tip, visibility) == ("#2 · continue · 0/2 passing · 1 failing tests · coverage 75% · $0.00 "
                                 "(total $0.00)", "visible")
    assert browser.evaluate("document.getElementById('it-2').open") is True  # the click opened its entry
    screenshot(browser, tmp_path, "report-real-run.png", record_property, capsys)


def test_a_long_story_with_plan_checkpoints_and_hostile_strings_renders_as_the_goal_says(browser, store, tmp_path,
                                                                                       record_property, capsys):
    goal = history_goal(40, end="ceiling", project=str(tmp_path))
    goal.objective = f"ship checkout {EVIL}"
    goal.history[-1].decision.hint = f"hint {EVIL}"
    goal.history[-1].verdict.reasons.append(f"reason {EVIL}")
    goal.tasks[0].title = f"task {EVIL}"
    store.create(goal)
    done = run_goal(tmp_path, "report", goal.goal_id, "--output", str(tmp_path / "story.html"))
    assert done.returncode == 0, done.stderr
    doc = json.loads((store.root / "goals" / f"{goal.goal_id}.json").read_text())
    want = expected(doc)

    browser.load((tmp_path / "story.html").as_uri())
    page = json.loads(browser.evaluate(READ))
    assert page["pwned"] is None and page["scripts"] == 2 and page["images"] == 0
    assert (page["state"], page["stop"]) == ("escalated", "ceiling")
    for key in ("passing", "failing", "coverage", "cost"):
        check_series(page["series"][key], want[key], step=key == "passing")
    assert [e["dollars"] for e in page["entries"]] == pytest.approx(want["dollars"], abs=1e-6)
    assert page["tasks"] == [f"task-{t['id']}" for t in doc["tasks"]]
    texts = browser.evaluate("[...document.querySelectorAll('.hint, .reasons li, td.t-title')].map(e => e.textContent)")
    assert f"hint {EVIL}" in texts and f"reason {EVIL}" in texts and f"task {EVIL}" in texts
    maker, oracle = page["gauges"]["dollars"]["fill"]  # the dollar bar, split maker and oracle
    limit = doc["budget"]["maxDollars"]
    assert maker == pytest.approx(doc["spent"]["makerDollars"] / limit * 100, abs=0.01)
    assert oracle == pytest.approx(doc["spent"]["oracleDollars"] / limit * 100, abs=0.01)
    notable = sum(it["decision"]["action"] != "continue" or all(c["passed"] for c in it["conditions"])
                  for it in doc["history"])
    assert 0 < notable < len(doc["history"])
    shown = browser.evaluate("document.querySelector('[data-filter=notable]').click(); "
                             "[...document.querySelectorAll('#timeline details.it')].filter(d => d.offsetHeight).length")
    assert shown == notable  # the filter keeps the green runs not accepted and the stop
    closest = browser.evaluate("document.getElementById('closest').textContent")
    assert f"goal rewind {goal.goal_id} " in closest
    screenshot(browser, tmp_path, "report-story.png", record_property, capsys)


def test_the_index_links_every_goal_of_the_project_to_its_page(browser, store, git_repo, tmp_path):
    for n, gid in ((3, "goal-indexaaa"), (6, "goal-indexbbb")):
        store.create(history_goal(n, project=str(git_repo)).model_copy(update={"goal_id": gid}))
    assert run_goal(git_repo, "report", "--all", "--output", str(tmp_path / "site")).returncode == 0
    browser.load((tmp_path / "site" / "index.html").as_uri())
    links = browser.evaluate("[...document.querySelectorAll('#goals a')].map(a => a.href)")
    assert sorted(Path(link.removeprefix("file://")).name for link in links) == ["goal-indexaaa.html",
                                                                                 "goal-indexbbb.html"]
    for link in links:
        browser.load(link)
        assert browser.evaluate("document.body.dataset.goal") == Path(link).stem
