#!/usr/bin/env python3
"""Run the official Array API test suite against ``burn`` and check its outcomes
against ``expected_failures.txt``, both ways.

    .venv/bin/python tests/array_api/run_suite.py             # run and check (CI)
    .venv/bin/python tests/array_api/run_suite.py --update    # rewrite the list from a run

The suite (data-apis/array-api-tests, MIT) is not part of this repository: it is
read from ``../shared/third_party/array-api-tests`` (or ``--suite`` /
``BURN_ARRAY_API_TESTS``) and copied to a temporary directory for each run,
because it writes caches where it runs and shared/ is read-only.

The run is deterministic: hypothesis is derandomized (each test's examples come
from a seed derived from the test itself) and has no deadline (a slow example on
a loaded machine must not turn into a failure), ``PYTHONHASHSEED`` is fixed and
the device is pinned (``--device``, flex by default).

The check fails (exit status 1) on an unexpected failure (a test that fails but
is not listed), on an unexpected pass (a listed test that passes or is skipped:
the list only shrinks, so a fix must remove its lines) and, on a full run, on a
listed test that no longer exists. Tests in the ``# flaky:`` section may pass or
fail. Standard library only, so it runs with any interpreter that has the suite's
requirements (pytest, hypothesis, ndindex, pytest-json-report) installed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXPECTED = HERE / "expected_failures.txt"
DEFAULT_SUITE = ROOT.parent / "shared" / "third_party" / "array-api-tests"
API_VERSION = "2024.12"
# numpy 2.4 through this script (--module numpy) at max-examples 5, derandomized: passed / failed
# (1319 / 47 / 14 skipped, as in issue 12's targets; shared/third_party/README.md's randomized run: 1321 / 45)
NUMPY_REFERENCE = (1319, 47)
FAILED = ("failed", "error")
FLAKY_TAG = "flaky:"
HEADER = """\
## Tests of the official Array API suite (data-apis/array-api-tests, API 2024.12) that
## fail on burn, grouped under a "# reason" line that says why. Checked both ways by
## tests/array_api/run_suite.py: a failing test not listed here fails the run, and so
## does a listed test that passes. Fix a cause, delete its lines (or run --update).
## Tests under "# flaky: reason" may pass or fail; keep that section as small as possible.
"""


@dataclass
class Expected:
    """The expected-failure list: test id -> reason, for the checked and the flaky tests.

    Example:
        >>> e = Expected(failing={"t::a": "x missing"}, flaky={"t::b": "timing"})
        >>> sorted(e.listed())
        ['t::a', 't::b']
    """
    failing: dict = field(default_factory=dict)
    flaky: dict = field(default_factory=dict)

    def listed(self) -> set:
        """Every test id the list names, checked or flaky.

        Example:
            >>> Expected(failing={"t::a": "r"}).listed()
            {'t::a'}
        """
        return set(self.failing) | set(self.flaky)


@dataclass
class Outcome:
    """One test's result in a run: ``passed``, ``failed``, ``error`` or ``skipped``,
    and the first line of its error message when it failed.

    Example:
        >>> Outcome("failed", "TypeError: bad").failed
        True
    """
    outcome: str
    message: str = ""

    @property
    def failed(self) -> bool:
        """Whether the test failed or errored (a skip is not a failure).

        Example:
            >>> Outcome("skipped").failed
            False
        """
        return self.outcome in FAILED


@dataclass
class Comparison:
    """How a run differs from the list: sorted test ids in each category.

    Example:
        >>> Comparison().ok
        True
    """
    unexpected_failures: list = field(default_factory=list)
    unexpected_passes: list = field(default_factory=list)
    missing: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the run matches the list exactly (flaky tests aside).

        Example:
            >>> Comparison(unexpected_passes=["t::a"]).ok
            False
        """
        return not (self.unexpected_failures or self.unexpected_passes or self.missing)


