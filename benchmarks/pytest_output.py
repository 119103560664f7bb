"""Realistic pytest output of any size, written to stdout as fast as a pipe takes it.

    python benchmarks/pytest_output.py BYTES [FAILURES]

The shape of ``pytest -v -s`` on a project that logs: test lines (PASSED, and FAILED for
``FAILURES`` of them) among captured log lines, some of which say "error", "failed", "retry" or
"skipped" in passing, a warning line every 50 lines (a path, a DeprecationWarning, the
``warnings.warn`` line under it), then the FAILURES section with each failure's traceback, the
short test summary naming every failure, and the closing counts. Every log line is unique (a
counter in it changes), so no scanner sees one line twice. Used by bench_conditions.py and
bench_oracle_input.py as a condition's command.
"""

from __future__ import annotations

import sys

TESTS_PER_FAILURE = 10
_LOG = [
    "2026-11-30 10:{m:02d}:{s:02d},{ms:03d} INFO     app.worker:worker.py:{n} worker-{w} processed batch @@@@{i:04d} "
    "(512 items) in {n} ms",
    "2026-11-30 10:{m:02d}:{s:02d},{ms:03d} DEBUG    app.cache:cache.py:88 cache hit ratio 0.{n} for key "
    "user:@@@@{i:04d}:profile",
    "2026-11-30 10:{m:02d}:{s:02d},{ms:03d} INFO     app.http:client.py:214 GET /api/v2/items/@@@@{i:04d} -> 200 "
    "({n} bytes)",
    "2026-11-30 10:{m:02d}:{s:02d},{ms:03d} WARNING  app.http:client.py:231 retrying request @@@@{i:04d} after "
    "transient connection error (attempt 1 of 3)",
    "2026-11-30 10:{m:02d}:{s:02d},{ms:03d} INFO     app.jobs:runner.py:57 job @@@@{i:04d} finished: 0 failed, "
    "{n} done, 2 skipped",
    "2026-11-30 10:{m:02d}:{s:02d},{ms:03d} DEBUG    app.db:session.py:140 SELECT id, name, state FROM items "
    "WHERE batch = @@@@{i:04d} LIMIT 500",
]
_WARNING = ["/home/dev/project/src/app/clock.py:{n}: DeprecationWarning: datetime.datetime.utcnow() is deprecated "
            "and scheduled for removal in a future version (@@@@{i:04d})",
            "  now = datetime.datetime.utcnow()"]


def test_id(i: int) -> str:
    return f"tests/test_module_{i % 37:02d}.py::TestBehaviour::test_behaviour_{i:05d}[case-{i % 5}]"


def failed(i: int) -> bool:
    return i % TESTS_PER_FAILURE == 3


def _filler(lines: int) -> bytes:
    """A block of log lines with a warning every 50; "@@@@" is replaced by a block counter."""
    out = []
    for i in range(lines):
        if i % 50 == 49:
            out += [w.format(n=100 + i % 300, i=i) for w in _WARNING]
        else:
            out.append(_LOG[i % len(_LOG)].format(m=i // 3600 % 60, s=i // 60 % 60, ms=i % 1000, n=10 + i % 90,
                                                  w=i % 8, i=i))
    return ("\n".join(out) + "\n").encode()


def _failures(failures: list[int]) -> bytes:
    out = ["", "=================================== FAILURES ==================================="]
    for i in failures:
        name = test_id(i).split("::", 1)[1].replace("::", ".")
        out += [f"_________________________ {name} _________________________", "",
                "self = <tests.test_module.TestBehaviour object at 0x7f3a2c1d9e50>", "",
                "    def test_behaviour(self):", f"        result = compute({i})",
                f">       assert result == {i + 1}", f"E       assert {i} == {i + 1}",
                f"E        +  where {i} = compute({i})", "", f"{test_id(i).split('::')[0]}:{10 + i % 90}: AssertionError",
                "----------------------------- Captured stdout call -----------------------------",
                f"computing {i}"]
    out += ["=============================== warnings summary ===============================",
            "src/app/clock.py:120: DeprecationWarning: datetime.datetime.utcnow() is deprecated", "",
            "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
            "=========================== short test summary info ============================"]
    out += [f"FAILED {test_id(i)} - AssertionError: assert {i} == {i + 1}" for i in failures]
    return ("\n".join(out) + "\n").encode()


def main(size: int, failures: int) -> None:
    tests = failures * TESTS_PER_FAILURE
    head = ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0 -- /usr/bin/python3\n"
            f"rootdir: /home/dev/project\nconfigfile: pyproject.toml\ncollected {tests} items\n\n").encode()
    tail = _failures([i for i in range(tests) if failed(i)])
    summary = f"=========== {failures} failed, {tests - failures} passed, 1 warning in 342.17s (0:05:42) ===========\n"
    filler = _filler(4000)
    body = size - len(head) - len(tail) - len(summary)
    blocks = max(1, body // (len(filler) + 100))
    out = sys.stdout.buffer
    out.write(head)
    written, test = len(head), 0
    for k in range(blocks):
        block = filler.replace(b"@@@@", b"%04d" % (k % 10_000))
        out.write(block)
        written += len(block)
        lines = []
        # The tests are spread evenly over the output.
        while test < tests and test * blocks < (k + 1) * tests:
            outcome = "FAILED" if failed(test) else "PASSED"
            lines.append(f"{test_id(test)} {outcome}{' ' * 10}[{test * 100 // tests:3d}%]\n")
            test += 1
        part = "".join(lines).encode()
        if written + len(part) > body:
            continue
        out.write(part)
        written += len(part)
    out.write(b"".join(f"{test_id(t)} {'FAILED' if failed(t) else 'PASSED'}\n".encode() for t in range(test, tests)))
    out.write(tail)
    out.write(summary.encode())
    out.flush()


if __name__ == "__main__":
    main(int(float(sys.argv[1])), int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
