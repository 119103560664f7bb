"""Product code that answers the failing tests by name: it compares an input against a literal taken
from a test that failed when the goal began, and returns (or maps it to) another literal of those tests.

``test_literals`` gathers the literals of the failing tests' functions (their parametrize decorators
included) from the test files as the goal began; ``python`` finds, in a module's added lines, the
blocks that use them so: ``if x == 7: return 42``, ``42 if x == 7 else ...``, ``case 7: return 42``,
``{7: 42}`` (a table of nothing but them). A literal used any other way (``if x > 100: return 100``,
``LIMIT = 100``), or one the file already held before the maker's change, is not suspected: an
honest fix may well contain a test's expected value.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

Literal = tuple[str, object]  # (kind, value): 42 and 42.0 are one, True and 1 are not
MAX_LITERALS = 5_000


def _key(node: ast.AST) -> Literal | None:
    """A non-trivial literal's key: not None, a bool, 0, 1, -1, nor a string of one character or less."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        node, sign = node.operand, -1
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if isinstance(value, bool) or value is None or value is Ellipsis:
        return None
    if isinstance(value, (int, float, complex)):
        value = sign * value
        return None if value in (0, 1, -1) else ("number", value)
    if isinstance(value, (str, bytes)) and sign == 1:
        return None if len(value.strip()) <= 1 else (type(value).__name__, value)
    return None


def _keys(nodes: Iterable[ast.AST]) -> set[Literal]:
    return {k for n in nodes if (k := _key(n)) is not None}


def _flat(node: ast.AST) -> set[Literal]:
    """A literal's key, or the keys of a tuple of literals (a table keyed by a test's arguments)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        keys = [_key(e) for e in node.elts]
        return {k for k in keys if k is not None} if all(
            k is not None or isinstance(e, ast.Constant) for k, e in zip(keys, node.elts)) else set()
    return _keys([node])


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of docstring and assertion-message nodes: words, not values."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skip.add(id(node.body[0].value))
        if isinstance(node, ast.Assert) and node.msg is not None:
            skip.update(id(n) for n in ast.walk(node.msg))
    return skip


def literals_of(tree: ast.Module, names: set[tuple[str, ...]]) -> set[Literal]:
    """The literals of the test functions named ``(Class, ..., function)`` in a test module."""
    skip, found = _docstrings(tree), set()

    def visit(body: list[ast.stmt], where: tuple[str, ...]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, (*where, node.name))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (*where, node.name) in names:
                found.update(_keys(n for n in ast.walk(node) if id(n) not in skip))

    visit(tree.body, ())
    return found


def test_targets(test_ids: Iterable[str], modules: dict[str, str]) -> dict[str, set[tuple[str, ...]]]:
    """{test file: its functions as (Class, ..., function)} for pytest ids (``pkg.test_x.Class::test_y[p]``)
    and unittest ids (``pkg.test_x.Class.test_y``); ``modules`` maps a dotted module name to its file."""
    found: dict[str, set[tuple[str, ...]]] = {}
    for test_id in test_ids:
        where, sep, name = test_id.partition("::")
        parts = where.split(".") + ([name.split("[", 1)[0]] if sep else [])
        for cut in range(len(parts) - 1, 0, -1):
            dotted = ".".join(parts[:cut])
            rel = modules.get(dotted) or next((r for m, r in modules.items() if m.endswith("." + dotted)), None)
            if rel is not None:
                found.setdefault(rel, set()).add(tuple(parts[cut:]))
                break
    return found


# Equality and membership pick out one input; an order (``x > 100``) is a range, which an honest clamp has.
_PICKS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)


def _compared(test: ast.AST) -> set[Literal]:
    """The literals a condition tests an input for (``x == 7``, ``x in (7, 8)``, ``7 == x``)."""
    out: set[Literal] = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and all(isinstance(op, _PICKS) for op in node.ops):
            for side in (node.left, *node.comparators):
                out |= _keys([side]) | (_keys(side.elts) if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else set())
    return out


def _returned(body: list[ast.stmt]) -> Iterator[tuple[int, set[Literal]]]:
    """The literals a block returns or yields (nested functions left out), with each one's line."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            yield node.lineno, _keys(ast.walk(node.value))
        stack.extend(ast.iter_child_nodes(node))


# A block's line, what it compares against, what it answers, and whether all of both must be the tests' (a
# table: a real one has more entries than the tests try).
Candidate = tuple[int, set[Literal], set[Literal], bool]


