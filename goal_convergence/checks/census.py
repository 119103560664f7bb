"""The test census of a run: how many tests ran, passed, failed, were skipped, xfailed or deselected,
and which: from pytest's JUnit XML (``runner_env`` asks for it), else from the streamed output of
pytest, unittest, jest, vitest, go test or cargo test (``CensusScanner``).

The integrity guard compares censuses to catch a maker that deletes, skips or deselects tests, so a
census says only what the runner said: a count it did not give is None, and a list of ids that may
not name every test (pytest's default summary names failures only) is dropped, or tests would look
gone once they pass."""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from ..models import Census, TestOutcome
from ..system.lines import LineScanner, decode_line, line_end
from ..system.sieve import SPACE, Keys, Lines
from .flood import Beyond, beyond, names, tally, verbose, watched, pytest_id as _pytest_id

JUNIT_FILE = "pytest-junit.xml"  # the report's name unless the caller gives one (conditions.py: a random one)

# Best to worst. A test's outcomes are a bit mask: pytest reports a test that errs in teardown twice
# (passed, then error); the worse is the test's outcome, and both count against the runner's counts.
_ORDER: tuple[TestOutcome, ...] = ("passed", "skipped", "xfailed", "xpassed", "failed")
_BIT = {outcome: 1 << i for i, outcome in enumerate(_ORDER)} | {"errors": 1 << 4}
# The runners' words (lowercased) and marks, for a test or in a summary; any other is a skip.
_WORDS = {word: key for key, words in {
    "passed": "passed|pass|ok|✓|√", "failed": "failed|fail|failures|✕|×", "errors": "error|errors",
    "skipped": "skipped|ignored|todo|pending", "xfailed": "xfailed|xfail|expected failure|expected failures",
    "xpassed": "xpassed|xpass|unexpected success|unexpected successes", "deselected": "deselected|filtered out",
}.items() for word in words.split("|")}
# What a runner's summary counts besides passed and failed: the rest stays None.
_SAYS = {"pytest": "skipped xfailed deselected", "unittest": "skipped xfailed", "cargo": "skipped deselected"}
_MAX_LINE, _JEST_LINES = 4096, 2000  # jest: how long its describe headings are looked for without a test
_MAX_MEMO, _MEMO_LINE = 10_000, 256  # a flood of one verbose test line costs a set lookup a line
# The lines the rules below can match (sieve.py): unless every line counts (``_busy``), no other is read.
# Case-sensitive, as the rules are.
_MARKS = tuple(mark.encode() for mark in "✓✕×○✎↓√❯")
_KEYS = Keys(
    starts=(b"PASS", b"FAIL", b"ERROR", b"XFAIL", b"XPASS", rb"\[gw", b"Ran ", b"test ", b"Running ", b"Doc-tests ",
            b"=== RUN", b"--- ", b"ok  \t", rb"\?   \t", b"Tests", b"no tests ran", b"=+" + SPACE + b"*no tests ran",
            *_MARKS),
    indented=(b"PASS", b"FAIL", b"Tests", b"Running ", b"Doc-tests ", b"=== RUN", b"--- ", b"no tests ran", *_MARKS),
    counted=(b"[a-z]",),  # pytest's "3 passed in 0.1s"
    after_word=(b"::",), after_name=(rb" \(",),  # a pytest id; unittest's "test_x (module.Case) ... ok"
    runs=(b"::",))  # a flood of verbose pytest lines (flood.py)

