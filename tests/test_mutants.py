"""The mutation tool's own run, end to end: a copy of the package, pytest per mutant, the report and
the exit code, on the sample judge whose checks leave one check unheld (``tests/test_mutants_unit.py``
holds the mutants themselves). Three mutants and a baseline: a few seconds of pytest runs."""
import subprocess
import sys

from course_lib.paths import ROOT


SAMPLE = ROOT / "course_lib" / "tooling" / "mutants_sample.py"


def test_the_tool_reports_the_survivor_and_fails():
    before = SAMPLE.read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "course_lib.tooling.mutants", "course_lib.tooling.mutants_sample",
                           "--tests", "tests/mutants_sample_checks.py"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines == [
        "killed     course_lib.tooling.mutants_sample.judge_answer:7 if not isinstance(value, list) -> never",
        "SURVIVED   course_lib.tooling.mutants_sample.judge_answer:9 if len(value) > 100 -> never",
        "killed     course_lib.tooling.mutants_sample.judge_answer:11 value == expect['names'] -> True",
        "course_lib.tooling.mutants_sample: 3 mutants, 2 killed, 1 survived",
    ]
    assert SAMPLE.read_text(encoding="utf-8") == before, "the checkout's module is untouched"
