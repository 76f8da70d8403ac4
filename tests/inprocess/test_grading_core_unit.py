"""In-process: the checks of tests/stdio/test_grading_core.py's subject that start no process."""
import pytest
from mcp import MCPError
from mcp.types import PaginatedRequestParams

from course_lib import CatalogError
from course_lib.grading.core import grade_walker, load_battery

pytestmark = pytest.mark.anyio


async def first_page_only(session):
    return [t.name for t in (await session.list_tools()).tools]


def test_every_row_of_the_battery_states_its_requests_and_refusal():
    _, scenarios, spec = load_battery("walk")
    for s in scenarios:
        assert isinstance(s.expect.get("requests"), int), s.name
        if s.expect.get("raises"):
            assert s.expect["refusal"]["type"] in ("CatalogError", "MCPError"), s.name
    order = next(s for s in scenarios if s.name == "server order").expect["names"]
    assert order != sorted(order), "the server-order row must not be alphabetical"


async def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="no scenario named"):
        await grade_walker(first_page_only, only=["nope"])


# -- the recorded walkers (fixtures/grading/transcripts/walk*.expected.json): the starter, wrong ones, correct ones

def params(cursor):
    return None if cursor is None else PaginatedRequestParams(cursor=cursor)


async def starter(session, max_pages=32):
    raise NotImplementedError("write your walker here")


async def swallow_errors(session):
    names, cursor, seen = [], None, set()
    try:
        for _ in range(32):
            page = await session.list_tools(params=params(cursor))
            for t in page.tools:
                if t.name in names:
                    raise CatalogError("duplicate_name", "duplicate")
                names.append(t.name)
            cursor = page.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
    except Exception:
        pass
    return names  # a partial catalog on any failure


async def one_request_too_many(session):
    """Checks the cursor it sent rather than the one it got: the repeat is seen a request late."""
    names, cursor, sent = [], None, set()
    for _ in range(32):
        page = await session.list_tools(params=params(cursor))
        if cursor in sent:
            raise CatalogError("cursor_repeated", "a cursor came back")
        sent.add(cursor)
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names
    raise CatalogError("page_budget", "too many pages")


async def typo_on_page_2(session):
    page = await session.list_tools()
    names = [t.name for t in page.tools]
    cursor = page.next_cursor
    while cursor is not None:
        page = await session.list_tools(params=params(cursor))
        names += [t.name for t in page.tools]
        cursor = page.next_cursr  # the typo: AttributeError on page 2
    return names


async def wrong_reason(session):
    try:
        return await safe_walk(session)
    except CatalogError as exc:
        raise CatalogError("cursor_repeated", "something went wrong") from exc


async def safe_walk(session, max_pages=32):
    """A correct walker in the reference's style: a loop with a set of cursors and of names."""
    names, seen, cursor = [], set(), None
    for _ in range(max_pages):
        page = await session.list_tools(params=params(cursor))
        for t in page.tools:
            if t.name in names:
                raise CatalogError("duplicate_name", f"{t.name!r} appears twice")
            names.append(t.name)
        cursor = page.next_cursor
        if cursor is None:
            return names
        if cursor in seen:
            raise CatalogError("cursor_repeated", "the server sent a cursor it had already sent")
        seen.add(cursor)
    raise CatalogError("page_budget", f"no last page within {max_pages} pages")


async def generator_walk(session, max_pages=32):
    """Another style: an async generator of pages, a dict of names, errors raised where they show."""
    async def pages():
        cursors = []
        request = None
        while True:
            if len(cursors) == max_pages:
                raise CatalogError("page_budget", f"{max_pages} pages and no end")
            page = await session.list_tools(params=request)
            yield page.tools
            if page.next_cursor is None:
                return
            if page.next_cursor in cursors:
                raise CatalogError("cursor_repeated", f"cursor of page {cursors.index(page.next_cursor) + 1} again")
            cursors.append(page.next_cursor)
            request = PaginatedRequestParams(cursor=page.next_cursor)

    found = {}
    async for tools in pages():
        for t in tools:
            if found.setdefault(t.name, t) is not t:
                raise CatalogError("duplicate_name", f"{t.name} twice")
    return list(found)


async def calls_the_library(session, max_pages=32):
    from course_lib import walk  # the library's walker is the lesson, not an answer
    return (await walk(session, max_pages=max_pages)).names


async def calls_it_through_a_helper(session, max_pages=32):
    return await helper_that_walks(session)


async def helper_that_walks(session):
    import course_lib.walker
    return (await course_lib.walker.walk(session)).names


async def uses_a_name_from_a_cell_not_run(session, max_pages=32):
    return await session.list_tools(params=page_params_never_defined(None))  # noqa: F821


async def restarts_on_every_refusal(session):
    try:
        return await safe_walk(session)
    except (MCPError, CatalogError):
        return await safe_walk(session)  # a repeating server is walked twice


async def keeps_the_refused_pages(session):
    """Restarts once, but keeps the names the refused walk had read: two catalogs mixed."""
    names = []
    for _ in range(2):
        cursor = None
        try:
            while True:
                page = await session.list_tools(params=params(cursor))
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    return names
        except MCPError:
            continue
    raise CatalogError("page_budget", "two walks refused")


async def restarts_once_after_a_refused_cursor(session):
    """The rule: one restart, and only after -32602."""
    try:
        return await safe_walk(session)
    except MCPError as exc:
        if exc.error.code != -32602:
            raise
        return await safe_walk(session)