_PYTEST_OUTCOMES = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"  # what a verbose line says of its test
_LINE = re.compile("|".join(f"(?P<{name}>{rule})" for name, rule in [
    ("sum", r"=*\s*(?P<sums>(?:\d+ [a-z]+(?: [a-z]+)?, )*\d+ [a-z]+(?: [a-z]+)?|no tests ran)"
            r" in \d+(?:\.\d+)?s(?: \([\d:]+\))?\s*=*"),  # pytest
    ("pyv", rf"(?P<pv>[^\s:]+::\S.*?)(?: <- \S+)? (?P<pvo>{_PYTEST_OUTCOMES})(?: .*)?"),
    ("pys", r"(?:\[gw\d+\] \[ *\d+%\] )?(?P<pso>PASSED|FAILED|ERROR|XFAIL|XPASS) (?P<ps>[^\s:]+::\S.*?)(?: - .*)?"),
    ("ran", r"Ran (?P<rann>\d+) tests? in \d+(?:\.\d+)?s"),  # unittest, and verbose:
    # A method's name does not begin with a digit (the sieve's key after_name relies on it).
    ("uv", r"(?P<un>[^\W\d]\w*) \((?P<uc>[\w.]+)\) \.\.\. "
           r"(?P<ur>ok|FAIL|ERROR|skipped.*|expected failure|unexpected \w+)"),
    ("ct", r"test (?P<ctn>\S.*?) \.\.\. (?P<cto>ok|FAILED|ignored)(?:, .*)?"),  # cargo
    ("cres", r"test result: \w+\. (?P<cress>.*)"),
    ("crun", r"\s*(?:Running (?:unittests )?(?P<crs>\S+)(?: \((?P<crb>[^)]+)\))?|Doc-tests (?P<cdoc>\S+))"),
    ("go", r"\s*(?:=== RUN\s.*|--- (?P<goo>PASS|FAIL|SKIP): (?P<gon>\S+) \(.*)"),
    ("gopkg", r"(?:ok  |FAIL|\?   )\t(?P<gop>\S+)(?:\t.*)?"),
    ("js", r"Tests:\s+(?P<jss>.*\d+ total)"),  # jest
    ("jh", r"\s?(?:PASS|FAIL) +(?P<jhf>\S+)(?: \(\d[^)]*\))?"),
    ("vs", r"\s*Tests\s+(?P<vss>\d+ \w+(?: \| \d+ \w+)*) \(\d+\)"),  # vitest
    ("vf", r"\s*[✓❯×↓] \S+ \(\d+ tests?[^)]*\)(?: \d.*)?"),  # a test file's line: nothing to count
    ("mark", r"(?P<mi>\s*)(?P<mk>[✓✕×○✎↓√]) (?P<mt>.*\S)"),  # a jest or vitest test
]))
# Nearly every line a verbose pytest run prints: "path::name[params] PASSED   [ 42%]", its id without a space.
# Whatever this matches the alternation above takes as the same "pyv" (its id ends at the first space, as the
# lazy one does, and the rule before it has no capital), without trying every rule at every character.
_PYTEST_VERBOSE = re.compile(r"(?P<pyv>(?P<pv>[^\s:]+::\S[^ \n]*)"
                             rf" (?P<pvo>{_PYTEST_OUTCOMES})(?: .*)?)")
_UNITTEST_STATUS = re.compile(r"(?:OK|FAILED|NO TESTS RAN)(?: \(([^)]*)\))?")
_COUNT = re.compile(r"(\d+) ([a-z]+(?: [a-z]+)?)")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_CARGO_HASH = re.compile(r"-[0-9a-f]{8,}(?:\.exe)?$")
_JEST_TIME, _VITEST_TIME = re.compile(r" \(\d+(?:\.\d+)? ?m?s\)$"), re.compile(r" \d+(?:\.\d+)?m?s$")
_VITEST_PLACE = re.compile(r"^(\S+\.[cm]?[jt]sx?)(?::\d+:\d+)?(?= > )")  # the verbose reporter's file (and line)
_STRICT_XPASS = "xfail-marked test passes unexpectedly"  # in JUnit XML; pytest counts it failed


# Test ids kept by name, each runner. Past it a run's ids are counted, and only the start's are remembered
# (``Beyond``): a run naming 10 million tests costs what 50,000 do in memory, and a few passes in C (flood.py).
MAX_IDS = 50_000


def _bit(word: str) -> int:
    return _BIT[_WORDS.get(word.lower(), "skipped")]


def normalise_id(test_id: str) -> str:
    """A test id as it stays from run to run: object addresses in parametrize ids become ``0x?``."""
    # Called for every test line of a verbose run: the regex only where an address can be.
    return _ADDRESS.sub("0x?", test_id.strip()) if "0x" in test_id else test_id.strip()


def _counts(text: str) -> Counter[str]:
    return sum((Counter({_WORDS[word]: int(n)}) for n, word in _COUNT.findall(text) if word in _WORDS), Counter())


