"""The documentation's Performance page, written from a run of every benchmark (run_all.py).

The page is benchmarks/performance_page.md with its three blanks filled: the machine and date of the run,
the table, and how long the run took. Nothing on docs/performance.md is typed by hand, so the table can
never be a copy pasted from an older run.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "performance_page.md"
PAGE = HERE.parent / "docs" / "performance.md"
BLANKS = ("{{machine}}", "{{table}}", "{{minutes}}")


def render(machine: str, table: str, minutes: str, template: str | None = None) -> str:
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template
    for blank, value in zip(BLANKS, (machine, table, minutes), strict=True):
        text = text.replace(blank, value)
    return text


def parse(page: str) -> tuple[str, str, str]:
    """The machine line, the table and the minutes a page was rendered with (its blanks' values)."""
    machine = re.search(r"^The table below is .*$", page, re.M)
    table = re.search(r"^\| what \|.*?(?=\n\n|\n?\Z)", page, re.M | re.S)
    minutes = re.search(r"It takes about (\S+) minutes here", page)
    if not (machine and table and minutes):
        raise ValueError("docs/performance.md is not a page run_all.py wrote: run `python benchmarks/run_all.py`")
    return machine.group(0), table.group(0), minutes.group(1)


def machine_line(started: float, load_before: float) -> str:
    """Where and when the run was made, so the table's figures can be read against the machine they came from."""
    pgo = "--enable-optimizations" in (sysconfig.get_config_var("CONFIG_ARGS") or "")
    commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    day = time.strftime("%Y-%m-%d", time.gmtime(started))
    return (f"The table below is `run_all.py` at commit `{commit}` on {day}, on {cpu_model()} "
            f"({os.cpu_count()} CPUs, {platform.system()} {platform.release()}), load average "
            f"{load_before:.2f} at the start and {os.getloadavg()[0]:.2f} at the end, with Python "
            f"{platform.python_version()} {'built with' if pgo else 'built without'} profile-guided optimisation:")


def cpu_model() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.machine() or "an unknown CPU"
    found = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
    return " ".join(found.group(1).split()) if found else platform.machine()


def write(table: str, started: float, load_before: float) -> Path:
    minutes = f"{max(1, round((time.time() - started) / 60))}"
    PAGE.write_text(render(machine_line(started, load_before), table, minutes), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(HERE.parent)}", file=sys.stderr)
    return PAGE
