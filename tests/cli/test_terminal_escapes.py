"""A terminal is not a sink for raw bytes: text from outside (the objective, a condition's output, the judge's
hint and reasons) that holds escape sequences and controls is printed neutralised by every command, errors
and hooks included, and JSON output keeps it exact, escaped."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import run_goal

# A retitle and a clipboard write (OSC, ended by BEL), a screen clear (CSI), a C1 CSI, a bidi override, a CR
# and a backspace that overwrite what was shown, DEL, and a DCS ended by ST.
EVIL = "\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\u202eevil\rover\x08\x7f\x1bPq#0\x1b\\"
RAW = set("\x1b\x07\x08\r\x7f\x9b\u202e")


def _clean(text: str, where: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in text if c in RAW})
    assert not found, f"{where} printed raw controls {found}: {text[:400]!r}"


@pytest.fixture
def hostile(git_repo, tmp_path):
    """A goal escalated after one iteration, every outside string in it hostile."""
    (tmp_path / "check.py").write_text(f"import sys\nprint({EVIL!r})\nprint({EVIL!r}, file=sys.stderr)\nsys.exit(1)\n")
    (tmp_path / "judge.py").write_text(
        f"import json, sys\nsys.stdin.read()\nprint(json.dumps({{'ok': False, 'reason': {EVIL!r}}}))\n")
    done = run_goal(git_repo, "run", f"make it pass {EVIL}", "--check", f"{sys.executable} {tmp_path / 'check.py'}",
                    "--oracle", "command", "--oracle-cmd", f"{sys.executable} {tmp_path / 'judge.py'}",
                    "--max-iterations", "1", "--maker-cmd", f"echo {EVIL!r}")
    assert done.returncode == 4, done.stderr  # ceiling
    _clean(done.stdout + done.stderr, "goal run")
    listed = json.loads(run_goal(git_repo, "list", "--json").stdout)
    return listed[0]["goalId"] if isinstance(listed, list) else listed["goals"][0]["goalId"]


def test_every_printed_field_is_neutralised(hostile, git_repo):
    goal = json.loads(run_goal(git_repo, "status", hostile, "--json").stdout)
    item = goal["escalation"]["triageId"]
    for command in (["list"], ["list", "--all"], ["status", hostile], ["triage", "list"], ["triage", "show", item],
                    ["report", hostile], ["check", hostile], ["diff", hostile]):
        done = run_goal(git_repo, *command)
        _clean(done.stdout + done.stderr, f"goal {' '.join(command)}")
    shown = run_goal(git_repo, "triage", "show", item).stdout
    assert "␛]52;c;ZXZpbA==␇" in shown  # neutralised, not dropped: a person sees what the text held


def test_json_keeps_the_text_exact_and_escaped(hostile, git_repo):
    for command in (["status", hostile, "--json"], ["list", "--json"], ["triage", "list", "--json"]):
        done = run_goal(git_repo, *command)
        assert done.returncode == 0, done.stderr
        _clean(done.stdout, f"goal {' '.join(command)}")
        if command[0] != "list":  # the index keeps a summary of the objective, not all of it
            assert any(EVIL in text for text in _strings(json.loads(done.stdout))), command


def _strings(doc: object) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    values = doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else []
    return [text for value in values for text in _strings(value)]


def test_an_error_quoting_outside_text_is_neutralised(git_repo):
    done = run_goal(git_repo, "status", f"goal-{EVIL}")
    assert done.returncode != 0
    _clean(done.stdout + done.stderr, "an error")


def test_a_hooks_system_message_is_neutralised_and_its_json_exact():
    """Claude Code shows a hook's systemMessage on the user's terminal as it is: it is neutralised before it is sent."""
    from goal_convergence.agents.claude_code import fast

    line = fast.answer_text({"systemMessage": EVIL, "decision": "block", "reason": EVIL})
    _clean(line, "the hook's answer")
    sent = json.loads(line)
    _clean(sent["systemMessage"], "the systemMessage Claude Code shows")
    assert sent["reason"] == EVIL  # what the model reads is data, kept whole


def test_a_long_line_is_cut_on_a_terminal_only(tmp_path):
    import io

    from goal_convergence.cli.output import TERMINAL_LINE, SafeStream

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown, piped = Terminal(), io.StringIO()
    for stream in (shown, piped):
        SafeStream(stream).write("x" * 3_000_000 + "\nend\n")
    assert len(shown.getvalue()) < TERMINAL_LINE + 100 and shown.getvalue().endswith("\nend\n")
    assert len(piped.getvalue()) == 3_000_005
