"""The hostile server met by a real SDK 1.29.0 peer, against 2.3.0: the appendix's SDK rows.

The oracle is ``fixtures/hostile/sdk129.json`` (and ``expected.json`` for the 2.3.0 side), written
by hand; each test's name is the row of ``fixtures/sdk_changes/11.json`` that cites it.
"""
import json

import pytest

from course_lib import connect, sdk129, walk
from course_lib.paths import FIXTURES
from mcp_types import PaginatedRequestParams

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not sdk129.available(), reason="no .venv-sdk129")]

WANT = json.loads((FIXTURES / "hostile" / "sdk129.json").read_text(encoding="utf-8"))
BUDGET = {"request_timeout": 30}


async def test_print_in_a_handler_reaches_stdout_on_1_29_0_and_stderr_on_2_3_0():
    async with connect(sdk129.server_argv("noisy"), **BUDGET) as old:
        await walk(old)
    async with connect("hostile", mode="print", **BUDGET) as new:
        await walk(new)
    assert sum(": listing" in line for line in old.noise) == WANT["print_lines_on_stdout"]
    assert [line for line in new.noise if ": listing" in line] == []
    assert sum(": listing" in line for line in new.stderr.splitlines()) == 3


async def test_an_unknown_cursor_key_is_kept_by_1_29_0_and_dropped_by_2_3_0():
    first, _ = await sdk129.client("hostile", [{"op": "list_tools", "cursor": None}], mode="snake-cursor")
    assert first["ok"], first
    assert {"nextCursor": first["result"].get("nextCursor"), "extra": first["extra"]} == WANT["snake_cursor"]
    async with connect("hostile", mode="snake-cursor", **BUDGET) as lab:
        page = await lab.session.list_tools()
    assert (page.next_cursor, page.model_extra or {}) == (None, {})


async def test_a_tool_without_input_schema_fails_its_page_in_both_sdks():
    first, _ = await sdk129.client("hostile", [{"op": "list_tools", "cursor": "page-3"}], mode="bad-tool")
    assert not first["ok"] and first["error"]["type"] == WANT["bad_tool_error"]
    async with connect("hostile", mode="bad-tool", **BUDGET) as lab:
        with pytest.raises(Exception) as caught:
            await lab.session.list_tools(params=PaginatedRequestParams(cursor="page-3"))
    assert type(caught.value).__name__ == WANT["bad_tool_error"]


async def test_a_bare_1_29_0_session_reports_stdout_noise_and_goes_on():
    first, session = await sdk129.client("hostile", [{"op": "list_tools"}], mode="noise")
    assert first["ok"] and [t["name"] for t in first["result"]["tools"]] == WANT["noise"]["catalog_page_1"]
    assert session["noise"] and set(session["noise"]) == {WANT["noise"]["reported"]}
