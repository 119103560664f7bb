"""What a maker's shell command reaches of the judge: goal-convergence's CLI, package or launcher, or
its files under the home (guarded.py). The answer is a short phrase naming it, or None.

Robust, not clever. The command is split the way a shell would split it (shlex, with the operators
``; & | ( ) < >`` apart and newlines as ``;``), and every simple command in it is looked at: the
`goal` command as a command word anywhere in a pipeline, list or subshell, behind wrappers (``env``,
``sudo``, ``xargs``, ``timeout``...), in ``$(...)``, backquotes, ``<(...)``, ``bash -c '...'`` and
``eval``; ``python -m goal_convergence``, any word naming the ``goal_convergence`` package or
``goal-launch.py``; a command word made by a substitution or a variable when `goal` is named
anywhere in the command. Only ``goal blocked ...`` is let through: it only ever escalates. Every word
that is a path is resolved (``~``, ``$HOME``, the session's folder, symlinks) and checked against the
guarded paths, and the whole text for the home spelled out. A command that does not parse is
checked with regular expressions instead.

What it cannot see: a command built at run time from pieces (``g=go; ${g}al pause``, a script file
written first and run next, Python that assembles the module name). Those are the next layers'
work: the `goal` CLI refuses goal-changing commands from any process under a recorded maker
(system/insiders.py, recorded by this hook), and the seal shows any edit of the goal's files made
outside goal-convergence (storage/seal.py).
"""

from __future__ import annotations

import os
import re
import shlex

from .guarded import Guarded

MAX_DEPTH = 4  # nested shells and substitutions followed: far more than real commands use
HONEST = "blocked"  # `goal blocked "why"`: the maker's way out, which only escalates
WRAPPERS = frozenset({"sudo", "doas", "env", "command", "builtin", "exec", "nohup", "time", "nice", "ionice",
                      "timeout", "xargs", "parallel", "stdbuf", "setsid", "chrt", "taskset", "unbuffer", "watch",
                      "strace", "ltrace", "flock", "script", "then", "do", "else", "if", "while", "until", "!",
                      "{", "coproc", "caffeinate", "uv", "pipx", "poetry", "pdm", "hatch", "rye", "conda", "npx"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "su"})
INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php)$")
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PLACEHOLDER = re.compile(r"__gcsub(\d+)__")
PACKAGE = re.compile(r"(?<![\w/.-])goal_convergence(?![\w/-])|goal-launch\.py")
GOAL_WORD = re.compile(r"(?<![\w.-])goal(?![\w./-])")
# `goal <subcommand>` where no shell parse is possible, and a quoted "goal" in inline code
BARE_GOAL = re.compile(r"(?:^|[\s;&|(`$/])goal\s+(?!" + HONEST + r"\b)[\w-]+")
QUOTED_GOAL = re.compile(r"""(?:['"]|/)goal['"](?!\s*,\s*['"]""" + HONEST + r"""['"])""")
OPERATORS = frozenset(";&|()")


def reaches(command: str, guarded: Guarded) -> str | None:
    """What of the judge ``command`` reaches, in a few words, or None."""
    named = guarded.text_names(command)
    if named:
        return f"names goal-convergence's files (`{named}`)"
    return _text(command, guarded, 0)


def _text(text: str, guarded: Guarded, depth: int) -> str | None:
    if depth > MAX_DEPTH:
        return None
    outer, inner = _substitutions(text)
    for code in inner:
        found = _text(code, guarded, depth + 1)
        if found:
            return found
    try:
        words = _split(outer)
    except ValueError:  # unbalanced quotes: a shell would refuse it too, but look at it anyway
        found = BARE_GOAL.search(text) or PACKAGE.search(text)
        return f"runs goal-convergence (`{found.group(0).strip()}`)" if found else None
    for simple in _simple_commands(words):
        found = _words(simple, inner, text, guarded, depth)
        if found:
            return found
    return None


def _substitutions(text: str) -> tuple[str, list[str]]:
    """``text`` with each ``$(...)``, ``<(...)``, ``>(...)`` and backquoted command replaced by a placeholder
    word, and the commands they hold (single quotes are left alone: nothing runs in them)."""
    out: list[str] = []
    inner: list[str] = []
    i, single, double = 0, False, False
    while i < len(text):
        c = text[i]
        if single or c == "\\":
            single = single and c != "'"
            step = 2 if c == "\\" and not single else 1
            out.append(text[i:i + step])
            i += step
            continue
        single = c == "'" and not double
        double = double != (c == '"')
        if c == "`":
            end = text.find("`", i + 1)
            start, end = i + 1, len(text) if end < 0 else end
        elif c in "$<>" and text[i + 1:i + 2] == "(":
            start, end = i + 2, _closing(text, i + 1)
        else:
            out.append(c)
            i += 1
            continue
        inner.append(text[start:end])
        out.append(f"__gcsub{len(inner) - 1}__")
        i = end + 1
    return "".join(out), inner


