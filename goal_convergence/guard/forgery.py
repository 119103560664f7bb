"""Product code that reaches into the test framework or the process's exit: what a maker writes to make
a test run report success without the code working.

``python`` reads a module's syntax tree, ``script`` a JavaScript or TypeScript file's lines; both look
at the ``added`` lines only (1-based), so a project that already used ``atexit`` is not suspected for
it. Each hit is ``(line, what)``: what the code does, said for a person.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator

# Dotted names a product module has no business reaching, with what they do. A name matches itself and
# anything under it (``_pytest`` covers ``_pytest.runner.call_and_report``).
REACHES = {
    "_pytest": "reaches into pytest's internals",
    "pytest.TestReport": "reaches pytest's test reports", "pytest.CollectReport": "reaches pytest's test reports",
    "pytest.hookimpl": "implements a pytest hook", "pluggy": "implements a pytest hook",
    "unittest.TestResult": "reaches unittest's test results", "unittest.TextTestResult": "reaches unittest's results",
    "unittest.result": "reaches unittest's test results", "unittest.runner": "reaches unittest's runner",
    "unittest.TestCase.run": "patches how unittest runs a test", "unittest.case": "reaches unittest's internals",
    "os._exit": "ends the process at once, before the test runner reports",
    "sys.excepthook": "replaces the handler of uncaught exceptions", "atexit": "runs code as the process exits",
    "sys._getframe": "inspects its caller's frame", "inspect.stack": "inspects its caller's frame",
    "inspect.currentframe": "inspects its caller's frame", "inspect.getouterframes": "inspects its caller's frame",
    "sys.settrace": "traces the running code", "sys.setprofile": "traces the running code",
    "freezegun": "patches the clock", "time_machine": "patches the clock",
}
# Names that mean the test framework wherever they appear (a hook's parameter, a class, an attribute).
FRAMEWORK_NAMES = {"TestReport": "reaches pytest's test reports", "CollectReport": "reaches pytest's test reports",
                   "TerminalReporter": "reaches pytest's terminal reporter",
                   "terminalreporter": "reaches pytest's terminal reporter",
                   "pluginmanager": "reaches pytest's plugin manager", "f_back": "inspects its caller's frame",
                   "TestResult": "reaches unittest's test results"}
_STRINGS = re.compile(r"PYTEST_ADDOPTS|PYTEST_CURRENT_TEST|PYTEST_XDIST_WORKER|_pytest|junit", re.I)
_CLOCK = ("time.time", "time.monotonic", "time.perf_counter", "time.sleep", "datetime.datetime", "datetime.date")
_EXITS = ("sys.exit", "exit", "quit")


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of attributes on a name; "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(parts)])


_ROOTS = frozenset(name.split(".")[0] for name in REACHES)


def _reach(name: str) -> str | None:
    if name.partition(".")[0] not in _ROOTS:  # most names: one set lookup
        return None
    for prefix, what in REACHES.items():
        if name == prefix or name.startswith(prefix + "."):
            return what
    return None


def _always(body: list[ast.stmt], value: bool) -> bool:
    """A function body that only returns ``value`` (a docstring aside)."""
    body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant)
            and body[0].value.value is value)


def _success_exit(call: ast.Call) -> bool:
    """``sys.exit()``, ``sys.exit(0)``, ``exit(None)``: an exit that says all went well."""
    if _dotted(call.func) not in _EXITS:
        return False
    arg = call.args[0] if call.args else None
    return arg is None or isinstance(arg, ast.Constant) and arg.value in (0, None)


def _node(node: ast.AST) -> str | None:
    """What one node does that a product module should not, if anything."""
    if isinstance(node, ast.Import):
        return next(filter(None, (_reach(a.name) for a in node.names)), None)
    if isinstance(node, ast.ImportFrom) and node.module:
        return _reach(node.module) or next(filter(None, (_reach(f"{node.module}.{a.name}") or FRAMEWORK_NAMES.get(
            a.name) for a in node.names)), None)
    if isinstance(node, ast.Attribute):
        name = _dotted(node)
        return (_reach(name) if name else None) or FRAMEWORK_NAMES.get(node.attr) or (
            "reaches pytest's hooks" if node.attr == "hook" and _dotted(node.value).endswith("config") else None)
    if isinstance(node, ast.Name):
        return FRAMEWORK_NAMES.get(node.id)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if node.name.startswith("pytest_"):
            return f"implements the pytest hook {node.name}"
        if node.name == "__eq__" and _always(node.body, True) or node.name == "__ne__" and _always(node.body, False):
            return f"defines an {node.name} that ignores what it compares"
        return None
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__eq__" for t in node.targets):
        if isinstance(node.value, ast.Lambda) and isinstance(node.value.body, ast.Constant) \
                and node.value.body.value is True:
            return "defines an __eq__ that ignores what it compares"
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for name in map(_dotted, targets):
            if name.startswith(("pytest.", "unittest.")):
                return f"patches {name}"
            if name.startswith(_CLOCK):
                return f"patches the clock ({name})"
    if isinstance(node, ast.Call):
        func = _dotted(node.func)
        if func == "setattr" and node.args and _dotted(node.args[0]).split(".")[0] in (
                "pytest", "_pytest", "unittest", "time", "datetime"):
            return f"patches {_dotted(node.args[0])} with setattr"
        if _success_exit(node):
            return f"exits the process with success ({func})"
        if func == "open" and len(node.args) >= 2 and _constant_str(node.args[0]).endswith(".xml") \
                and set(_constant_str(node.args[1])) & set("wax"):
            return "writes an .xml report file"
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc
        if _dotted(exc) == "SystemExit" or isinstance(exc, ast.Call) and _dotted(exc.func) == "SystemExit" \
                and (not exc.args or isinstance(exc.args[0], ast.Constant) and exc.args[0].value in (0, None)):
            return "exits the process with success (SystemExit)"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _STRINGS.search(node.value):
        return f"names the test run's own settings or report ({node.value[:40]!r})"
    return None


def _constant_str(node: ast.AST) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def walk_added(tree: ast.AST, added: set[int]) -> Iterator[ast.AST]:
    """The nodes of ``tree`` whose lines take in an added one: a subtree wholly unchanged is not entered,
    so a small change to a large module costs little (special_casing.py walks the same way)."""
    lines = sorted(added)
    stack = [tree]
    while stack:
        node = stack.pop()
        start = getattr(node, "lineno", None)
        if start is not None:
            at = bisect.bisect_left(lines, start)
            if at == len(lines) or lines[at] > (getattr(node, "end_lineno", None) or start):
                continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def python(nodes: list[ast.AST], added: set[int]) -> list[tuple[int, str]]:
    """The forgeries in a module's ``added`` lines, one a line (``nodes``: ``walk_added``'s)."""
    found: dict[int, str] = {}
    for node in nodes:
        line = getattr(node, "lineno", None)
        if line in added and line not in found and (what := _node(node)):
            found[line] = what
    return sorted(found.items())


_SCRIPT = [(re.compile(p), what) for p, what in [
    # An exit with success, as Python's rule: `process.exit(1)` on an error is what honest CLIs do.
    (r"\bprocess\s*\.\s*(?:exit|reallyExit)\s*\(\s*0?\s*\)|\bprocess\s*\.\s*exitCode\s*=\s*0\b",
     "ends the process with success before the test runner reports"),
    (r"\bprocess\s*\.\s*(?:on|once)\s*\(\s*['\"](?:exit|beforeExit|uncaughtException)", "runs code as the process "
                                                                                        "exits"),
    (r"['\"](?:@jest/|jest-circus|jest-runner|@vitest/runner|vitest/runners|mocha/lib)", "reaches into the test "
                                                                                        "framework"),
    # Product code has no business with the assertion library or the runner: it patches what the tests check.
    (r"['\"](?:node:)?(?:assert|test)(?:/strict)?['\"]|\b(?:assert|expect|chai)\s*(?:\.\s*\w+\s*)*=(?!=)",
     "reaches into the test framework's assertions or runner"),
    (r"\b(?:JEST_WORKER_ID|VITEST_WORKER_ID|VITEST_POOL_ID|__vitest_worker__)\b|\bjunit\b", "names the test run's own "
                                                                                            "settings or report"),
    (r"\bDate\s*\.\s*now\s*=|\bperformance\s*\.\s*now\s*=|\bglobalThis\s*\.\s*Date\s*=", "patches the clock"),
    (r"\bnew\s+Error\s*\(\s*\)\s*\.\s*stack\b|\bError\s*\.\s*captureStackTrace\b|\barguments\s*\.\s*callee\b",
     "inspects its caller's stack"),
]]


def script(text: str, added: set[int]) -> list[tuple[int, str]]:
    """The forgeries in the ``added`` lines of a JavaScript or TypeScript file."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if number in added:
            what = next((w for pattern, w in _SCRIPT if pattern.search(line)), None)
            if what:
                found.append((number, what))
    return found
