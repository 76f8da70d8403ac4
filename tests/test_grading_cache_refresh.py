"""The exercise of 09_stateless_cache: the reference refresh passes, known-wrong refreshes fail where expected."""
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading.cache_refresh import grade_cache_refresh
from course_lib.tooling.student_copy import reference_solution

pytestmark = pytest.mark.anyio
ALL = ["unchanged catalog", "changed since last refresh", "changed mid-refresh",
       "expired cursor after a change", "catalog never settles"]


def reference():
    """``reference_my_refresh`` exactly as the chapter's hidden solution cell defines it."""
    return reference_solution("09_stateless_cache.ipynb", "reference_my_refresh",
                              {"MCPError": MCPError, "types": types})


async def walk(client, first_page="refresh"):
    names, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode=first_page if cursor is None else "use")
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names


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


async def test_reference_solution_passes_every_scenario():
    card = await grade_cache_refresh(reference())
    assert [v.scenario.name for v in card.verdicts] == ALL
    assert card.passed, card.text()
    assert card.text().endswith("5/5 scenarios pass — well done.")


async def test_stub_fails_every_scenario_that_needs_a_listing():
    async def stub(client):
        raise NotImplementedError("write your refresh here")

    card = await grade_cache_refresh(stub)
    unchanged = card.verdict_of("unchanged catalog")
    assert unchanged.observed == "raised NotImplementedError: write your refresh here"
    # only the scenario whose right answer is an error lets a function that always raises through
    assert [v.scenario.name for v in card.failures()] == ALL[:4]
    assert card.text().endswith("1/5 scenarios pass")


# A solution that never returns runs under a short budget (a loop is a loop, however loaded the
# machine); every other one keeps the battery's own budget, so its outcome never depends on speed.
@pytest.mark.parametrize("wrong, failing, observed, budget", [
    (trusts_the_cache, "changed since last refresh", "returned ['alpha', 'beta', 'bump', 'zeta']", None),
    (never_restarts, "changed mid-refresh", "raised MCPError -32602", None),
    (skips_the_refused_page, "changed mid-refresh", "returned ['alpha', 'beta', 'bump']", None),
    (restarts_forever, "catalog never settles", "no result within 3 s", 3),
])
async def test_known_wrong_solution_is_flagged_at_its_scenario(wrong, failing, observed, budget):
    card = await grade_cache_refresh(wrong, budget=budget)
    failed = [v.scenario.name for v in card.failures()]
    assert failing in failed, card.text()
    assert card.verdict_of(failing).observed.startswith(observed), card.verdict_of(failing).observed
    table = " ".join(card.table().text().split())  # the text form wraps long cells
    assert "FAIL" in table and " ".join(card.verdict_of(failing).scenario.hint.split()) in table