def _census(runner: str, sums: Counter[str] | None, masks: dict[str, int], past: Beyond | None = None) -> Census:
    outcomes = {test_id: _ORDER[mask.bit_length() - 1] for test_id, mask in masks.items()}
    says = _SAYS.get(runner, "skipped").split()
    if sums is None:  # no summary line (go): the ids are all there is, and say nothing of deselected tests
        if not outcomes:  # go without -v: its package lines only
            return Census(runner=runner)
        sums, says = Counter(outcomes.values()), [key for key in says if key != "deselected"]
    failed = sums["failed"] + sums["errors"]
    ran = sums["passed"] + failed + sums["xpassed"]
    # Skips are left out: pytest's -rA summary names them by place, not by id.
    named = sum((mask & ~_BIT["skipped"]).bit_count() for mask in masks.values()) + (past.ran if past else 0)
    if named < ran + sums["xfailed"]:
        outcomes, past = {}, None
    found = Census(runner=runner, ran=ran, passed=sums["passed"], failed=failed,
                   **{key: sums[key] if key in says else None for key in ("skipped", "xfailed", "deselected")}
                   ).with_outcomes(outcomes)
    if past is not None and outcomes:
        found.ids += past.count
        found._beyond = past
    return found


class CensusScanner(LineScanner):
    """Streams a command's output (``feed`` each read, then ``close``) and keeps what its test runners counted.
    ``expected`` gives the test ids of the goal's start run, asked for only if the output names more than
    ``MAX_IDS`` (``Beyond``)."""

    def __init__(self, expected: Callable[[], Collection[str]] | None = None) -> None:
        super().__init__((_KEYS,))
        self._expected = expected
        self._sums: dict[str, Counter[str]] = {}
        self._ids: dict[str, dict[str, int]] = {}  # outcome masks by id; its keys are the runners seen
        self._summaries: Counter[str] = Counter()  # summary lines by runner: how many sessions the output had
        self._memo: set[bytes] = set()
        self._beyond: dict[str, Beyond] = {}  # by runner: the ids past MAX_IDS
        self._watch: set[bytes] | None = None  # past the bound: the names of the pytest ids a line may be (flood.py)
        self._addresses = self._watched_past = False  # whether one holds an address (normalise_id); the start's
        self._ran: int | None = None  # unittest's "Ran N tests", until its status line
        self._jest_file, self._jest_left, self._cargo = "", 0, ""
        self._jest_stack: list[tuple[int, str]] = []  # (indent, describe name)
        self._go: dict[str, int] = {}  # go tests seen since the last package line
        # Lists naming some tests only are not kept: pytest's short summary without -rA (or -v) names
        # failures, vitest's default reporter the tests of failing files, go without -v its failures.
        self._pytest_listed = self._vitest_partial = self._go_verbose = False

    def _busy(self) -> bool:
        return self._ran is not None or self._jest_left > 0

    def _scan(self, block: bytes, found: list[Lines]) -> None:
        """Read the lines of a block (the last may lack its newline at the end of the output) that hold a key,
        the runs of lines the sieve hands over whole, and every line while every line counts."""
        runs = dict(getattr(found[0], "runs", ()))  # a plain list: every line read alone
        checked = getattr(found[0], "checked", True)
        pos = 0  # where the first line not read yet starts
        for start in sorted({*([0] if self._busy() else []), *found[0], *runs}):
            if start in runs and runs[start] >= pos:
                pos = self._run(block, max(start, pos), runs[start], checked)
            if start >= pos and start < len(block):
                pos = self._read(block, start)
            while pos < len(block) and self._busy():
                pos = self._read(block, pos)

    def _read(self, block: bytes, start: int) -> int:  # the line at ``start``; where the next one starts
        end = line_end(block, start)
        raw, free = block[start:end][:_MAX_LINE], not self._busy()
        if not (free and raw in self._memo) and self._line(decode_line(raw)) and free \
                and len(raw) <= _MEMO_LINE and len(self._memo) < _MAX_MEMO:
            self._memo.add(raw)
        return end + 1

    def _run(self, block: bytes, start: int, end: int, checked: bool = True) -> int:
        """Read the run of lines from ``start`` to ``end`` (sieve.Keys.runs), past the bound of ids in bulk if it
        can (flood.py); where the next line starts. A run not ``checked`` (sieve.Lines) that cannot be read in
        bulk is split by the census's own keys first."""
        while start < end and self._busy():
            start = self._read(block, start)
        lines = (block[start - 1 : end] if start else b"\n" + block[:end]) if start < end else b""
        if (below := len(self._ids.get("pytest", ())) < MAX_IDS) and (each := verbose(lines)) is not None:
            self._verbose(each)  # below the bound: each id noted, as reading its line alone would
            self._pytest_listed |= bool(each)
            return end + 1
        found = None if below else names(lines)
        hits = list(filter(self._watching().__contains__, found)) if found else []
        if found and len(hits) < len(found) and "pytest" not in self._beyond:  # an id past the bound: the start's
            self._past("pytest")  # ids are asked for now, and looked for too
            hits = list(filter(self._watching().__contains__, found))
        while (not found or len(hits) == len(found) or self._addresses and b"0x" in lines) and start < end:
            if not checked:
                self._scan(part := block[start : end + 1], self._sieve.find(part))
                return end + 1
            start = self._read(block, start)  # each line read alone
        if start >= end:
            return max(start, end + 1)
        self._pytest_listed = True
        tally(lines, found, hits, self._past("pytest"), self._verbose)
        return end + 1

    def _verbose(self, each: list[tuple[str, str]]) -> None:  # verbose lines' ids and outcomes, as read alone
        for nodeid, outcome in each:
            self._note("pytest", _pytest_id(nodeid), _bit(outcome))

    def _past(self, runner: str) -> Beyond:
        if runner not in self._beyond:  # the start's ids asked for at the first id past the bound
            self._beyond[runner] = Beyond(set(self._expected()) if self._expected else None)
        return self._beyond[runner]

    def _watching(self) -> set[bytes]:
        """Past the bound, the names of the pytest ids a line may be: those kept, and the start's once asked for."""
        past = self._beyond.get("pytest")
        if self._watch is None or past is not None and not self._watched_past:
            self._watched_past = past is not None
            self._watch, self._addresses = watched([*self._ids["pytest"], *(past.expected or () if past else ())])
        return self._watch

    def _note(self, runner: str, test_id: str, bits: int, ids: dict[str, int] | None = None) -> None:
        bounded = ids is None  # go's ids of one package wait in a dict of their own until its line
        ids = self._ids.setdefault(runner, {}) if ids is None else ids
        key = normalise_id(test_id)
        if key in ids or not bounded or len(ids) < MAX_IDS:
            ids[key] = ids.get(key, 0) | bits
        else:
            self._past(runner).add(key, bool(bits & ~_BIT["skipped"]))

    def _add(self, runner: str, counts: Counter[str]) -> None:
        self._ids.setdefault(runner, {})
        self._sums.setdefault(runner, Counter()).update(counts)
        self._summaries[runner] += 1

    def _line(self, line: str) -> bool:
        """Take in one line; True when what it did depended on nothing before it."""
        if self._ran is not None and line:
            total, self._ran = self._ran, None
            if m := _UNITTEST_STATUS.fullmatch(line):
                c = _counts(", ".join(f"{n} {key.strip()}" for key, n in re.findall(r"([a-z ]+)=(\d+)", m[1] or "")))
                c["passed"] = max(0, total - c.total())  # unittest's total has the skips and xfails in it
                self._add("unittest", c)
                return False
        self._jest_left = max(0, self._jest_left - 1)
        if not (m := _PYTEST_VERBOSE.fullmatch(line) or _LINE.fullmatch(line)):
            if self._jest_left and line[:1].isspace():  # a describe block's heading, maybe
                indent = len(line) - len(line.lstrip())
                self._jest_stack = [*[(i, n) for i, n in self._jest_stack if i < indent], (indent, line.strip())]
            return True
        rule = m.lastgroup
        if rule in ("pyv", "pys"):
            nodeid, outcome = (m["pv"], m["pvo"]) if rule == "pyv" else (m["ps"], m["pso"])
            self._pytest_listed |= rule == "pyv" or outcome == "PASSED"
            self._note("pytest", _pytest_id(nodeid), _bit(outcome))
            return True
        if rule == "uv":
            name, where = m["un"], m["uc"]  # Python >= 3.11 puts the whole id in parentheses
            self._note("unittest", where if where.endswith("." + name) else f"{where}.{name}", _bit(m["ur"]))
            return True
        if rule in ("sum", "cres", "js", "vs"):
            if (c := _counts(m[rule + "s"])) or rule != "sum" or m["sums"] == "no tests ran":  # not "3 files in 2s"
                self._add({"sum": "pytest", "cres": "cargo", "js": "jest", "vs": "vitest"}[rule], c)
            self._jest_left = 0 if rule == "js" else self._jest_left
        elif rule == "ran":
            self._ran = int(m["rann"])
        elif rule == "ct":
            self._note("cargo", f"{self._cargo}::{m['ctn']}".removeprefix("::"), _bit(m["cto"]))
        elif rule == "crun":
            # The hash changes with every build and the folder with CARGO_TARGET_DIR: neither is kept.
            binary = _CARGO_HASH.sub("", re.split(r"[/\\]", m["crb"] or m["crs"] or "")[-1])
            self._cargo = f"doc-tests {m['cdoc']}" if m["cdoc"] else f"{m['crs']} ({binary})" if m["crb"] else binary
        elif rule == "go":
            self._ids.setdefault("go", {})
            self._go_verbose = self._go_verbose or m["goo"] != "FAIL"  # only -v shows runs, passes and skips
            if m["gon"]:
                self._note("go", m["gon"], _bit(m["goo"]), self._go)
        elif rule == "gopkg":
            self._ids.setdefault("go", {})
            for name, mask in self._go.items():
                self._note("go", f"{m['gop']}.{name}", mask)
            self._go = {}
        elif rule == "jh":
            self._jest_file, self._jest_stack, self._jest_left = m["jhf"], [], _JEST_LINES
        elif rule == "mark":
            self._test_mark(len(m["mi"]), m["mk"], m["mt"])
        return False

    def _test_mark(self, indent: int, mark: str, text: str) -> None:
        if mark in "✕○✎√" or (mark in "✓×" and self._jest_left and self._jest_file):
            name = _JEST_TIME.sub("", text)
            name = name.removeprefix("skipped ") if mark == "○" else name.removeprefix("todo ") if mark == "✎" else name
            self._jest_stack, self._jest_left = [(i, n) for i, n in self._jest_stack if i < indent], _JEST_LINES
            names = [self._jest_file, *(n for _, n in self._jest_stack), name]
            self._note("jest", " › ".join(n for n in names if n), _bit(mark))
            return
        name, placed = _VITEST_PLACE.subn(r"\1", _VITEST_TIME.sub("", text))
        self._vitest_partial |= not placed
        self._note("vitest", name, _bit(mark))

    def result(self) -> Census | None:
        """The census of the runner that counted the most tests; None when no runner was recognised."""
        # Go tests with no package line after them keep their bare names.
        go = {**self._ids.get("go", {}), **{normalise_id(n): mask for n, mask in self._go.items()}}
        partial = {"go": not self._go_verbose, "pytest": not self._pytest_listed, "vitest": self._vitest_partial}
        censuses = []
        for runner, ids in self._ids.items():
            masks = {} if partial.get(runner) else go if runner == "go" else ids
            if masks or runner in self._sums or runner == "go":  # not a FAILED line of some script's, alone
                censuses.append(_census(runner, self._sums.get(runner), masks,
                                        None if partial.get(runner) else self._beyond.get(runner)))
        return max(censuses, key=lambda c: (c.ran or 0) + (c.skipped or 0) + (c.xfailed or 0), default=None)