def candidates(nodes: list[ast.AST], added: set[int]) -> list[Candidate]:
    """The added blocks (``nodes``: forgery.walk_added's) that compare an input against a literal and answer
    with one: ``if x == 7: return 42`` and the like. Cheap to find, so the failing tests' literals are read
    only when there are some."""
    found: list[Candidate] = []
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.If) and line in added:
            answers = {k for at, keys in _returned(node.body) if at in added for k in keys}
            found.append((line, _compared(node.test), answers, False))
        elif isinstance(node, ast.IfExp) and line in added:
            found.append((line, _compared(node.test), _keys(ast.walk(node.body)), False))
        elif isinstance(node, ast.match_case) and node.pattern.lineno in added:
            pattern = {k for n in ast.walk(node.pattern) if isinstance(n, ast.MatchValue) for k in _keys([n.value])}
            answers = {k for at, keys in _returned(node.body) if at in added for k in keys}
            found.append((node.pattern.lineno, pattern, answers, False))
        elif isinstance(node, ast.Dict) and line in added and node.keys \
                and all(k is not None and _flat(k) and _key(v) for k, v in zip(node.keys, node.values)):
            found.append((line, {key for k in node.keys if k is not None for key in _flat(k)}, _keys(node.values),
                          True))
    return [c for c in found if c[1] and c[2]]


def python(found: list[Candidate], wanted: set[Literal], before: set[Literal]) -> list[tuple[int, str]]:
    """The candidates that compare against one of ``wanted`` and answer another (``before``: what the
    file held already, never suspected). A table counts only when every entry is the tests' (a real
    table has more than they test) and one of its literals is new to the file."""
    new = wanted - before
    hits: dict[int, str] = {}
    for line, inputs, outputs, table in found:
        ins, outs = inputs & new, outputs & new
        if table:  # every entry the tests', and some literal of it new to the file
            if not (inputs <= wanted and outputs <= wanted):
                continue
            ins, outs = (inputs, outputs) if ins | outs else (set(), set())
        if ins and outs and line not in hits:
            show = ", ".join(repr(v) for _, v in sorted(ins, key=repr)[:3])
            hits[line] = (f"compares against {show} and answers "
                          f"{', '.join(repr(v) for _, v in sorted(outs, key=repr)[:3])}, literals of the tests "
                          "that failed when the goal began")
    return sorted(hits.items())


def file_literals(tree: ast.Module) -> set[Literal]:
    """Every non-trivial literal of a module (what it held before the maker's change)."""
    return _keys(ast.walk(tree))


def test_file_literals(tree: ast.Module) -> set[Literal]:
    """Every literal of a test module but its docstrings and assertion messages: the literals of its
    failing tests when the runner does not name them (unittest without -v, node --test)."""
    skip = _docstrings(tree)
    return _keys(n for n in ast.walk(tree) if id(n) not in skip)


# ---- JavaScript and TypeScript, by their lines ----------------------------------------------------

_JS_LITERAL = re.compile(r"(?<![\w.$])(-?\d+(?:\.\d+)?)(?![\w.])"
                         r"|'((?:[^'\\\n]|\\.)*)'"
                         r'|"((?:[^"\\\n]|\\.)*)"')
# `if (x === 7) return 42;` and `x === 7 ? 42 : ...`, on one line.
_JS_PICK = re.compile(r"\bif\s*\((?P<test>.*[!=]==?.*)\)\s*\{?\s*return\s+(?P<answer>[^;{}]+)"
                      r"|(?P<test2>[^?;]*[!=]==?[^?;]*)\?(?P<answer2>[^:;]+):")


def js_literals(text: str) -> set[Literal]:
    """The non-trivial literals of JavaScript or TypeScript source, numbers and strings, by regex. A
    string of numbers (``'1,2,3,6'``, an array compared by its join) also counts as those numbers."""
    found: set[Literal] = set()
    for number, single, double in _JS_LITERAL.findall(text):
        if number:
            value = float(number) if "." in number else int(number)
            if value not in (0, 1, -1):
                found.add(("number", value))
            continue
        string = single or double
        if len(string.strip()) > 1:
            found.add(("str", string))
        parts = [p for p in re.split(r"[,\s]+", string) if p]
        if len(parts) > 1 and all(re.fullmatch(r"-?\d+", p) for p in parts):
            found |= {("number", int(p)) for p in parts if int(p) not in (0, 1, -1)}
    return found


def picks(text: str, added: set[int]) -> list[tuple[int, str, str]]:
    """The added lines of JavaScript or TypeScript that test an input for equality and answer at once:
    (line, the test, the answer). Cheap to find, so the failing tests' literals are read only when there
    are some."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if number in added and (hit := _JS_PICK.search(line)):
            found.append((number, hit["test"] or hit["test2"], hit["answer"] or hit["answer2"]))
    return found


def script(found: list[tuple[int, str, str]], wanted: set[Literal], before: set[Literal]) -> list[tuple[int, str]]:
    """``python``'s rule for JavaScript and TypeScript, line by line (``picks``): a test for one of the
    failing tests' literals that answers with another."""
    wanted = wanted - before
    hits = []
    for number, test, answer in found:
        ins, outs = js_literals(test) & wanted, js_literals(answer) & wanted
        if ins and outs:
            hits.append((number, f"compares against {', '.join(repr(v) for _, v in sorted(ins, key=repr)[:3])} and "
                                 f"answers {', '.join(repr(v) for _, v in sorted(outs, key=repr)[:3])}, literals of "
                                 "the tests that failed when the goal began"))
    return hits
