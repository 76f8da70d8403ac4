"""In-process: the checks of tests/stdio/test_grading_capstone.py's subject that start no process."""
import pytest
from course_lib import walk
from course_lib.grading import outcome as o
from course_lib.grading.capstone import grade_capstone
from course_lib.grading.earlier import yours

pytestmark = pytest.mark.anyio


CHAPTER_8_READER = yours("05_snapshot_bundles", "reference_my_acquire")
AUDIT = "audit: my_page (chapter 06)"


class Starter:
    """The chapter's untouched starter."""

    def __init__(self, lab, allowed):
        self.lab, self.allowed = lab, allowed

    async def refresh(self, open_candidate):
        raise NotImplementedError("write refresh")

    async def read(self, uri):
        raise NotImplementedError("write read")

    async def bundle(self):
        raise NotImplementedError("write bundle")


class SessionClient:
    """A correct client in another style: the session for pages (no response cache there), plain
    functions of the course for the rest, ``read`` synchronous in its check."""

    def __init__(self, lab, allowed):
        self.lab, self.allowed = lab, tuple(allowed)

    async def refresh(self, open_candidate):
        from mcp.types import PaginatedRequestParams
        from course_lib.errors import CatalogError

        async with open_candidate() as fresh:
            catalog, cursors, cursor, pages = {}, [], None, 0
            while True:
                pages += 1
                if pages > 16:
                    raise CatalogError("page_budget", "more than 16 pages")
                params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
                page = await fresh.session.list_tools(params=params)
                for tool in page.tools:
                    if tool.name in catalog:
                        raise CatalogError("duplicate_name", tool.name)
                    catalog[tool.name] = tool
                if page.next_cursor is None:
                    return list(catalog)
                if page.next_cursor in cursors:
                    raise CatalogError("cursor_repeated", page.next_cursor)
                cursor = page.next_cursor
                cursors.append(cursor)

    def allows(self, uri):
        return any(uri == allowed for allowed in self.allowed)

    async def read(self, uri):
        from course_lib.errors import CheckFailed

        CheckFailed.require(self.allows(uri), "uri_allowlist", f"{uri} is not on the list")
        return (await self.lab.client.read_resource(uri, cache_mode="bypass")).contents[0].text

    async def bundle(self):
        return await CHAPTER_8_READER(self.lab)  # chapter 05's reference reader: bundles.acquire is unavailable


async def test_capstone_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="no scenario named"):
        await grade_capstone(Starter, only=["nope"])


NO_SOURCE = {}
exec("def my_page(cursor, catalog):\n    return [], None\n", NO_SOURCE)  # no file: its source cannot be read
NO_SOURCE = NO_SOURCE["my_page"]


async def test_capstone_audit_row_fails_when_no_server_is_given():
    card = await grade_capstone(SessionClient, only=[AUDIT], eras=["2026-07-28"])
    verdict = card.verdict_of(AUDIT)
    assert not verdict.passed and verdict.failure_class == o.CRASH
    assert "no my_page was given to the check" in verdict.observed


async def test_the_course_copy_gives_the_starters_and_the_reference_solutions():
    starter = yours("01_pagination", "my_walk")
    assert starter.starter and not yours("01_pagination", "reference_my_walk").starter
    with pytest.raises(NameError, match="defines no my_nothing"):
        yours("01_pagination", "my_nothing")


# -- known-wrong clients: their refresh and bundle rows recorded (fixtures/grading/transcripts/capstone.json) ----

async def listed(lab):
    """Every page of ``lab``'s catalog through its session; a duplicate name is refused (no library walk)."""
    from mcp.types import PaginatedRequestParams
    from course_lib.errors import CatalogError

    names, cursor = [], None
    for _ in range(32):
        page = await lab.session.list_tools(params=None if cursor is None else PaginatedRequestParams(cursor=cursor))
        for tool in page.tools:
            if tool.name in names:
                raise CatalogError("duplicate_name", f"{tool.name!r} twice")
            names.append(tool.name)
        cursor = page.next_cursor
        if cursor is None:
            return names
    raise CatalogError("page_budget", "32 pages")


class RefreshOnActive(SessionClient):
    async def refresh(self, open_candidate):
        return await listed(self.lab)  # walks where the schema cache lives