def parse_expected(text: str) -> Expected:
    """Read the list: ``## `` lines are free comments, a ``# reason`` line starts a
    group (``# flaky: reason`` a flaky one), every other non-blank line is a test id
    of the current group. A test id before any reason, or listed twice, is an error.

    Example:
        >>> e = parse_expected("## header\\n# sort missing\\nt::a\\nt::b\\n# flaky: slow\\nt::c\\n")
        >>> e.failing, e.flaky
        ({'t::a': 'sort missing', 't::b': 'sort missing'}, {'t::c': 'slow'})
    """
    exp, reason, flaky = Expected(), None, False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("##"):
            continue
        if line.startswith("#"):
            reason = line[1:].strip()
            flaky = reason.startswith(FLAKY_TAG)
            if flaky:
                reason = reason[len(FLAKY_TAG):].strip()
            if not reason:
                raise ValueError(f"expected_failures.txt line {n}: a '#' line must give a reason")
            continue
        if reason is None:
            raise ValueError(f"expected_failures.txt line {n}: test id {line!r} has no '# reason' line above it")
        if line in exp.listed():
            raise ValueError(f"expected_failures.txt line {n}: {line!r} is listed twice")
        (exp.flaky if flaky else exp.failing)[line] = reason
    return exp


def _first_line(message: str) -> str:
    return next((ln.strip() for ln in (message or "").splitlines() if ln.strip()), "")


def outcomes_from_report(report: dict) -> dict:
    """Per-test outcomes from a pytest-json-report ``report``: test id -> Outcome.
    A module that fails to import counts as one failing test named by its path.

    Example:
        >>> rep = {"tests": [{"nodeid": "t::a", "outcome": "passed"},
        ...                  {"nodeid": "t::b", "outcome": "failed",
        ...                   "call": {"outcome": "failed", "crash": {"message": "TypeError: no\\nmore"}}}],
        ...        "collectors": [{"nodeid": "m.py", "outcome": "failed", "longrepr": "ImportError: x"}]}
        >>> out = outcomes_from_report(rep)
        >>> out["t::b"], out["m.py"].outcome
        (Outcome(outcome='failed', message='TypeError: no'), 'error')
    """
    out = {}
    for t in report.get("tests", []):
        outcome, message = t["outcome"], ""
        # xfail/xpass only appear if the suite's own xfails.txt is used: count them as what they are
        outcome = {"xfailed": "failed", "xpassed": "passed"}.get(outcome, outcome)
        if outcome in FAILED:
            for stage in ("setup", "call", "teardown"):
                st = t.get(stage) or {}
                if st.get("outcome") == "failed":
                    message = (st.get("crash") or {}).get("message") or st.get("longrepr", "")
                    break
        out[t["nodeid"]] = Outcome(outcome, _first_line(message))
    for c in report.get("collectors", []):
        if c.get("outcome") == "failed":
            lines = [ln for ln in c.get("longrepr", "").splitlines() if ln.startswith("E ")]
            msg = lines[-1][1:].strip() if lines else _first_line(c.get("longrepr", ""))
            out[c["nodeid"]] = Outcome("error", msg)
    return out


def compare(outcomes: dict, expected: Expected, full_run: bool = True) -> Comparison:
    """Compare a run with the list. A listed (non-flaky) test that passed or was
    skipped is an unexpected pass; on a ``full_run``, a listed test that did not
    run at all is ``missing`` (renamed or removed upstream: the list is stale).

    Example:
        >>> exp = Expected(failing={"t::a": "r", "t::gone": "r"})
        >>> run = {"t::a": Outcome("passed"), "t::b": Outcome("failed", "E")}
        >>> c = compare(run, exp)
        >>> c.unexpected_failures, c.unexpected_passes, c.missing
        (['t::b'], ['t::a'], ['t::gone'])
    """
    c = Comparison()
    for tid, o in outcomes.items():
        if o.failed and tid not in expected.listed():
            c.unexpected_failures.append(tid)
        elif not o.failed and tid in expected.failing:
            c.unexpected_passes.append(tid)
    if full_run:
        c.missing = [t for t in expected.listed() if t not in outcomes]
    for lst in (c.unexpected_failures, c.unexpected_passes, c.missing):
        lst.sort()
    return c


