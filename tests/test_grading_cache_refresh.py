"""The exercise of 10_stateless_cache: the starter scores 0, wrong refreshes fail at their scenario,
a correct refresh of another style and the reference pass; requests are counted on the wire."""
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading.cache_refresh import grade_cache_refresh
from course_lib.grading.core import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.tooling.student_copy import reference_solution
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio
ALL = ["unchanged catalog", "changed since last refresh", "changed after a refresh", "changed mid-refresh",
       "expired cursor after a change", "expired after a refresh", "catalog never settles"]


def reference():
    """The chapter's reference refresh (``reference_my_refresh``, or ``my_refresh`` in an older chapter)."""
    return reference_solution("10_stateless_cache.ipynb", "reference_my_refresh", {"MCPError": MCPError, "types": types})


async def walk(client, first_page="refresh"):
    names, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode=first_page if cursor is None else "use")
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names


async def starter(client):
    raise NotImplementedError("write your refresh here")


async def trusts_the_cache(client):  # page 1 from the cache, restarts on -32602
    try:
        return await walk(client, "use")
    except MCPError:
        return await walk(client, "use")


async def never_restarts(client):  # refreshes page 1, but an expired cursor ends the refresh
    return await walk(client)


async def skips_the_refused_page(client):  # returns what it read before the refusal
    names, cursor = [], None
    while True:
        try:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh" if cursor is None else "use")
        except MCPError:
            return names
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names


async def restarts_forever(client):
    while True:
        try:
            return await walk(client)
        except MCPError:
            continue


async def restarts_twice(client):
    for _ in range(2):
        try:
            return await walk(client)
        except MCPError:
            pass
    return await walk(client)


async def swallows_the_second_refusal(client):
    try:
        return await walk(client)
    except MCPError:
        try:
            return await walk(client)
        except MCPError:
            return []  # an empty catalog rather than an error


async def checks_twice(client):  # walks twice to be sure: every refresh costs double
    first = await walk(client)
    return first if first == await walk(client) else await walk(client)


async def typo_on_page_2(client):
    page = await client.list_tools(cache_mode="refresh")
    names = [t.name for t in page.tools]
    page = await client.list_tools(cursor=page.next_cursor)
    return names + [t.nam for t in page.tools]


async def spins_on_refusal(client):
    try:
        return await walk(client)
    except MCPError:
        while True:  # "wait" for the catalog to settle, without ever awaiting
            pass


async def loop_and_bypass(client, restarts=1):
    """Another style: a bounded loop of attempts, every page with cache_mode="bypass"."""
    for attempt in range(restarts + 1):
        names, cursor = [], None
        try:
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                names.extend(tool.name for tool in page.tools)
                if page.next_cursor is None:
                    return names
                cursor = page.next_cursor
        except MCPError as exc:
            if exc.error.code != types.INVALID_PARAMS or attempt == restarts:
                raise


async def test_the_untouched_starter_scores_zero():
    card = await grade_cache_refresh(starter)
    assert [v.scenario.name for v in card.verdicts] == ALL
    assert card.failures() == card.verdicts, card.text()
    assert {v.observed for v in card.verdicts} == {"your code crashed: NotImplementedError: write your refresh here"}
    assert card.text().endswith("0/7 scenarios pass")


async def test_a_correct_refresh_in_another_style_passes():
    card = await grade_cache_refresh(loop_and_bypass)
    assert card.passed, card.text()


# A solution that never returns runs under a short budget (a loop is a loop, however loaded the
# machine); every other one keeps the battery's own budget, so its outcome never depends on speed.
@pytest.mark.parametrize("wrong, failing, control, failure, observed, budget", [
    (trusts_the_cache, "changed since last refresh", "unchanged catalog", WRONG_RESULT,
     "returned ['alpha', 'beta', 'bump', 'zeta']", None),
    (trusts_the_cache, "changed after a refresh", "unchanged catalog", WRONG_RESULT,
     "returned ['alpha', 'beta', 'bump', 'zeta']", None),
    (trusts_the_cache, "expired cursor after a change", "unchanged catalog", WRONG_RESULT,
     "returned ['delta', 'epsilon', 'bump', 'zeta'] after 3 tools/list requests (expected 2)", None),
    (never_restarts, "changed mid-refresh", "changed since last refresh", WRONG_REFUSAL,
     "raised MCPError -32602", None),
    (skips_the_refused_page, "changed mid-refresh", "unchanged catalog", WRONG_RESULT,
     "returned ['alpha', 'beta', 'bump']", None),
    (restarts_twice, "catalog never settles", "changed mid-refresh", WRONG_REFUSAL,
     "raised MCPError -32602: Invalid cursor: not issued for the current catalog after 6 tools/list requests "
     "(expected 4)", None),
    (swallows_the_second_refusal, "catalog never settles", "changed mid-refresh", MISSING_REFUSAL,
     "returned a partial catalog [] instead of raising", None),
    (checks_twice, "unchanged catalog", "unchanged catalog", WRONG_RESULT,
     "returned ['alpha', 'beta', 'bump', 'gamma'] after 4 tools/list requests (expected 2)", None),
    (typo_on_page_2, "unchanged catalog", "unchanged catalog", CRASH,
     "your code crashed: AttributeError: 'Tool' object has no attribute 'nam'", None),
    (restarts_forever, "catalog never settles", "changed mid-refresh", HANG, "no result within 3 s (stopped)", 3),
    (spins_on_refusal, "catalog never settles", "unchanged catalog", HANG, "no result within 3 s (stopped)", 3),
])
async def test_wrong_refreshes_are_flagged_at_their_scenario(wrong, failing, control, failure, observed, budget):
    card = await grade_cache_refresh(wrong, only=[failing, control], budget=budget)
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == failure
    text = " ".join(card.text().split())  # the failures are wrapped at 100 characters
    assert "FAIL" in text and " ".join(verdict.hint.split()) in text
