"""The official Array API test suite passes on burn except for the tests listed, with
their reasons, in tests/array_api/expected_failures.txt; a listed test that passes
fails this too, so the list only shrinks. Deselect locally with
``-m "not array_api_suite"`` (it takes half a minute); CI runs it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RUN_SUITE = HERE / "array_api" / "run_suite.py"
SUITE = Path(os.environ.get("BURN_ARRAY_API_TESTS", HERE.parent.parent / "shared" / "third_party" / "array-api-tests"))
TIMEOUT_S = 900   # the run takes about 30 s on 2 cores; a hang must not stall CI


@pytest.mark.array_api_suite
def test_official_array_api_suite_matches_the_expected_failure_list():
    if not (SUITE / "array_api_tests").is_dir():
        pytest.skip(f"array-api-tests is not at {SUITE} (set BURN_ARRAY_API_TESTS to its checkout)")
    r = subprocess.run([sys.executable, str(RUN_SUITE), "--suite", str(SUITE), "--timeout", str(TIMEOUT_S - 60)],
                       capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT_S)
    assert r.returncode == 0, f"run_suite.py exited {r.returncode}:\n{r.stdout}\n{r.stderr[-4000:]}"


@pytest.mark.array_api_suite
def _a_listed_failure():
    """A test the expected-failure list names outside its flaky section, whose id has no
    parameters (so ``-k`` selects it alone): one that fails today."""
    flaky = False
    for line in (HERE / "array_api" / "expected_failures.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            flaky = line.startswith("# flaky:")
        elif line.startswith("array_api_tests/") and "[" not in line and not flaky:
            return line
    pytest.skip("the expected-failure list names no unparametrized test")


def test_run_suite_fails_both_ways_on_a_list_that_does_not_match(tmp_path):
    # a listed failure and test_mean (passes): a list that has them the other way round
    # must give an unexpected failure and an unexpected pass
    if not (SUITE / "array_api_tests").is_dir():
        pytest.skip(f"array-api-tests is not at {SUITE} (set BURN_ARRAY_API_TESTS to its checkout)")
    failing = _a_listed_failure()
    mean = "array_api_tests/test_statistical_functions.py::test_mean"
    wrong = tmp_path / "expected_failures.txt"
    wrong.write_text(f"# a reason\n{mean}\n")
    name = failing.rsplit("::", 1)[1]
    r = subprocess.run([sys.executable, str(RUN_SUITE), "--suite", str(SUITE), "--expected", str(wrong),
                        "--", "-k", f"{name} or test_mean"], capture_output=True, text=True, encoding="utf-8",
                       timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    failures, passes = r.stdout.split("unexpected failures")[1].split("unexpected passes")
    assert f"{failing}\n" in failures and f"{mean}\n" in passes, r.stdout
