"""The mutation tool's own run, end to end: a copy of the package, pytest per mutant, the report and
the exit code, on the sample judge whose checks leave one check unheld (``tests/inprocess/test_mutants_unit.py``
holds the mutants themselves). Three mutants and a baseline: a few seconds of pytest runs."""
import subprocess
import sys

import anyio
import pytest

from course_lib import connect
from course_lib.paths import ROOT

pytestmark = pytest.mark.anyio


SAMPLE = ROOT / "course_lib" / "tooling" / "mutants_sample.py"


async def test_the_tool_reports_the_survivor_and_fails():
    """Run inside a test run with a lab server of its own alive, as under pytest-xdist: the tool's
    pytest runs are runs of their own, whose leak check does not count this run's servers."""
    before = SAMPLE.read_text(encoding="utf-8")
    async with connect("catalog"):
        done = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "course_lib.tooling.mutants", "course_lib.tooling.mutants_sample",
             "--tests", "tests/mutants_sample_checks.py"], cwd=ROOT, capture_output=True, text=True, timeout=300))
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines == [
        "killed     course_lib.tooling.mutants_sample.judge_answer:7 if not isinstance(value, list) -> never",
        "SURVIVED   course_lib.tooling.mutants_sample.judge_answer:9 if len(value) > 100 -> never",
        "killed     course_lib.tooling.mutants_sample.judge_answer:11 value == expect['names'] -> True",
        "course_lib.tooling.mutants_sample: 3 mutants, 2 killed, 1 survived",
    ]
    assert SAMPLE.read_text(encoding="utf-8") == before, "the checkout's module is untouched"
