"""Start goal-convergence's `goal` CLI for the plugin's hooks. Standard library only.

    python3 goal-launch.py hook <event>      the hook's JSON on stdin

Hooks run at every stop of every session, and PreToolUse before every tool call, so the usual
answer (no goal here: nothing to do) comes
from the plugin's own stdlib-only fast path, imported from the plugin root, and the real CLI
starts only when there is work. The CLI is `goal` on PATH, else a private virtual environment in
${CLAUDE_PLUGIN_DATA}/venvs/ that SessionStart builds from the plugin root in the background
whenever the plugin's version or content changes, beside the one in use, which it then replaces
in one rename; the Stop hook never installs anything. Whatever goes wrong, a hook prints at most one line and
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
        notice = start_install(goal is not None) if event == "session-start" and needs_install(goal) else None
        if answer is None:
            # the CLI need not run the fast path again: it ran here
            env = {**os.environ, fast.RAN: "1"} if fast else None
            answer = run_hook(goal, event, data, env) if goal else one_line(event, no_cli())
        if notice:
            answer["systemMessage"] = "\n".join(filter(None, [notice, answer.get("systemMessage")]))
    if answer:  # its systemMessage reaches the user's terminal: neutralised where the plugin's code can be loaded
        sys.stdout.write(fast.answer_text(answer) if fast else json.dumps(answer) + "\n")
    return 0


def fast_path() -> ModuleType | None:
    """The plugin's own fast path (goal_convergence/agents/claude_code/fast.py), or None where it cannot run."""
    if sys.version_info < MIN_PYTHON:
        return None
    try:
        sys.path.insert(0, str(ROOT))
        from goal_convergence.agents.claude_code import fast

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


def build_key() -> str:
    """The plugin's version and a hash of what pip installs from it (pyproject.toml and the package's
    files): a new build whenever either changes, wherever the plugin lives. A local-path plugin
    (`--plugin-dir`, `marketplace add /path`) keeps its folder across updates, so the folder cannot
    be the key."""
    import hashlib

    try:
        version = str(json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        version = "unknown"
    digest = hashlib.sha256()
    package = ROOT / "goal_convergence"
    files = [ROOT / "pyproject.toml", *(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)]
    for path in sorted(files):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        digest.update(f"{path.relative_to(ROOT).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return f"{''.join(c if c.isalnum() or c in '.-' else '_' for c in version)}-{digest.hexdigest()[:16]}"


# The venv in use is the build named in <data>/venv.current; a new one is built beside it in
# <data>/venvs/<key> and the pointer is then replaced in one rename, so `goal` never goes missing
# while an update installs (a Stop in that window runs with the old build).
def pointer() -> Path:
    return data_dir() / "venv.current"


def current_build() -> str | None:
    try:
        return pointer().read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def venv_goal(venv: Path) -> Path:
    return venv / "Scripts" / "goal.exe" if os.name == "nt" else venv / "bin" / "goal"


def find_goal() -> str | None:
    """`goal` on PATH, else the private build in use, else the single venv of launchers before 0.2
    (until the first build replaces it)."""
    import shutil

    on_path = shutil.which("goal")
    if on_path:
        return on_path
    build = current_build()
    found = [venv_goal(data_dir() / "venvs" / build)] if build else []
    if (data_dir() / "venv" / ".installed").exists():
        found.append(venv_goal(data_dir() / "venv"))
    return next((str(goal) for goal in found if goal.exists()), None)


def needs_install(goal: str | None) -> bool:
    """No CLI at all, or the private one was built from another version or content of the plugin."""
    return goal is None or (Path(goal).is_relative_to(data_dir()) and current_build() != build_key())


def installing() -> bool:
    marker = data_dir() / "installing"
    try:
        return time.time() - marker.stat().st_mtime <= STALE_INSTALL
    except OSError:
        return False


def no_cli() -> str:
    """Why there is no CLI to run: being installed (no restart needed), or how to install it."""
    if installing():
        return (f"goal-convergence: its Python package is being installed into {data_dir() / 'venvs'} (about a "
                f"minute); try again in a moment, no restart needed")
    failed = data_dir() / "install-failed.txt"
    why = f" (the plugin's own install failed: see {failed})" if failed.exists() else ""
    return (f"goal-convergence: the `goal` CLI is not installed{why}; install it with "
            f"`pipx install '{ROOT}'` (Python 3.11+), then restart the session")


def private(path: Path, *, folder: bool = False) -> None:
    """The plugin's data folder and its files are the user's alone (0700/0600)."""
    try:
        path.chmod(0o700 if folder else 0o600)
    except OSError:
        pass


def start_install(update: bool) -> str | None:
    """Start building the CLI's venv in the plugin's data folder, in the background; the message to
    show the user, only on the session that starts it."""
    target = data_dir()
    if sys.version_info < MIN_PYTHON or (target / "install-failed.txt").exists():
        return None if update else no_cli()
    marker = target / "installing"
    try:
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
        private(target, folder=True)
        if marker.exists() and not installing():
            marker.unlink()  # an install that was killed: try again
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return None  # another session started it and told its user
    except OSError as exc:
        return f"goal-convergence: cannot write {target} ({exc}); {no_cli()}"
    import subprocess

    log_path = target / "install.log"
    with open(log_path, "ab") as log:
        private(log_path)
        subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--install"], stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log, start_new_session=True)
    if update:
        return ("goal-convergence: updating its Python package in the background; the current one serves "
                "until the new one is ready")
    return (f"goal-convergence: installing its Python package into {target / 'venvs'} (about a minute, once "
            f"per plugin version); /goal-convergence:goal works once it is done")


def install() -> int:
    """Build <data>/venvs/<key> from the plugin root, then point venv.current at it (run detached)."""
    import shutil
    import subprocess
    import venv

    target, key = data_dir(), build_key()
    env_dir = target / "venvs" / key
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    try:
        if key != current_build():
            shutil.rmtree(env_dir, ignore_errors=True)  # a half-built leftover of a killed install
        venv.EnvBuilder(with_pip=True).create(env_dir)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "--disable-pip-version-check",
                        str(ROOT)],
                       check=True)
        switch(key)
        return 0
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:  # ValueError: venv cannot make the folder
        failed = os.open(target / "install-failed.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(failed, "w", encoding="utf-8") as fh:
            fh.write(f"installing {ROOT} into {env_dir} failed: {exc}\nsee {target / 'install.log'}; delete this "
                     f"file to let the plugin try again, or install the CLI yourself with `pipx install '{ROOT}'`\n")
        return 1
    finally:
        (target / "installing").unlink(missing_ok=True)


def switch(key: str) -> None:
    """Make build ``key`` the one in use, in one rename; keep the one it replaces (a hook may be running
    from it) and remove the older ones."""
    import shutil

    previous = current_build()
    tmp = pointer().with_name(f".venv.current.{os.getpid()}")
    tmp.write_text(key + "\n", encoding="utf-8")
    os.replace(tmp, pointer())
    for old in (data_dir() / "venvs").iterdir():
        if old.name not in (key, previous):
            shutil.rmtree(old, ignore_errors=True)
    if previous:  # the single venv of launchers before 0.2, once it is not the one just replaced
        shutil.rmtree(data_dir() / "venv", ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # never a traceback in the user's session
        sys.stdout.write(json.dumps({"systemMessage": f"goal-convergence: the plugin's launcher failed "
                                                      f"({type(exc).__name__}: {exc})"}) + "\n")
