"""The autograder: reference solutions pass, known-wrong solutions fail at the expected scenario."""
import pytest
from mcp.types import PaginatedRequestParams

from course_lib.grading.core import Scorecard, grade_walker
from course_lib.tooling.student_copy import reference_solution
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio


def reference(notebook: str, name: str):
    """The reference solution, with what the chapter's earlier cells define."""
    return reference_solution(notebook, name, {
        "PaginatedRequestParams": PaginatedRequestParams,
        "page_params": lambda c: None if c is None else PaginatedRequestParams(cursor=c)})


def params(cursor):
    return None if cursor is None else PaginatedRequestParams(cursor=cursor)


async def first_page_only(session):
    return [t.name for t in (await session.list_tools()).tools]


async def falsy_cursor_ends(session):
    names, cursor = [], None
    while True:
        page = await session.list_tools(params=params(cursor))
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


async def no_repeat_check(session):
    names, cursor = [], None
    while True:
        page = await session.list_tools(params=params(cursor))
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names


async def swallow_errors(session):
    names, cursor, seen = [], None, set()
    try:
        for _ in range(32):
            page = await session.list_tools(params=params(cursor))
            for t in page.tools:
                if t.name in names:
                    raise ValueError("duplicate")
                names.append(t.name)
            cursor = page.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
    except Exception:
        pass
    return names  # a partial catalog on any failure


async def crashes(session):
    raise NotImplementedError("write your walker here")


async def test_reference_solutions_pass_everything():
    card = await grade_walker(reference("02_cursor_failures.ipynb", "reference_my_safe_walk"))
    assert card.passed, card.text()
    assert len(card.verdicts) == 17
    card = await grade_walker(reference("01_pagination.ipynb", "reference_my_walk"),
                              only=["normal", "single page", "empty catalog", "empty-string cursor"])
    assert card.passed, card.text()


@pytest.mark.parametrize("solution, failing, control, observed", [
    (first_page_only, "normal", "single page", "returned ['alpha']"),
    (falsy_cursor_ends, "empty-string cursor", "normal", "returned ['alpha']"),
    (swallow_errors, "duplicate name", "normal", "returned a partial catalog ['alpha']"),
    (swallow_errors, "catalog changed", "normal", "returned a partial catalog ['alpha']"),
    (crashes, "normal", "normal", "raised NotImplementedError: write your walker here"),
])
async def test_wrong_solutions_are_flagged_at_their_scenario(solution, failing, control, observed):
    card = await grade_walker(solution, only=[failing, control], eras=["legacy"])
    assert_flagged(card, failing, control, observed)
    assert "FAIL" in card.text() and "expected" in card.text()


async def test_a_walker_that_never_returns_gets_a_verdict_at_the_budget():
    # Only the scenario that loops runs under a short budget (a loop is a loop, however loaded
    # the machine); the control keeps the battery's own budget.
    loops = await grade_walker(no_repeat_check, only=["repeated cursor"], eras=["legacy"], budget=3)
    control = await grade_walker(no_repeat_check, only=["normal"], eras=["legacy"])
    card = Scorecard(loops.title, loops.verdicts + control.verdicts)
    verdict = assert_flagged(card, "repeated cursor", "normal", "no result within 3 s")
    assert verdict.observed == "no result within 3 s (a loop that never ends?)"


async def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="no scenario named"):
        await grade_walker(first_page_only, only=["nope"])
