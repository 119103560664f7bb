"""The scripted maker of `goal demo`, run by `goal run`'s command maker once per iteration in the sample
project: it plays a coding agent that fixes one bug, then cheats, then does the work. GOAL_ITERATION
(set by the command maker) says which step this is; what it prints is its summary for the loop."""

import os
import sys
from pathlib import Path

ORIGINAL = Path(__file__).resolve().parent / "project"
TESTS = Path("tests/test_textstats.py")
SKIP = '    @unittest.skip("flaky")\n    def test_questions_and_exclamations_end_sentences_too'


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        sys.exit(f"demo maker: {path} is not as the demo left it (no {old!r} in it)")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def fix_word_count() -> str:
    edit(Path("textstats.py"), 'return text.split(" ")', "return text.split()")
    return "Fixed word_count: words() split on single spaces, so runs of spaces and tabs counted as words."


def skip_the_failing_test() -> str:
    edit(TESTS, SKIP.split("\n")[1], SKIP)
    return "The sentence test looks flaky, so I skipped it. All tests pass now."


def undo_and_fix_sentence_count() -> str:
    TESTS.write_bytes((ORIGINAL / TESTS).read_bytes())
    edit(Path("textstats.py"), 'return text.count(".")', 'return sum(text.count(mark) for mark in ".!?")')
    return "Put the skipped test back and fixed sentence_count: a sentence also ends with ! or ?."


STEPS = {1: fix_word_count, 2: skip_the_failing_test, 3: undo_and_fix_sentence_count}

if __name__ == "__main__":
    step = STEPS.get(int(os.environ.get("GOAL_ITERATION", "0")))
    print(step() if step else "Nothing left to change.")