def _junit(path: Path) -> tuple[dict[str, int], int] | None:
    """The outcome masks of the test ids in a pytest JUnit XML file, and how many testcases it has."""
    masks: dict[str, int] = {}
    cases = depth = 0
    try:
        with open(path, "rb") as f:
            # pytest never writes a DTD: a file with one is not pytest's, and no entity gets expanded.
            if b"<!doctype" in (head := f.read(1 << 16).lower()) or b"<!entity" in head:
                return None
            f.seek(0)
            for event, elem in ET.iterparse(f, events=("start", "end")):
                depth += 1 if event == "start" else -1
                if event == "start" and (depth > 8 or depth == 1 and elem.tag not in ("testsuites", "testsuite")):
                    return None
                if event == "end" and elem.tag == "testcase" and not _collection_error(elem):
                    cases, outcome = cases + 1, "passed"
                    for child in elem:
                        if child.tag in ("failure", "error") or child.get("message") == _STRICT_XPASS:
                            outcome = "failed"
                        elif child.tag == "skipped" and outcome == "passed":
                            outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
                    classname, name = elem.get("classname", ""), elem.get("name", "")
                    # A failure, then an error in teardown, are two testcases of one test: the worse counts.
                    test_id = normalise_id(f"{classname}::{name}" if classname else name)
                    masks[test_id] = max(masks.get(test_id, 0), _BIT[outcome])
                if event == "end" and elem.tag in ("testcase", "testsuite"):
                    elem.clear()
    except (OSError, ET.ParseError, ValueError, LookupError):
        return None
    return masks, cases