def _closing(text: str, opening: int) -> int:
    depth = 0
    for i in range(opening, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _split(text: str) -> list[str]:
    lexer = shlex.shlex(text.replace("\r", ";").replace("\n", ";"), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # `a#b` is one word to a shell; a comment is words after a command word
    return list(lexer)


def _simple_commands(words: list[str]) -> list[list[str]]:
    """The words of each simple command, redirections (and the pure-digit fd before one) left out."""
    commands: list[list[str]] = [[]]
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            commands[-1].append(word)  # a redirection's target is still a path to check
            continue
        if word and set(word) <= OPERATORS | set("<>"):
            if "<" in word or ">" in word:
                skip = True
                if commands[-1] and commands[-1][-1].isdigit():
                    commands[-1].pop()
            else:
                commands.append([])
            continue
        commands[-1].append(word)
    return [c for c in commands if c]


def _words(words: list[str], inner: list[str], text: str, guarded: Guarded, depth: int) -> str | None:
    for word in words:
        found = _path_word(word, guarded)
        if found:
            return found
    return _command(words, inner, text, guarded, depth)


def _path_word(word: str, guarded: Guarded) -> str | None:
    if PACKAGE.search(word):
        return f"runs goal-convergence (`{PACKAGE.search(word).group(0)}`)"
    value = word.split("=", 1)[1] if "=" in word and (word.startswith("-") or ASSIGNMENT.match(word)) else word
    if "/" in value or value.startswith("~") or value in (".", ".."):
        reached = guarded.reaches(value)
        if reached:
            return f"names goal-convergence's files (`{reached}`)"
        if os.path.basename(value) == "goal" and os.access(guarded.resolve(value), os.X_OK):
            return f"names the goal-convergence CLI (`{value}`)"
    return None


def _command(words: list[str], inner: list[str], text: str, guarded: Guarded, depth: int) -> str | None:
    """What the simple command ``words`` runs of goal-convergence, or None."""
    i = 0
    while i < len(words) and ASSIGNMENT.match(words[i]):
        i += 1
    if i >= len(words):
        return None
    word, rest = words[i], words[i + 1:]
    name = os.path.basename(word)
    dynamic = [inner[int(n)] for n in PLACEHOLDER.findall(word)]
    if dynamic or word.startswith("$"):  # `$(which goal) pause`, `$G pause`: named by what it expands to
        said = " ".join(dynamic) if dynamic else text
        shown = PLACEHOLDER.sub(lambda m: f"$({inner[int(m.group(1))]})", word)
        return f"runs a command named at run time (`{shown} ...`) in a command that names `goal`" \
            if GOAL_WORD.search(said) or PACKAGE.search(said) else None
    if name == "goal":
        return None if rest[:1] == [HONEST] else f"runs the goal-convergence CLI (`{' '.join(['goal', *rest[:1]])}`)"
    if name == "eval":
        return _text(" ".join(rest), guarded, depth + 1)
    if name in SHELLS:
        code = _flag_value(rest, "c")
        return _text(code, guarded, depth + 1) if code is not None else None
    if INTERPRETERS.match(name):
        return _interpreter(rest)
    if name in WRAPPERS:  # whatever it runs is among its words: try each of them as the command word
        starts = [j for j, w in enumerate(rest) if os.path.basename(w) not in WRAPPERS]
        return next(filter(None, (_command(rest[j:], inner, text, guarded, depth) for j in starts)), None)
    if name == "find":
        starts = [j + 1 for j, w in enumerate(rest) if w in FIND_EXEC]
        return next(filter(None, (_command(rest[j:], inner, text, guarded, depth) for j in starts)), None)
    return None


def _flag_value(rest: list[str], letter: str) -> str | None:
    """The argument of a one-letter flag (``-c CODE``, ``-lc CODE``) before the first operand."""
    for j, word in enumerate(rest):
        if word.startswith("--"):
            continue
        if not word.startswith("-") or word == "-":
            return None
        if letter in word[1:]:
            return rest[j + 1] if j + 1 < len(rest) else None
    return None


def _interpreter(rest: list[str]) -> str | None:
    """``python -m goal_convergence`` (also as ``-mgoal_convergence``), or inline code that runs `goal`."""
    for j, word in enumerate(rest):
        module = word[2:] or (rest[j + 1] if j + 1 < len(rest) else "") if word.startswith("-m") else ""
        if module.split(".")[0] == "goal_convergence":
            return "runs goal-convergence (`python -m goal_convergence`)"
        if word in ("-c", "-e", "--eval", "-p", "--print") and j + 1 < len(rest) and QUOTED_GOAL.search(rest[j + 1]):
            return "runs the goal-convergence CLI from inline code"
    return None