_RULES = [  # (pattern on the first line of the error, reason): the common causes, named as causes
    # complex(x) on an object without __complex__ falls back to __float__, which refuses a complex value
    (r"float\(\) argument must be a string or a real number, not 'complex'",
     "Tensor.__complex__ missing: complex(x) falls back to float(x), which refuses complex values"),
    (r"module '[\w.]*fft[\w.]*' has no attribute '(\w+)'", "burn.fft.{0} missing"),
    (r"burn is missing the fft extension function (\w+)\(\)", "burn.fft.{0} missing"),
    (r"(\w+) not found in fft extension", "burn.fft.{0} missing"),
    (r"module 'burn' has no attribute '(\w+)'", "burn.{0} missing"),
    (r"burn is missing the [\w ]+ function (\w+)\(\)", "burn.{0} missing"),
    (r"^AssertionError: (\w+) is not defined in burn", "burn.{0} missing"),
    (r"^AssertionError: (\w+) not found in array module", "burn.{0} missing"),
    (r"The burn array object is missing the method (\w+)\(\)", "Tensor.{0} missing"),
    (r"^AssertionError: (\w+) not found in array object", "Tensor.{0} missing"),
    (r"'Tensor' object has no attribute '(\w+)'", "Tensor.{0} missing"),
    (r"Argument '(\w+)' missing from signature", "{param}() lacks the {0}= argument"),
    (r"(\w+)\(\) got an unexpected keyword argument '(\w+)'", "{0}() lacks the {1}= argument"),
    # x <<= s falls back to x << s when __ilshift__ is missing, so both fail for want of __lshift__
    (r"unsupported operand type\(s\) for <<=?:", "Tensor.__lshift__ missing"),
    (r"unsupported operand type\(s\) for >>=?:", "Tensor.__rshift__ missing"),
    (r"unsupported operand type\(s\) for ([^:]+):", "Tensor operator {0} missing"),
    (r"out\.dtype=\S+, but should be \S+ \[(\w+)\(", "{0}: result dtype differs from the standard's promotion"),
    (r"out\.shape=.*, but should be", "{param}: result shape differs from the standard"),
]


def _test_parts(test_id: str):
    """(test function, leading name of its parameter): "t.py::test_binary[floor_divide(x) -> 0]"
    gives ("test_binary", "floor_divide")."""
    name = test_id.split("::")[-1]
    test, _, param = name.partition("[")
    m = re.match(r"[\w.]+", param)
    # pytest names a dtype parameter without an id dtype0, dtype1, ...: that names no function
    return test, (m.group(0) if m and not re.fullmatch(r"dtype\d+", m.group(0)) else "")


def derive_reason(message: str, test_id: str = "") -> str:
    """A reason for a new failure, derived from its error message so failures with
    one cause group together: a missing function or method names it, a missing
    keyword names the function and the keyword; otherwise the exception type and
    the message with its values (numbers, quoted text, shapes, the bracketed call)
    replaced by ``…``, after the function under test when the message alone does
    not say which. An edit by hand should then say why.

    Example:
        >>> derive_reason("AttributeError: module 'burn' has no attribute 'unique_all'")
        'burn.unique_all missing'
        >>> derive_reason("AssertionError: Argument 'dtype' missing from signature", "t.py::test_sig[sum]")
        'sum() lacks the dtype= argument'
        >>> derive_reason("AssertionError: out=nan, but should be +infinity [floor_divide()]",
        ...               "t.py::test_binary[floor_divide(x1_i is +infinity) -> +infinity]")
        'floor_divide: AssertionError: out=…, but should be +infinity […]'
    """
    first = _first_line(message)
    test, param = _test_parts(test_id)
    for pat, fmt in _RULES:
        m = re.search(pat, first)
        if m:
            return fmt.format(*m.groups(), param=param or test)
    if not first:
        return "fails without an error message"
    generic = re.sub(r"\[[^\]]*\]", "[…]", first)
    generic = re.sub(r"'[^']*'|\"[^\"]*\"", "…", generic)
    generic = re.sub(r"\([^()]*\)", "(…)", generic)
    generic = re.sub(r"-?\b\d+(\.\d*)?(e[-+]?\d+)?\b|-?\binf\b|\bnan\b", "…", generic)
    generic = re.sub(r"(…[ ,]*)+…", "…", generic)[:120]
    # an assertion message alone rarely names what failed: the test (or its parameter) does
    who = param or test
    return f"{who}: {generic}" if who and (first.startswith("AssertionError") or "Error" not in first) else generic


