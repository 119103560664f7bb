"""What the checks showed: each condition's run, the test census, and the integrity guard's findings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr

from .base import ConditionType, Int, Model, NonNegFloat, NonNegInt, PosInt

TestOutcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed"]
IssueKind = Literal["test-gone", "test-skipped", "test-xfailed", "test-deselected", "fewer-tests", "census-lost",
                    "pristine-failed", "pristine-unavailable", "goal-edited", "goal-tampered", "environment-changed",
                    "census-disagrees", "forgery", "special-casing", "files-moved"]


class Rerun(Model):
    passed: bool
    exit_code: Int | None = None
    duration_seconds: NonNegFloat = 0.0
    fingerprint: str = ""


class Census(Model):
    """How many tests one run of a condition ran, skipped and deselected, as its runner reported
    them; a count is null when the runner did not say."""

    # The test ids, with each one's outcome, are kept in memory only (``outcomes``): the start census
    # keeps them in the goal's baseline folder.
    runner: str = Field(min_length=1, description="pytest, unittest, jest, vitest, go or cargo.")
    ran: NonNegInt | None = Field(default=None, description="passed + failed (errors included) + xpassed.")
    passed: NonNegInt | None = None
    failed: NonNegInt | None = None
    skipped: NonNegInt | None = None
    xfailed: NonNegInt | None = Field(default=None, description="Expected failures that failed (xpassed count as ran).")
    deselected: NonNegInt | None = None
    ids: NonNegInt = Field(default=0, description="How many test ids the output named (0: counts only).")
    disagrees: str = Field(default="", exclude_if=lambda v: not v,
                           description="How pytest's JUnit report disagreed with its own summary (the summary "
                                       "is what is counted).")
    _outcomes: dict[str, TestOutcome] = PrivateAttr(default_factory=dict)
    _beyond: Any = PrivateAttr(default=None)  # the ids past the bound of those kept by name (checks/census.py)

    @property
    def outcomes(self) -> dict[str, TestOutcome]:
        return self._outcomes

    def with_outcomes(self, outcomes: dict[str, TestOutcome]) -> Census:
        self._outcomes = dict(outcomes)
        self.ids = len(outcomes)
        return self

    @property
    def summary(self) -> str:
        """``pytest: 8 ran (7 passed, 1 failed), 1 skipped`` with only the counts the runner gave."""
        ran = f"{self.ran} ran" if self.ran is not None else "tests ran (count unknown)"
        split = ", ".join(f"{n} {w}" for n, w in ((self.passed, "passed"), (self.failed, "failed")) if n is not None)
        rest = [f"{n} {w}" for n, w in ((self.skipped, "skipped"), (self.xfailed, "xfailed"),
                                       (self.deselected, "deselected")) if n]
        return f"{self.runner}: {ran}" + (f" ({split})" if split else "") + "".join(", " + r for r in rest)


class ConditionEvidence(Model):
    """What one run of one stopping condition showed: the ground truth of an iteration."""

    index: NonNegInt
    type: ConditionType
    command: str
    passed: bool
    exit_code: Int | None = None
    timed_out: bool = False
    duration_seconds: NonNegFloat = 0.0
    output_head: str = ""
    output_tail: str = ""
    output_bytes: NonNegInt = 0
    failure_lines: list[str] = Field(default_factory=list)
    coverage: float | None = None
    fingerprint: str = ""
    error: str | None = None
    rerun: Rerun | None = None
    census: Census | None = None
    metric: float | None = Field(default=None, exclude_if=lambda v: v is None,
                                 description="A metric condition's number (the median of its runs).")
    failed_tests: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                                    description="The ids of the tests the census saw fail (at most 200): what a "
                                                "later regression is told against.")

    @property
    def first_failure(self) -> str:
        """What to say first about a failed run: its error, else its first failure line, else how it ended."""
        if self.error:
            return self.error
        if self.failure_lines:
            return self.failure_lines[0]
        return "timed out" if self.timed_out else f"exit {self.exit_code}"


class Regression(Model):
    """A check or a test that passed in an earlier iteration and fails now, with the iteration that broke it
    and the files that iteration changed (from its checkpoint)."""

    condition: NonNegInt
    test: str | None = Field(default=None, description="The test id; none when the whole condition regressed.")
    passed_at: PosInt = Field(description="The last iteration it passed in.")
    since: PosInt = Field(description="The first iteration it failed in after that.")
    files: list[str] = Field(default_factory=list, description="What that iteration changed (at most 20).")


class IntegrityIssue(Model):
    """One reason the integrity guard refuses to let a green run converge."""

    kind: IssueKind
    subject: str = Field(default="", description="The test id, file or command it is about.")
    detail: str = ""
    condition: NonNegInt | None = None
    since: PosInt | None = Field(default=None, description="The first iteration of an unbroken run that had it.")


class PristineRun(Model):
    """The conditions run again in a scratch copy of the tree with the check-defining files as the goal began."""

    passed: bool
    duration_seconds: NonNegFloat = 0.0
    restored: list[str] = Field(default_factory=list, description="Baseline files put back (bounded).")
    removed: list[str] = Field(default_factory=list, description="Files the maker added in check-sensitive places.")
    failures: list[str] = Field(default_factory=list)
    census: list[Census | None] = Field(default_factory=list)


class Integrity(Model):
    """What the integrity guard saw in one iteration: check-defining files changed since the start, the
    pristine re-run, and the issues that keep a green run from converging (unless enforced is false)."""

    enforced: bool = True
    changed: list[str] = Field(default_factory=list, description="Check-defining files edited since the start.")
    deleted: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list, description="Files added in check-sensitive places.")
    pristine: PristineRun | None = None
    pristine_note: str = Field(default="", description="Why there was no pristine run, when there was none.")
    census: list[Census | None] = Field(default_factory=list, description="The live run's, one per condition.")
    issues: list[IntegrityIssue] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                             description="What the guard saw that refuses nothing (a dependency installed).")
    findings: list[IntegrityIssue] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="Suspicions that do not refuse a run by themselves (the tripwires): a model judge is asked "
                    "to check them; with no model judge a flagged green run escalates for a person to accept.")

    @property
    def blocks(self) -> bool:
        # An edited goal file or baseline is never the objective's doing, so --tests-may-change does not excuse it.
        return any(i.kind in ("goal-edited", "goal-tampered") for i in self.issues) or (self.enforced and bool(self.issues))


class Baseline(Model):
    """The check-defining files and the test census as the goal began; the files' content is kept
    under the home, in baselines/, so the pristine copy can restore them even outside git."""

    files: NonNegInt = 0
    kept_bytes: NonNegInt = 0
    unkept: list[str] = Field(default_factory=list,
                              description="Over the size limits: changes are seen, but not restorable.")
    census: list[Census | None] = Field(default_factory=list, description="One per condition, from the start run.")
    note: str = ""