def _from_junit(masks: dict[str, int], deselected: int | None) -> Census:
    census = _census("pytest", Counter(_ORDER[mask.bit_length() - 1] for mask in masks.values()), masks)
    census.deselected = deselected  # the XML does not list deselected tests
    return census


def _collection_error(case: ET.Element) -> bool:
    """pytest's stand-in for a module it could not import: no test, and not one to hold a run to."""
    return any(child.tag == "error" and child.get("message") == "collection failure" for child in case)


def read_junit(path: Path) -> Census | None:
    """The census in a pytest JUnit XML file (xunit1 or xunit2); None if it is missing or unreadable."""
    return None if (found := _junit(Path(path))) is None else _from_junit(found[0], None)


def runner_env(base: Mapping[str, str], folder: Path, name: str = JUNIT_FILE) -> dict[str, str]:
    """``base`` with pytest asked to write its JUnit XML into ``folder``/``name``, whatever the command. (A
    ``--junitxml`` in the command comes later and wins; one already in PYTEST_ADDOPTS is left alone.)"""
    env = dict(base)
    had = env.get("PYTEST_ADDOPTS", "").strip()
    if not re.search(r"--junit-?xml|no:junitxml", had):
        ours = shlex.quote(f"--junitxml={Path(folder) / name}")
        env["PYTEST_ADDOPTS"] = f"{had} {ours}" if had else ours
    return env


