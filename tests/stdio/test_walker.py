"""The seed's cursor regressions, on real stdio servers, in both protocol eras."""

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib import CatalogError, connect, walk
from course_lib.display import error_line
from course_lib.page_stepper import StepWalk

pytestmark = pytest.mark.anyio


async def test_normal_walk_has_an_empty_middle_page(era):
    async with connect("catalog", era=era) as lab:
        assert lab.protocol_version == {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}[era]
        catalog = await walk(lab)
        assert catalog.names == ["alpha", "beta", "gamma"]
        assert catalog.page_sizes == (1, 0, 2)
        called = await lab.session.call_tool("gamma", {})
        assert called.is_error is False
        assert called.content[0].text == "synthetic:gamma"


async def test_one_page(era):
    async with connect("catalog", mode="single", era=era) as lab:
        catalog = await walk(lab, max_pages=1)
        assert (catalog.names, catalog.page_sizes) == (["alpha"], (1,))


async def test_empty_catalog(era):
    async with connect("catalog", mode="empty", era=era) as lab:
        catalog = await walk(lab)
        assert (catalog.items, catalog.page_sizes) == ((), (0,))


async def test_empty_string_cursor_is_sent_back(era):
    async with connect("catalog", mode="empty-token", era=era) as lab:
        first = await lab.session.list_tools()
        assert first.next_cursor == ""
        catalog = await walk(lab)
        assert catalog.page_sizes == (1, 0, 2)
        assert len(catalog.items) == 3
    sent = [f.params.get("cursor") for f in lab.wire.requests("tools/list")]
    assert sent == [None, None, "", sent[3]] and sent[3] not in (None, "")


async def test_replay_is_stable_within_a_generation(era):
    async with connect("catalog", era=era) as lab:
        first = await lab.session.list_tools()
        again = await lab.session.list_tools()
        assert first.model_dump() == again.model_dump()
        params = types.PaginatedRequestParams(cursor=first.next_cursor)
        second = await lab.session.list_tools(params=params)
        replay = await lab.session.list_tools(params=params)
        assert second.model_dump() == replay.model_dump()
        assert second.tools == [] and second.next_cursor is not None


@pytest.mark.parametrize("mode, limits, reason", [
    ("repeat", {}, "cursor_repeated"),
    ("cycle", {}, "cursor_repeated"),
    ("endless", {"max_pages": 4}, "page_budget"),
    ("normal", {"max_pages": 2}, "page_budget"),
    ("normal", {"max_items": 2}, "item_budget"),
    ("duplicate", {}, "duplicate_name"),
])
async def test_walk_refuses_with_a_reason(era, mode, limits, reason):
    async with connect("catalog", mode=mode, era=era) as lab:
        with pytest.raises(CatalogError) as caught:
            await walk(lab, **limits)
        assert caught.value.reason == reason


async def test_exact_page_budget_is_enough(era):
    async with connect("catalog", era=era) as lab:
        catalog = await walk(lab, max_pages=3)
        assert catalog.pages == 3 and len(catalog.items) == 3


async def test_forged_cursor_is_invalid_params(era):
    async with connect("catalog", era=era) as lab:
        with pytest.raises(MCPError) as caught:
            await lab.session.list_tools(params=types.PaginatedRequestParams(cursor="not-issued"))
        assert caught.value.error.code == types.INVALID_PARAMS
        # The server keeps serving after the refusal.
        assert (await walk(lab)).names == ["alpha", "beta", "gamma"]


async def test_generation_change_then_explicit_fresh_walk(era):
    async with connect("catalog", mode="change", era=era) as lab:
        with pytest.raises(MCPError) as caught:
            await walk(lab)
        assert caught.value.error.code == types.INVALID_PARAMS
        assert caught.value.error.data == {"reason": "expired"}
        catalog = await walk(lab)  # the client never retries by itself; this is explicit
        assert (catalog.names, catalog.page_sizes) == (["alpha", "beta", "gamma"], (1, 0, 2))


async def test_cursor_from_another_server_process(era):
    async with connect("catalog", era=era) as lab:
        cursor = (await lab.session.list_tools()).next_cursor
    async with connect("catalog", era=era) as lab:
        with pytest.raises(MCPError) as caught:
            await lab.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        assert caught.value.error.code == types.INVALID_PARAMS
        assert caught.value.error.data == {"reason": "unknown"}


@pytest.mark.parametrize("mode", ["normal", "repeat", "cycle", "endless", "duplicate"])
async def test_the_page_stepper_and_walk_follow_the_same_rules(mode):
    async with connect("catalog", mode=mode) as lab:
        stepper = StepWalk(max_pages=4)
        while not stepper.done:
            await stepper.next_page(lab.session)
        try:
            catalog = await walk(lab, max_pages=4)
        except CatalogError as exc:
            assert stepper.verdict == f"refused, nothing returned: {error_line(exc)}"
        else:
            assert stepper.names == catalog.names == ["alpha", "beta", "gamma"]
            assert stepper.verdict == f"complete: 3 tools in 3 pages {list(catalog.page_sizes)}"