def render_expected(outcomes: dict, old: Expected) -> str:
    """The list rewritten from a run: every failing test, under the reason it had
    (or one derived from its message), groups in order of size; flaky tests stay
    flaky with their reasons. Tests that passed drop out.

    Example:
        >>> run = {"t::a": Outcome("failed", "X"), "t::b": Outcome("passed"),
        ...        "t::c": Outcome("failed", "AttributeError: module 'burn' has no attribute 'sort'")}
        >>> old = Expected(failing={"t::a": "why a"}, flaky={"t::b": "timing"})
        >>> print(render_expected(run, old))
        ## ...
        # burn.sort missing
        t::c
        <BLANKLINE>
        # why a
        t::a
        <BLANKLINE>
        # flaky: timing
        t::b
        <BLANKLINE>
    """
    groups: dict = {}
    for tid, o in outcomes.items():
        if o.failed and tid not in old.flaky:
            reason = old.failing.get(tid) or derive_reason(o.message, tid)
            groups.setdefault(reason, []).append(tid)
    flaky: dict = {}
    for tid, reason in old.flaky.items():
        if tid in outcomes:
            flaky.setdefault(reason, []).append(tid)
    parts = [HEADER]
    for reason, tids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        parts.append(f"# {reason}\n" + "".join(f"{t}\n" for t in sorted(tids)))
    for reason, tids in sorted(flaky.items()):
        parts.append(f"# {FLAKY_TAG} {reason}\n" + "".join(f"{t}\n" for t in sorted(tids)))
    return "\n".join(parts)


def summary(outcomes: dict, seconds: float | None = None, module: str = "burn") -> str:
    """One line: passed / failed / skipped, the pass rate of the tests that ran
    (passed over passed + failed) and numpy 2.4's on the same suite beside it.

    Example:
        >>> summary({"a": Outcome("passed"), "b": Outcome("passed"), "c": Outcome("passed"),
        ...          "d": Outcome("error"), "e": Outcome("skipped")})
        'array-api-tests on burn: 3 passed, 1 failed, 1 skipped: 75.0% pass (numpy 2.4: 96.6%)'
    """
    n = Counter("failed" if o.failed else o.outcome for o in outcomes.values())
    ran = n["passed"] + n["failed"]
    rate = 100.0 * n["passed"] / ran if ran else 0.0
    ref = 100.0 * NUMPY_REFERENCE[0] / sum(NUMPY_REFERENCE)
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    return (f"array-api-tests on {module}: {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped"
            f"{took}: {rate:.1f}% pass (numpy 2.4: {ref:.1f}%)")


def run_suite(suite: Path, max_examples: int, device: str, pytest_args=(), timeout: float = 1800,
              module: str = "burn") -> dict:
    """Copy ``suite`` to a temporary directory, run it against ``module`` there and
    return the pytest-json-report report (a dict). Raises RuntimeError, with
    pytest's output, when pytest did not get as far as writing a report.

    Example (a run takes minutes, so here only the missing-suite error):
        >>> run_suite(Path("/nonexistent"), 5, "flex")
        Traceback (most recent call last):
        ...
        FileNotFoundError: array-api-tests not found at /nonexistent (...)
    """
    if not (suite / "array_api_tests").is_dir():
        raise FileNotFoundError(f"array-api-tests not found at {suite} (give --suite or set BURN_ARRAY_API_TESTS)")
    with tempfile.TemporaryDirectory(prefix="burn-array-api-") as tmp:
        work = Path(tmp) / "array-api-tests"
        shutil.copytree(suite, work, ignore=shutil.ignore_patterns(".git", ".hypothesis", "__pycache__"))
        report_path = Path(tmp) / "report.json"
        # burn_suite_plugin (next to this file) turns hypothesis's shrinking off: see its docstring
        pypath = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
        # PYTEST_* of an outer pytest (this runs inside the repository's own test run) must not reach the suite
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env.update(ARRAY_API_TESTS_MODULE=module, ARRAY_API_TESTS_VERSION=API_VERSION,
                   BURN_DEVICE=device, PYTHONHASHSEED="0", PYTHONPATH=pypath)
        cmd = [sys.executable, "-m", "pytest", "array_api_tests/", f"--max-examples={max_examples}",
               "--derandomize", "--disable-deadline", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               "-p", "burn_suite_plugin",
               "--continue-on-collection-errors",
               # the omit list takes several values: an option must follow it, not a positional
               "--json-report-omit", "log", "streams", "keywords", "warnings", "traceback",
               "--json-report", f"--json-report-file={report_path}", *pytest_args]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=timeout)
        if not report_path.exists():
            raise RuntimeError(f"the suite did not run (exit {proc.returncode}):\n{proc.stdout[-4000:]}"
                               f"\n{proc.stderr[-4000:]}")
        return json.loads(report_path.read_text(encoding="utf-8"))


