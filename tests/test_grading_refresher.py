"""The refresh grader: the reference refresh passes, known-wrong refreshes fail at the expected scenario."""
import pytest

from course_lib import walk
from course_lib.grading.refresher import grade_capstone, grade_refresh
from course_lib.tooling.student_copy import reference_solution
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio


def reference(notebook: str | None = None, name: str | None = None):
    """The chapter's reference, or (no notebook) a correct refresh: chapter 4's exercise now asks
    for the candidate context manager itself, so the refresh grader's reference lives here."""
    return refresh_in_a_candidate if notebook is None else reference_solution(notebook, name)


async def refresh_in_a_candidate(active, open_candidate):
    async with open_candidate() as fresh:  # its own process, its own session and schema cache
        catalog = await walk(fresh)          # every page, or the walk's error
    return catalog.names


async def on_active_session(active, open_candidate):
    return (await walk(active)).names  # refreshes where the schema cache lives


async def first_page(active, open_candidate):
    async with open_candidate() as fresh:
        return [t.name for t in (await fresh.session.list_tools()).tools]


async def swallows_rejection(active, open_candidate):
    names = []
    try:
        async with open_candidate() as fresh:
            cursor = None
            while True:
                page = await fresh.client.list_tools(cursor=cursor)
                for tool in page.tools:
                    if tool.name in names:
                        raise ValueError("duplicate")
                    names.append(tool.name)
                cursor = page.next_cursor
                if cursor is None:
                    break
    except Exception:
        pass
    return names  # whatever was read before the failure


async def hard_coded(active, open_candidate):
    return ["alpha", "beta"]


async def test_reference_solution_passes_everything():
    card = await grade_refresh(reference())
    assert card.passed, card.text()
    assert len(card.verdicts) == 8
    assert {v.scenario.era for v in card.verdicts} == {"legacy", "2026-07-28"}


@pytest.mark.parametrize("solution, failing, control, observed", [
    (on_active_session, "complete refresh", "complete refresh", "sent "),
    (first_page, "complete refresh", "single-page refresh", "returned ['alpha']"),
    (swallows_rejection, "duplicate across pages", "complete refresh", "returned a partial catalog ['alpha']"),
    (swallows_rejection, "server refuses page 2", "single-page refresh", "returned a partial catalog ['alpha']"),
    (hard_coded, "complete refresh", "complete refresh", "returned without opening a candidate"),
])
async def test_wrong_solutions_are_flagged_at_their_scenario(solution, failing, control, observed):
    card = await grade_refresh(solution, only=[failing, control], eras=["legacy"])
    verdict = assert_flagged(card, failing, control, observed)
    if solution is on_active_session:  # the hint names the rule that was broken
        assert "active session" in verdict.scenario.hint
    assert "FAIL" in card.text() and "expected" in card.text()


async def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="no scenario named"):
        await grade_refresh(first_page, only=["nope"])


# -- the capstone: every scenario of chapters 1-4 plus the combined servers ---------------------

async def truthy_cursor(active, open_candidate):
    names, cursor = [], None
    async with open_candidate() as fresh:
        while True:
            page = await fresh.client.list_tools(cursor=cursor)
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if not cursor:  # "" taken for the end
                return names


async def latest_wins(active, open_candidate):
    tools, cursor = {}, None
    async with open_candidate() as fresh:
        for _ in range(32):
            page = await fresh.client.list_tools(cursor=cursor)
            tools.update({t.name: t for t in page.tools})  # a conflicting duplicate overwrites silently
            cursor = page.next_cursor
            if cursor is None:
                return list(tools)
    raise ValueError("too many pages")


async def test_capstone_reference_passes_everything():
    card = await grade_capstone(reference("11_capstone.ipynb", "my_refresher"))
    assert card.passed, card.text()
    assert len(card.verdicts) == 29
    names = {v.scenario.name for v in card.verdicts}
    assert {"normal", "repeated cursor", "complete refresh", "duplicate across pages",
            "everything at once", "everything at once, poisoned"} <= names


async def test_capstone_accepts_the_chapter_3_refresh_built_on_walk():
    card = await grade_capstone(reference(), eras=["2026-07-28"],
                                only=["everything at once", "everything at once, poisoned", "cursor cycle"])
    assert card.passed, card.text()


@pytest.mark.parametrize("solution, failing, control, observed", [
    (truthy_cursor, "everything at once", "complete refresh", "returned ['alpha']"),
    (latest_wins, "everything at once, poisoned", "everything at once",
     "returned a partial catalog ['alpha', 'beta']"),
    (on_active_session, "everything at once", "everything at once", "sent "),
    (first_page, "everything at once", "single page", "returned ['alpha']"),
    (swallows_rejection, "everything at once, poisoned", "everything at once", "returned a partial catalog ['alpha']"),
])
async def test_capstone_flags_wrong_refreshers_at_their_scenario(solution, failing, control, observed):
    card = await grade_capstone(solution, only=[failing, control], eras=["legacy"])
    assert_flagged(card, failing, control, observed)