class RefreshAdoptingSchemas(SessionClient):
    async def refresh(self, open_candidate):
        async with open_candidate() as fresh:
            names = await listed(fresh)
            # "adopts" the candidate by copying its schemas into the active session: no message, same harm
            self.lab.session._tool_output_schemas.update(fresh.session._tool_output_schemas)
            return names


class RefreshThroughTheCache(SessionClient):
    async def refresh(self, open_candidate):
        from course_lib.stateless import client_listing

        async with open_candidate() as fresh:
            return await client_listing(fresh.client)  # page 1 with cache_mode="use"


class TruthyCursor(SessionClient):
    async def refresh(self, open_candidate):
        names, cursor = [], None
        async with open_candidate() as fresh:
            while True:
                page = await fresh.client.list_tools(cursor=cursor)
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
                if not cursor:  # "" taken for the end
                    return names


class LatestWins(SessionClient):
    async def refresh(self, open_candidate):
        tools, cursor = {}, None
        async with open_candidate() as fresh:
            for _ in range(32):
                page = await fresh.client.list_tools(cursor=cursor)
                tools.update({t.name: t for t in page.tools})  # a conflicting duplicate overwrites silently
                cursor = page.next_cursor
                if cursor is None:
                    return list(tools)
        raise ValueError("too many pages")


class WrongReason(SessionClient):
    async def refresh(self, open_candidate):
        from course_lib.errors import CatalogError

        async with open_candidate() as fresh:
            await listed(fresh)
        raise CatalogError("cursor_repeated", "not what happened")


class Untyped(SessionClient):
    async def refresh(self, open_candidate):
        async with open_candidate() as fresh:
            try:
                return await listed(fresh)
            except Exception as exc:
                raise ValueError(f"refresh failed: {exc}") from None  # loses the reason


class WithTheLibrary(SessionClient):
    async def refresh(self, open_candidate):
        async with open_candidate() as fresh:
            return (await walk(fresh)).names


class BundleFromTheCache(SessionClient):
    async def bundle(self):
        from course_lib import bundles

        first = await bundles.read_manifest(self.lab, cache_mode="use")  # a cached manifest may name r1
        for manifest in (first, await bundles.read_manifest(self.lab, cache_mode="use")):
            try:
                return {"revision": manifest.revision, "texts": await bundles.read_pinned(self.lab, manifest, "use")}
            except bundles.SnapshotUnavailable:
                continue
        raise bundles.BundleError("recovery", f"{first.revision} unavailable twice")


class ReadByPrefix(SessionClient):
    async def read(self, uri):
        from course_lib.errors import CheckFailed

        CheckFailed.require(uri.startswith("project://atlas/docs/"), "uri_allowlist", uri)
        return (await self.lab.client.read_resource(uri)).contents[0].text


# -- known-wrong page functions under the audit: their audit rows recorded ---------------------------------

def page_repeating(cursor, catalog):
    """Page 2 hands out the cursor that named it: a client that follows it loops."""
    size = catalog.page_size
    return (catalog.names[:size], "again") if cursor is None else (catalog.names[size:2 * size], "again")


def page_crashing(cursor, catalog):
    return catalog.names[:catalog.page_size], {"offset": 2}[cursor]  # KeyError on page 1


def page_unsigned(cursor, catalog):
    """Plain offsets: the audit edits one (2 made 3) and is served that page, a MUST of the course that fails."""
    start = int(cursor) if cursor and cursor.isdigit() else 0
    end = start + catalog.page_size
    return catalog.names[start:end], str(end) if end < len(catalog.names) else None


def page_lenient(cursor, catalog):
    """Signed offsets, but any cursor that is not one is read as page 1: a forged or an edited cursor is
    served page 1, a WARN (the spec's SHOULD), not a MUST that fails."""
    import hashlib
    import hmac

    def sign(offset: int) -> str:
        return f"{offset}.{hmac.new(catalog.key, str(offset).encode(), hashlib.sha256).hexdigest()[:16]}"

    head = (cursor or "").partition(".")[0]
    start = int(head) if head.isdigit() and cursor == sign(int(head)) else 0
    end = start + catalog.page_size
    return catalog.names[start:end], sign(end) if end < len(catalog.names) else None