def _print_ids(title: str, ids, outcomes: dict) -> None:
    if not ids:
        return
    print(f"\n{title} ({len(ids)}):")
    for tid in ids:
        o = outcomes.get(tid)
        print(f"  {tid}" + (f"\n      {o.message}" if o is not None and o.message else ""))


def main(argv=None) -> int:
    """Command line: run the suite, print the summary and the differences from the
    list, and return 1 if there are any (0 when ``--update`` rewrote the list).

    Example:
        >>> main(["--help"])
        Traceback (most recent call last):
        ...
        SystemExit: 0
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", type=Path, default=Path(os.environ.get("BURN_ARRAY_API_TESTS", DEFAULT_SUITE)),
                    help="the array-api-tests checkout (read only; copied for the run)")
    ap.add_argument("--max-examples", type=int, default=5, help="hypothesis examples per test (default 5)")
    ap.add_argument("--device", default="flex", help="BURN_DEVICE for the run (default flex)")
    ap.add_argument("--module", default="burn", help="the namespace under test; another one (numpy) "
                                                     "gives a reference pass rate and is not checked")
    ap.add_argument("--expected", type=Path, default=EXPECTED, help="the expected-failure list")
    ap.add_argument("--update", action="store_true", help="rewrite the list from this run")
    ap.add_argument("--report", type=Path, help="also save the JSON report here")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before the run is stopped")
    ap.add_argument("pytest_args", nargs="*", help="after --: options passed to pytest (e.g. -- -k sort); "
                                                  "then listed tests that did not run are not checked")
    args = ap.parse_args(argv)
    expected = parse_expected(args.expected.read_text(encoding="utf-8")) if args.expected.exists() else Expected()
    t0 = time.monotonic()
    report = run_suite(args.suite, args.max_examples, args.device, args.pytest_args, args.timeout, args.module)
    seconds = time.monotonic() - t0
    if args.report:
        args.report.write_text(json.dumps(report), encoding="utf-8")
    outcomes = outcomes_from_report(report)
    print(summary(outcomes, seconds, args.module))
    if not outcomes:
        print("FAILED: no test ran (a -k that matches nothing, or the suite did not collect)")
        return 1
    if args.module != "burn":   # a reference run (e.g. numpy): the list is burn's, nothing to check
        return 0
    if args.update:
        if args.pytest_args:
            ap.error("--update needs a full run (no pytest arguments)")
        args.expected.write_text(render_expected(outcomes, expected), encoding="utf-8")
        print(f"wrote {args.expected}")
        return 0
    c = compare(outcomes, expected, full_run=not args.pytest_args)
    _print_ids("unexpected failures: fix them or list them with their reason", c.unexpected_failures, outcomes)
    _print_ids("unexpected passes: delete their lines from the list", c.unexpected_passes, outcomes)
    _print_ids("listed but not in the suite any more: delete their lines", c.missing, outcomes)
    flaky_failed = sum(1 for t in expected.flaky if t in outcomes and outcomes[t].failed)
    if expected.flaky:
        print(f"\nflaky (not checked): {flaky_failed} of {len(expected.flaky)} failed this time")
    print("\nOK: the run matches the expected-failure list" if c.ok else
          f"\nFAILED: the run differs from {args.expected.name}")
    return 0 if c.ok else 1


if __name__ == "__main__":
    # test ids hold non-ASCII text (π, ±): print them whatever the locale says
    sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")
    sys.exit(main())
