"""A native crash in one test must fail that test, not end the whole run.

The suite runs under the options in pyproject.toml (``-n 1``: each test in an xdist worker
process that is replaced when it dies). This runs an inner session with the same options
over a test that segfaults for real, between two that pass.
"""

from __future__ import annotations

import tomllib

from tests.conftest import REPO_ROOT

CRASHING = """
import ctypes


def test_before():
    assert True


def test_segfaults():
    ctypes.string_at(0)  # reads address 0: SIGSEGV in native code, as a broken build does


def test_after():
    assert True
"""


def test_a_segfault_fails_one_test_and_the_rest_still_run(pytester):
    ini = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    pytester.makepyfile(test_native=CRASHING)
    result = pytester.runpytest_subprocess(*ini["ini_options"]["addopts"].split())
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "crashed while running" in out and "test_segfaults" in out
