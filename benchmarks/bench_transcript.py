"""The transcript meter (``claude_code/transcript.read``) beside a plain read of the same bytes.

    python benchmarks/bench_transcript.py [--quick] [--json]

Transcripts as Claude Code writes them (``transcripts.py``: thinking, text and tool-use lines of
each message, tool results of a few bytes to hundreds of KB held twice, subagent usage in Task
results, "usage" keys in tool inputs; about 40 KB a message). Rows, each beside a plain Python read
of the same file (``PLAIN_BLOCK`` at a time) measured in the same run. Both sides are timed in CPU time, the
best of five runs of each taken in turns (a neighbour on a shared machine, using the memory and caches a
run uses too, only ever slows one: the best is the least disturbed): reading from the page cache waits
for nothing, so the CPU time is the whole cost, while the wall time of a run on a shared machine also
holds other processes' time slices (the wall times are printed beside):

1. the first read of a 500 MB transcript (50 MB with ``--quick``), some 13,000 messages: ≤ 3×;
2. the next read after it grew by 1 MB: ≤ 3× a first read of the same 1 MB in a file of its own
   (the median of five of each): the cost follows the growth, never the file. (Against the first
   read's cost per MB, as this row once was, a faster meter did worse: a read's fixed cost, the
   files looked up, mapped and priced, stays while the cost per MB falls);
3. a transcript holding one 256 MB line (32 MB with ``--quick``: a huge tool result) between
   messages: linear, ≤ 3×.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import transcripts  # noqa: E402
from common import Row, report  # noqa: E402

from goal_convergence.agents.claude_code import transcript  # noqa: E402

Times = tuple[float, float]  # (CPU, wall) seconds


def clocked(work: Callable[[], object]) -> Times:
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return time.process_time() - cpu, time.perf_counter() - wall


# The plain read's block: its cost is the same from 256 KB to 4 MB (and with readinto or os.pread), the
# cheapest way Python reads a file; far larger blocks cost more (fresh pages each), which would flatter the meter.
PLAIN_BLOCK = 1 << 20


def plain(path: Path) -> Times:
    def run() -> None:
        with open(path, "rb") as fh:
            while fh.read(PLAIN_BLOCK):
                pass
    return clocked(run)


def best(*runs: Callable[[], Times], times: int = 5) -> list[Times]:
    """The best (least CPU) times of each run, the runs taken in turns."""
    found = [(float("inf"), float("inf"))] * len(runs)
    for _ in range(times):
        for i, run in enumerate(runs):
            found[i] = min(found[i], run())
    return found


def timed(path: Path, offsets: dict[str, int], out: list[transcript.Reading]) -> Times:
    return clocked(lambda: out.append(transcript.read(path, offsets)))


def shown(times: Times) -> str:
    return f"{times[0]:.2f} s CPU ({times[1]:.2f} s wall)"


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    big, line = (50, 32) if quick else (500, 256)
    work = Path(tempfile.mkdtemp(prefix="bench-transcript-"))
    rows = []
    try:
        path = work / "s.jsonl"
        session = transcripts.Session()
        with open(path, "wb") as fh:
            fh.writelines(session.lines(big << 20))
        plain(path)  # into the page cache, for both sides alike
        readings: list[transcript.Reading] = []
        (base, base_wall), (took, wall) = best(lambda: plain(path), lambda: timed(path, {}, readings))
        reading = readings[-1]
        with open(path, "rb") as fh:
            messages = sum(b'"stop_reason":"tool_use"' in line for line in fh)
        rows.append(Row(f"transcript meter, first read of {big} MB ({messages:,} messages)",
                        f"{shown((took, wall))}, ${reading.dollars:,.0f}", f"plain read: {shown((base, base_wall))}",
                        "≤ 3× a plain read", took <= 3 * base, took / base))
        offsets, grown, alone, fresh = reading.offsets, [], [], work / "fresh.jsonl"
        for _ in range(5):
            more = list(session.lines(1 << 20))
            for target, mode in ((path, "ab"), (fresh, "wb")):
                with open(target, mode) as fh:
                    fh.writelines(more)
            grown.append(timed(path, offsets, readings)[0])
            offsets = {**offsets, **readings[-1].offsets}
            alone.append(timed(fresh, {}, readings)[0])
        one, first = statistics.median(grown), statistics.median(alone)
        rows.append(Row(f"transcript meter, next read after {big} MB grew by 1 MB", f"{one * 1000:.1f} ms CPU",
                        f"a first read of the same 1 MB alone: {first * 1000:.1f} ms CPU",
                        "≤ 3× (the cost follows the growth, never the file)", one <= 3 * first, one / first))
        huge = work / "huge.jsonl"
        around = transcripts.Session(seed=2)
        with open(huge, "wb") as fh:
            fh.writelines(around.lines(1 << 20))
            head = json.loads(next(line for line in around.lines(1 << 20) if b'"type":"user"' in line))
            head["message"]["content"][0]["content"] = ""
            start, _, end = json.dumps(head, separators=(",", ":")).encode().partition(b'"content":""')
            fh.write(start + b'"content":"')
            for _ in range(line):
                fh.write(b"z" * (1 << 20))
            fh.write(b'"' + end + b"\n")
            fh.writelines(around.lines(1 << 20))
        plain(huge)
        (base, base_wall), (took, wall) = best(lambda: plain(huge), lambda: timed(huge, {}, readings))
        rows.append(Row(f"transcript meter, one {line} MB line between messages", shown((took, wall)),
                        f"plain read: {shown((base, base_wall))}", "linear: ≤ 3× a plain read", took <= 3 * base,
                        took / base))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(rows, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
