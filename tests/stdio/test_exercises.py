"""The exercise convention in the chapters: task, starter, check, solution, in that order.

The solution defines ``reference_<student name>`` and grades it; it never rebinds a name the
student's cell defines, so running a chapter top to bottom (Run All) leaves the student's
function in place: the check run after the solution still grades the starter.
"""
import ast
import inspect
import pytest
from mcp.types import PaginatedRequestParams

from course_lib import CatalogError
from course_lib.grading.runner import FAIL_FAST
from course_lib.tooling import transcripts
from course_lib.tooling.visible import fitting

from test_exercises_unit import IDS, PAIRS, load, the_cell, words


async def run_cell(source: str, namespace: dict):
    """Run one code cell as IPython does (top-level ``await``); return its last expression's value."""
    tree = ast.parse(source)
    namespace.pop("_cell_value", None)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tree.body[-1] = ast.Assign([ast.Name("_cell_value", ast.Store())], tree.body[-1].value)
        ast.fix_missing_locations(tree)
    result = eval(compile(tree, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
    if inspect.iscoroutine(result):
        await result
    return namespace.get("_cell_value")


@pytest.mark.anyio
async def test_run_all_never_replaces_the_students_function():
    """Starter, check, solution, check again: the second check still grades the starter."""
    nb = load("01_pagination")
    namespace = {"page_params": lambda c: None if c is None else PaginatedRequestParams(cursor=c),
                 "CatalogError": CatalogError}
    _, starter = the_cell(nb, "exercise")
    _, check = the_cell(nb, "check")
    _, solution = the_cell(nb, "solution")
    await run_cell(starter.source, namespace)
    student = namespace["my_walk"]
    first = await run_cell(check.source, namespace)
    by_reference = await run_cell(solution.source, namespace)
    second = await run_cell(check.source, namespace)
    assert namespace["my_walk"] is student
    assert by_reference.passed
    for card in (first, second):
        assert not card.passed and not any(v.passed for v in card.verdicts)
        assert words(card.text()).endswith("0/12 scenarios pass")
    assert second.text() == first.text()


# -- no exercise can be passed by a function its chapter already shows ---------------------------


KNOWN_COPIES: dict[str, str] = {}  # chapter -> why a visible cell still passes its exercise
# The chapters whose visible cells' functions are judged on recorded transcripts instead
# (tests/inprocess/test_transcripts_unit.py; ``make record`` records them on the real servers).
RECORDED = {(stem, transcripts.expected(exercise)["starter"]) for exercise in transcripts.exercises()
            for stem in transcripts.expected(exercise).get("visible", [])}
SWEPT = [(s, n, i) for (s, n, _), i in zip(PAIRS, IDS) if (s, n) not in RECORDED]


@pytest.mark.anyio
@pytest.mark.parametrize("stem, name", [
    pytest.param(s, n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_COPIES[s])) if s in KNOWN_COPIES
    else (s, n) for s, n, _ in SWEPT], ids=[i for _, _, i in SWEPT])
async def test_no_function_a_visible_cell_defines_passes_the_exercise(stem, name):
    _, check = the_cell(load(stem), "check", name)
    namespace, candidates = fitting(stem, name)
    graded = {}
    # Only "it fails" is asked: a grading ends at its first failing scenario (a candidate that
    # fails none is graded on every scenario, as the check cell grades it).
    fail_fast = FAIL_FAST.set(True)
    try:
        for candidate, space in candidates:
            cell_space = {**namespace, **space, name: space[candidate]}
            card = await run_cell(check.source, cell_space)
            graded[candidate] = card.passed
    finally:
        FAIL_FAST.reset(fail_fast)
    assert not any(graded.values()), f"these cells' functions pass the exercise: {graded}"
