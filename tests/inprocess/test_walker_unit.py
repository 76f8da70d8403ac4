"""In-process: the checks of tests/stdio/test_walker.py's subject that start no process."""
from importlib.metadata import version

import mcp_types as types
import pytest

from course_lib import walk
from course_lib.walker import CursorRules

pytestmark = pytest.mark.anyio


def test_sdk_version_is_pinned():
    assert version("mcp") == "2.3.0"


@pytest.mark.parametrize("limit", [0, -1, True, 1.5, "3", None])
async def test_invalid_page_budget_rejected_before_any_request(limit):
    with pytest.raises(ValueError, match="max_pages"):
        await walk(None, max_pages=limit)  # None has no list method: validation comes first


@pytest.mark.parametrize("limit", [-1, True, 1.5, None])
async def test_invalid_item_budget_rejected_before_any_request(limit):
    with pytest.raises(ValueError, match="max_items"):
        await walk(None, max_items=limit)


async def test_unknown_kind_rejected():
    with pytest.raises(ValueError, match="kind"):
        await walk(None, kind="widgets")


async def test_cursor_rules_one_page_at_a_time():
    rules = CursorRules("tools", max_pages=3)
    assert rules.request_params() is None  # the first page sends no cursor
    assert rules.accept([types.Tool(name="alpha", input_schema={"type": "object"})], "") == ""
    assert rules.request_params().cursor == ""  # "" is a cursor: it goes back verbatim
    assert rules.accept([], "c2") == "c2" and rules.page == 3
    assert rules.accept([], None) is None and rules.complete
    assert (rules.sizes, [t.name for t in rules.items], rules.seen_cursors) == ([1, 0, 0], ["alpha"], {"", "c2"})
    with pytest.raises(RuntimeError, match="complete"):
        rules.request_params()
