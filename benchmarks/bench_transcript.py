"""The transcript meter (``claude_code/transcript.read``) beside a plain read of the same bytes.

    python benchmarks/bench_transcript.py [--quick] [--json]

Transcripts as Claude Code writes them: each assistant message two content-block lines with the
same id and usage, then a tool result (about 4 KB a message). Rows, each beside a plain Python read
of the same file in 4 MB calls measured in the same run:

1. the first read of a 500 MB transcript (50 MB with ``--quick``), ≤ 3×;
2. a transcript holding one 256 MB line (32 MB with ``--quick``: a huge tool result) between
   messages: linear, ≤ 3×;
3. the next read after the 500 MB transcript grew by 1 MB: ≤ 3× the first read's cost per MB (its
   baseline is the first read, not a plain read): the cost follows the growth, never the file.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, report  # noqa: E402

from goal_convergence.claude_code import transcript  # noqa: E402

_USAGE = {"input_tokens": 1200, "output_tokens": 300, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 50_000}


def message(mid: int, size: int = 4096) -> bytes:
    """One assistant message (two content-block lines) and one tool result, about ``size`` bytes."""
    assistant = [json.dumps({"type": "assistant", "timestamp": "2026-11-30T10:00:00.000Z", "message": {
        "id": f"msg_{mid:09d}", "model": "claude-opus-5-5", "role": "assistant", "usage": _USAGE,
        "content": [{"type": block, "text": "x" * 200}]}}) for block in ("thinking", "text")]
    filler = "y" * max(0, size - sum(len(a) for a in assistant) - 120)
    result = json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{mid}", "content": filler}]}})
    return ("\n".join([*assistant, result]) + "\n").encode()


def megabytes(first: int, count: int) -> bytes:
    return b"".join(message(first + i) for i in range(count * 256))


def plain(path: Path, start: int = 0) -> float:
    started = time.perf_counter()
    with open(path, "rb") as fh:
        fh.seek(start)
        while fh.read(transcript.BLOCK):
            pass
    return time.perf_counter() - started


def timed(path: Path, offsets: dict[str, int]) -> tuple[float, transcript.Reading]:
    started = time.perf_counter()
    reading = transcript.read(path, offsets)
    return time.perf_counter() - started, reading


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    big, line = (50, 32) if quick else (500, 256)
    work = Path(tempfile.mkdtemp(prefix="bench-transcript-"))
    rows = []
    try:
        path = work / "s.jsonl"
        with open(path, "wb") as fh:
            for k in range(big):
                fh.write(megabytes(k * 256, 1))
        plain(path)  # into the page cache, for both sides alike
        base, (took, reading) = plain(path), timed(path, {})
        rows.append(Row(f"transcript meter, first read of {big} MB", f"{took:.2f} s ({reading.tokens:,} tokens)",
                        f"plain read: {base:.2f} s", "≤ 3× a plain read", took <= 3 * base, took / base))
        offsets, per_mb = reading.offsets, took / big
        grown = []
        for k in range(5):
            with open(path, "ab") as fh:
                fh.write(megabytes((big + k) * 256, 1))
            took, reading = timed(path, offsets)
            grown.append(took)
            offsets = {**offsets, **reading.offsets}
        one = statistics.median(grown)
        rows.append(Row(f"transcript meter, next read after {big} MB grew by 1 MB", f"{one * 1000:.1f} ms",
                        f"the first read, per MB: {per_mb * 1000:.1f} ms", "≤ 3× (the cost follows the growth)",
                        one <= 3 * per_mb, one / per_mb))
        huge = work / "huge.jsonl"
        with open(huge, "wb") as fh:
            fh.write(message(0) + message(1))
            fh.write(b'{"type": "user", "message": {"content": "')
            for _ in range(line):
                fh.write(b"z" * (1 << 20))
            fh.write(b'"}}\n')
            fh.write(message(2) + message(3))
        plain(huge)
        base, (took, reading) = plain(huge), timed(huge, {})
        rows.append(Row(f"transcript meter, one {line} MB line between messages", f"{took:.2f} s",
                        f"plain read: {base:.2f} s", "linear: ≤ 3× a plain read", took <= 3 * base, took / base))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(rows, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
