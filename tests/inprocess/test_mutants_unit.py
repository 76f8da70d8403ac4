"""The mutation tool cannot pass everything silently: on a sample judge with one check its checks
hold and one they leave unheld, it makes one mutant per check, and exactly the unheld one survives.

In-process: the tool's mutants of ``course_lib.tooling.mutants_sample`` are compiled here and the
sample's checks run on each. The tool's own run (a copy of the package, pytest per mutant, the exit
code) is ``tests/stdio/test_mutants.py``."""
import ast
from pathlib import Path

import pytest

from course_lib.tooling import mutants, mutants_sample
from mutants_sample_checks import CHECKS

SOURCE = Path(mutants_sample.__file__).read_text(encoding="utf-8")


def outcome(text: str) -> str:
    namespace: dict = {}
    exec(compile(text, "mutant", "exec"), namespace)
    try:
        for check in CHECKS:
            check(namespace["judge_answer"])
    except AssertionError:
        return "killed"
    return "SURVIVED"


def test_one_mutant_per_check_and_only_the_unheld_check_survives():
    count = len(mutants.sites(ast.parse(SOURCE), None))
    results = {what: outcome(text) for text, what in (mutants.mutant(SOURCE, i, None) for i in range(count))}
    assert results == {
        "judge_answer:7 if not isinstance(value, list) -> never": "killed",
        "judge_answer:9 if len(value) > 100 -> never": "SURVIVED",
        "judge_answer:11 value == expect['names'] -> True": "killed",
    }
    assert outcome(SOURCE) == "SURVIVED", "the checks pass on the sample itself"


JUDGE = '''
def judge(a, b, items, ok):
    if a and b:
        return False
    require(a == 1, "c", "m")
    passed = a != b or ok
    return [x for x in items if x > a], passed
'''


def test_each_kind_of_check_is_removed_or_loosened():
    count = len(mutants.sites(ast.parse(JUDGE), ["judge"]))
    made = dict(reversed(mutants.mutant(JUDGE, i, ["judge"])) for i in range(count))
    bodies = {what: ast.unparse(ast.parse(text).body[0].body) for what, text in made.items()}
    assert set(made) == {"judge:3 if a and b -> never", "judge:3 and clause a dropped", "judge:3 and clause b dropped",
                         "judge:5 require(a == 1) -> always", "judge:6 a != b -> True",
                         "judge:6 or clause a != b dropped",
                         "judge:6 or clause ok dropped", "judge:7 filter x > a -> never"}
    assert "if False:" in bodies["judge:3 if a and b -> never"]
    assert "if True and b:" in bodies["judge:3 and clause a dropped"]
    assert "require(True, 'c', 'm')" in bodies["judge:5 require(a == 1) -> always"]
    assert "passed = True or ok" in bodies["judge:6 a != b -> True"]
    assert "passed = False or ok" in bodies["judge:6 or clause a != b dropped"]
    assert "if False]" in bodies["judge:7 filter x > a -> never"]
    assert mutants.sites(ast.parse(JUDGE), ["other"]) == [], "only the judge functions named"


def test_only_a_module_of_the_package_is_mutated(capsys):
    with pytest.raises(SystemExit):
        mutants.main(["tests.mutants_sample_checks"])
    assert "is not a module of course_lib" in capsys.readouterr().err
