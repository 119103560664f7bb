"""Goals with a realistic history, built from the models: failing tests falling with setbacks, coverage rising,
a lint condition that comes good, the oracle's reasons and hints, a plan it keeps, an integrity veto, a
checkpoint an iteration, costs. For the report's tests, its benchmark and the screenshot on docs/report.md."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from goal_convergence.models import (Budget, Census, Checkpoint, ConditionEvidence, Cost, Decision, Goal, Integrity,
                                     IntegrityIssue, Iteration, OracleConfig, Spent, StoppingCondition, Task,
                                     TaskChanges, Verdict, now_iso)

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TESTS = 240
CONDITIONS = [StoppingCondition(type="test_pass", command="python -m pytest -q"),
              StoppingCondition(type="lint_clean", command="ruff check ."),
              StoppingCondition(type="coverage_threshold", command="python -m pytest -q --cov=shop --cov-report=term",
                                threshold=85)]
MODULES = ["cart", "checkout", "pricing", "inventory", "payments", "shipping"]
STEPS = ["Make the discount rules apply per line, not per cart", "Round totals half-even in pricing.total()",
         "Reserve stock before charging in checkout.place_order()", "Retry the payment gateway on 503 only",
         "Cover the shipping zones with tests"]


def _census(failed: int) -> Census:
    return Census(runner="pytest", ran=TESTS, passed=TESTS - failed, failed=failed, skipped=2)


def history_goal(n: int, seed: int = 7, end: str = "converged", project: str = "/srv/shop",
                 goal_id: str = "goal-shopdemo") -> Goal:
    """A goal of ``n`` iterations; ``end`` converged (the last one converges) or ceiling (escalated)."""
    rnd = random.Random(seed)
    spent, at = Spent(), T0
    tasks = [Task(id=f"t{i + 1}", title=title, added_by="user" if i < 2 else "oracle", added_in=0 if i < 2 else 1)
             for i, title in enumerate(STEPS)]
    history = []
    for k in range(1, n + 1):
        last = k == n and end == "converged"
        progress = k / n
        setback = 4 if rnd.random() < .12 else 0
        failing = 0 if last else max(0, round(38 * (1 - progress) ** 1.6 + rnd.uniform(-2, 2)) + setback)
        coverage = 87.4 if last else min(86.9, 61 + 25 * progress ** 0.8 + rnd.uniform(-0.8, 0.8))
        lint_ok = k > 2
        cheat = failing == 0 and not last and rnd.random() < 0.5  # green, but a test was skipped to get there
        module = rnd.choice(MODULES)
        first = f"FAILED tests/test_{module}.py::test_{module}_case_{rnd.randrange(40)} - AssertionError: assert 1 == 2"
        conds = [ConditionEvidence(index=0, type="test_pass", command=CONDITIONS[0].command, passed=failing == 0,
                                   exit_code=0 if failing == 0 else 1, duration_seconds=rnd.uniform(8, 14),
                                   failure_lines=[first] if failing else [], census=_census(failing)),
                 ConditionEvidence(index=1, type="lint_clean", command=CONDITIONS[1].command, passed=lint_ok,
                                   exit_code=0 if lint_ok else 1, duration_seconds=rnd.uniform(.2, .5),
                                   failure_lines=[] if lint_ok else [f"shop/{module}.py:12:1: F401 unused import"]),
                 ConditionEvidence(index=2, type="coverage_threshold", command=CONDITIONS[2].command,
                                   passed=coverage >= 85 and failing == 0, exit_code=0, coverage=round(coverage, 1),
                                   duration_seconds=rnd.uniform(9, 15), census=_census(failing))]
        green = all(c.passed for c in conds)
        integrity = Integrity(census=[c.census for c in conds], issues=[IntegrityIssue(
            kind="test-skipped", subject=f"tests/test_{module}.py::test_{module}_refund", condition=0,
            detail="ran and passed at the start; now skipped")] if cheat else [])
        done = [f"t{(k // 3) % 5 + 1}"] if k % 3 == 0 and k <= 15 else ["t1"] if last else []
        verdict = Verdict(converged=last, confidence=0.92 if last else round(rnd.uniform(.55, .8), 2),
                          reasons=[f"{failing} tests still fail in tests/test_{module}.py" if failing else
                                   "Every test passes", f"{module}.py: the edge case for empty carts is unhandled"
                                   if not last else "The objective is met: totals, stock and payments behave"],
                          next_hint="" if last else f"In shop/{module}.py, handle the empty cart before computing "
                                                    f"the discount; then rerun tests/test_{module}.py",
                          tasks=TaskChanges(complete=done) if done else None)
        action = "converge" if last else ("stop" if k == n else "continue")
        decision = Decision(action=action, stop_reason="converged" if last else ("ceiling" if k == n else None),
                            hint="" if last else verdict.next_hint,
                            notes=["the integrity guard refused this green run: a test was skipped"] if cheat else [])
        if green and not last and not cheat:
            decision.notes.append("the oracle vetoed a green run")
        maker, oracle = Cost(dollars=round(rnd.uniform(.02, .2), 4), tokens=rnd.randrange(8000, 60000)), Cost(
            dollars=round(rnd.uniform(.001, .004), 5), tokens=rnd.randrange(3000, 9000))
        started, at = at, at + timedelta(seconds=rnd.uniform(60, 420))
        history.append(Iteration(number=k, started_at=now_iso(started), ended_at=now_iso(at),
                                 maker_summary=f"Changed shop/{module}.py: guarded the empty cart and fixed the "
                                               f"rounding; {failing} failures left by my count.",
                                 conditions=conds, tree_fingerprint=f"{rnd.getrandbits(64):016x}", verdict=verdict,
                                 decision=decision, maker_cost=maker, oracle_cost=oracle, integrity=integrity,
                                 checkpoint=Checkpoint(commit=f"{rnd.getrandbits(160):040x}",
                                                       ref=f"refs/goal-convergence/{goal_id}/{k}")))
        spent.iterations, spent.active_seconds = k, spent.active_seconds + (at - started).total_seconds()
        spent.maker_dollars += maker.dollars
        spent.oracle_dollars += oracle.dollars
        spent.maker_tokens, spent.oracle_tokens = spent.maker_tokens + maker.tokens, spent.oracle_tokens + oracle.tokens
    for task in tasks:
        finished = next((it.number for it in history if task.id in (it.verdict.tasks or TaskChanges()).complete), None)
        if finished:
            task.state, task.done_in = "done", finished
    stamp = now_iso(at)
    return Goal(goal_id=goal_id, objective="Make checkout handle empty carts, discounts and payment retries; "
                                                   "all tests pass, lint clean, coverage at least 85%",
                stopping_conditions=CONDITIONS, budget=Budget(max_iterations=max(n, 25), max_duration="48h" if n < 100
                                                               else f"{n}h", max_dollars=max(10.0, n * 0.15)),
                oracle=OracleConfig(provider="anthropic", model="claude-haiku-5-5"), project_root=project,
                state="converged" if end == "converged" else "escalated", stop_reason=end, spent=spent,
                history=history, tasks=tasks, created_at=now_iso(T0), updated_at=stamp)
