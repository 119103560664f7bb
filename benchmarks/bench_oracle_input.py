"""The oracle's input for a 5 MB failing pytest log: its size in tokens, and whether it still names
every failing test.

The log goes through the real condition runner (``conditions.run_condition``) and ``build_input``.
Tokens are counted two ways: chars/4 of the input JSON (the estimate the code uses), and
``count_tokens`` of the whole user message through the real ``anthropic`` SDK against the scripted
server in tests/fakeapi.py, which also answers chars/4 (there is no offline tokenizer), so the two
differ only by the message around the JSON. Target: <= 8,000 tokens, every failing test named.

    python benchmarks/bench_oracle_input.py [--failures N] [--megabytes M]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from goal_convergence import conditions, oracle  # noqa: E402
from goal_convergence.models import Budget, Goal, OracleConfig, StoppingCondition, new_id, now_iso  # noqa: E402
from goal_convergence.oracle.prompt import user_message  # noqa: E402

TARGET_TOKENS = 8_000


def failing_log(failures: int, megabytes: float) -> tuple[str, list[str]]:
    """A pytest run with ``failures`` failing tests among passing ones, padded to ``megabytes``
    with captured output, tracebacks and the short summary, like a real verbose run."""
    names = [f"tests/test_module_{i % 37:02d}.py::test_behaviour_{i:04d}[case-{i % 5}]" for i in range(failures)]
    lines = ["============================= test session starts ==============================",
             "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0", f"collected {failures * 4} items", ""]
    lines += [f"{n.split('::')[0]} {'.' * 40}F" for n in names]
    lines += ["", "=================================== FAILURES ==================================="]
    chunk = []
    for i, n in enumerate(names):
        chunk += [f"_____ {n.split('::')[1]} _____", "", "    def test_it():",
                  f">       assert compute({i}) == {i + 1}", f"E       assert {i} == {i + 1}",
                  f"E        +  where {i} = compute({i})", "", f"{n.split('::')[0]}:{10 + i % 90}: AssertionError",
                  "----------------------------- Captured stdout call -----------------------------"]
    lines += chunk
    body = "\n".join(lines)
    noise = "\n".join(f"DEBUG worker-{i % 8} step {i}: state={'x' * 60}" for i in range(2000))
    pad = []
    size = len(body)
    while size < megabytes * 1_000_000:
        pad.append(noise)
        size += len(noise)
    summary = ["=========================== short test summary info ============================"]
    summary += [f"FAILED {n} - AssertionError: assert {i} == {i + 1}" for i, n in enumerate(names)]
    summary.append(f"================= {failures} failed, {failures * 3} passed in 42.17s =================")
    return body + "\n" + "\n".join(pad) + "\n" + "\n".join(summary) + "\n", names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failures", type=int, default=400)
    parser.add_argument("--megabytes", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log, names = failing_log(args.failures, args.megabytes)
        (root / "pytest.log").write_text(log)
        condition = StoppingCondition(type="test_pass", command="cat pytest.log; exit 1")
        goal = Goal(goal_id=new_id("goal-"), objective="make every test pass", stopping_conditions=[condition],
                    budget=Budget(max_iterations=10), oracle=OracleConfig(provider="anthropic", model="claude-haiku-5-5"),
                    project_root=str(root), created_at=now_iso(), updated_at=now_iso())
        started = time.perf_counter()
        evidence = conditions.run_condition(condition, 0, root)
        ran = time.perf_counter() - started
        started = time.perf_counter()
        oracle_input = oracle.build_input(goal, [evidence], "I fixed the tests.")
        built = time.perf_counter() - started
        text = oracle_input.to_json()
        missing = [n for n in names if n.split("::")[1] not in text]
        print(f"log: {len(log) / 1e6:.2f} MB, {len(names)} failing tests")
        print(f"runner: {ran:.2f} s, kept {len(evidence.failure_lines)} failure lines, "
              f"{len(evidence.output_head) + len(evidence.output_tail)} chars of head+tail")
        print(f"build_input: {built * 1000:.1f} ms, {len(text)} chars")
        print(f"tokens (chars/4 of the input JSON): {oracle_input.estimated_tokens()}")
        print(f"tokens (count_tokens of the user message, scripted server, chars/4): {count_tokens(oracle_input)}")
        print(f"every failing test named: {not missing} ({len(names) - len(missing)}/{len(names)})")
        # What build_input does when the evidence holds every failing test's line (the runner
        # keeps at most extract.MAX_LINES of them): the part of the target this module controls.
        every = [line for line in log.splitlines() if line.startswith("FAILED ")]
        full = oracle.build_input(goal, [evidence.model_copy(update={"failure_lines": every + evidence.failure_lines})],
                                  "I fixed the tests.")
        full_missing = [n for n in names if n.split("::")[1] not in full.to_json()]
        print(f"with all {len(every)} FAILED lines in the evidence: {full.estimated_tokens()} tokens, "
              f"every failing test named: {not full_missing}")
        ok = oracle_input.estimated_tokens() <= TARGET_TOKENS and not missing
        print(f"target <= {TARGET_TOKENS} tokens and all named: {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1


def count_tokens(oracle_input: oracle.OracleInput) -> int | str:
    try:
        import anthropic

        from tests.fakeapi import FakeAPI
    except ImportError as exc:
        return f"skipped ({exc})"
    api = FakeAPI()
    try:
        client = anthropic.Anthropic(base_url=api.url, api_key="x", max_retries=0)
        return client.messages.count_tokens(model="claude-haiku-5-5", messages=[
            {"role": "user", "content": user_message(oracle_input)}]).input_tokens
    finally:
        api.close()


if __name__ == "__main__":
    os.environ.setdefault("SHELL", "/bin/sh")
    sys.exit(main())