def collect(scanner: CensusScanner, folder: Path, name: str = JUNIT_FILE) -> Census | None:
    """The census of one run: pytest's JUnit XML in ``folder`` when there is one, else the output's.

    The XML is written by a file the code under test could write too, so it is held to the runner's own
    streamed summary: when one pytest session's XML counts more passes or fewer failures than its summary,
    the output's census is taken and says so (``Census.disagrees``, an integrity finding)."""
    found, said = _junit(Path(folder) / name), scanner._sums.get("pytest")
    # The XML holds the last pytest session only: with several in one command (or a nested one that
    # outlived its parent) it does not account for the tests the output counted.
    counted = sum(said[k] for k in ("passed", "failed", "skipped", "xfailed", "xpassed")) if said else 0
    if found is None:
        return scanner.result()
    xml = _from_junit(found[0], said["deselected"] if said is not None else None)
    forged = said is not None and scanner._summaries["pytest"] == 1 and (
        (xml.passed or 0) > said["passed"] or (xml.failed or 0) < said["failed"])
    if forged or said is not None and not counted <= found[1] <= counted + said["errors"]:
        return _disagreeing(scanner, xml if forged else None, found[1])
    return xml


def _disagreeing(scanner: CensusScanner, xml: Census | None, cases: int) -> Census | None:
    """The output's census; when the XML disagrees with it (``xml``), saying how."""
    result = scanner.result()
    if xml is not None and result is not None:
        result.disagrees = (f"pytest's JUnit report says {xml.passed} passed and {xml.failed} failed of {cases} "
                            f"test cases, its own summary {result.summary}: something other than pytest wrote "
                            f"or changed the report")
    return result
