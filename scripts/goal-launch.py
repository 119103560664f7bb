"""Start goal-convergence's `goal` CLI for the plugin's hooks. Standard library only.

    python3 goal-launch.py hook <event>      the hook's JSON on stdin

Hooks run at every stop of every session, so the usual answer (no goal here: nothing to do) comes
from the plugin's own stdlib-only fast path, imported from the plugin root, and the real CLI
starts only when there is work. The CLI is `goal` on PATH, else a private virtual environment in
${CLAUDE_PLUGIN_DATA}/venv that SessionStart installs from the plugin root in the background;
the Stop hook never installs anything. Whatever goes wrong, a hook prints at most one line and
exits 0: a plugin must not break the session it runs in.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
MIN_PYTHON = (3, 11)
STALE_INSTALL = 1800  # seconds after which an unfinished install is taken to have died


def main(argv: list[str]) -> int:
    if argv[:1] == ["--install"]:
        return install()
    if len(argv) != 2 or argv[0] != "hook":
        sys.stderr.write("usage: goal-launch.py hook <event>  (hook JSON on stdin)\n")
        return 0
    event, data = argv[1], sys.stdin.buffer.read()
    fast = fast_path()
    answer = fast_answer(fast, event, data)
    if answer is None or event == "session-start":
        goal = find_goal()
        notice = start_install() if event == "session-start" and needs_install(goal) else None
        if answer is None:
            # the CLI need not run the fast path again: it ran here
            env = {**os.environ, fast.RAN: "1"} if fast else None
            answer = run_hook(goal, event, data, env) if goal else one_line(event, not_installed())
        if notice:
            answer["systemMessage"] = "\n".join(filter(None, [notice, answer.get("systemMessage")]))
    if answer:
        sys.stdout.write(json.dumps(answer) + "\n")
    return 0


def fast_path() -> ModuleType | None:
    """The plugin's own fast path (goal_convergence/claude_code/fast.py), or None where it cannot run."""
    if sys.version_info < MIN_PYTHON:
        return None
    try:
        sys.path.insert(0, str(ROOT))
        from goal_convergence.claude_code import fast

        return fast
    except Exception:  # a broken or foreign checkout: the CLI decides and reports
        return None


def fast_answer(fast: ModuleType | None, event: str, data: bytes) -> dict | None:
    """The fast path's answer, or None when the real CLI has work to do (or the fast path cannot run)."""
    try:
        return fast.answer(event, data) if fast else None
    except Exception:  # the CLI's slow path meets the same problem, and reports it in one line
        return None


def run_hook(goal: str, event: str, data: bytes, env: dict | None) -> dict:
    """The answer of `goal hook <event>`; a crash of the CLI itself becomes one line."""
    import subprocess

    done = subprocess.run([goal, "hook", event], input=data, capture_output=True, env=env)
    try:
        if done.returncode == 0:
            return json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        pass
    last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
    return one_line(event, f"goal-convergence: `{goal} hook {event}` failed (exit {done.returncode}): {last}")


def one_line(event: str, line: str) -> dict:
    """A problem, told to the user; a slash command's hook tells the model too, which would
    otherwise go on without the command's result."""
    if event != "prompt-expansion":
        return {"systemMessage": line}
    return {"systemMessage": line, "hookSpecificOutput": {
        "hookEventName": "UserPromptExpansion", "additionalContext": f"{line}\nTell the user this; do nothing else."}}


def data_dir() -> Path:
    env = os.environ.get("CLAUDE_PLUGIN_DATA")
    return Path(env) if env else Path.home() / ".claude" / "plugins" / "data" / "goal-convergence"


def venv_goal() -> Path:
    venv = data_dir() / "venv"
    return venv / "Scripts" / "goal.exe" if os.name == "nt" else venv / "bin" / "goal"


def installed_from() -> str | None:
    """The plugin root the private venv was installed from, if it is installed."""
    try:
        return (data_dir() / "venv" / ".installed").read_text(encoding="utf-8").strip()
    except OSError:
        return None


def find_goal() -> str | None:
    import shutil

    on_path = shutil.which("goal")
    if on_path:
        return on_path
    return str(venv_goal()) if installed_from() and venv_goal().exists() else None


def needs_install(goal: str | None) -> bool:
    """No CLI at all, or the private one came from an older copy of the plugin (an update moves the root)."""
    return goal is None or (goal == str(venv_goal()) and installed_from() != str(ROOT))


def not_installed() -> str:
    failed = data_dir() / "install-failed.txt"
    why = f" (the plugin's own install failed: see {failed})" if failed.exists() else ""
    return (f"goal-convergence: the `goal` CLI is not installed{why}; install it with "
            f"`pipx install '{ROOT}'` (Python 3.11+), then restart the session")


def start_install() -> str | None:
    """Start installing the CLI into the plugin's data folder, in the background; the message to
    show the user, only on the session that starts it."""
    target = data_dir()
    if sys.version_info < MIN_PYTHON or (target / "install-failed.txt").exists():
        return not_installed()
    marker = target / "installing"
    try:
        # private like the home: the log and the venv are the user's alone
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(target, 0o700)
        if marker.exists() and time.time() - marker.stat().st_mtime > STALE_INSTALL:
            marker.unlink()  # an install that was killed: try again
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return None  # another session started it and told its user
    except OSError as exc:
        return f"goal-convergence: cannot write {target} ({exc}); {not_installed()}"
    import subprocess

    with os.fdopen(os.open(target / "install.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
        subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--install"], stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log, start_new_session=True)
    return (f"goal-convergence: installing its Python package into {target / 'venv'} (about a minute, once "
            f"per plugin version); /goal-convergence:goal works once it is done")


def install() -> int:
    """Create ${CLAUDE_PLUGIN_DATA}/venv and pip-install the plugin root into it (run detached)."""
    import subprocess
    import venv

    target = data_dir()
    env_dir = target / "venv"
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    try:
        if not python.exists():
            venv.EnvBuilder(with_pip=True).create(env_dir)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "--disable-pip-version-check",
                        str(ROOT)],
                       check=True)
        (env_dir / ".installed").write_text(str(ROOT) + "\n", encoding="utf-8")
        return 0
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:  # ValueError: venv cannot make the folder
        failed = os.open(target / "install-failed.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fdopen(failed, "w", encoding="utf-8").write(
            f"installing {ROOT} into {env_dir} failed: {exc}\nsee {target / 'install.log'}; delete this file to "
            f"let the plugin try again, or install the CLI yourself with `pipx install '{ROOT}'`\n")
        return 1
    finally:
        (target / "installing").unlink(missing_ok=True)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # never a traceback in the user's session
        sys.stdout.write(json.dumps({"systemMessage": f"goal-convergence: the plugin's launcher failed "
                                                      f"({type(exc).__name__}: {exc})"}) + "\n")
