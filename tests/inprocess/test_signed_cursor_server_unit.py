"""In-process: the checks of tests/stdio/test_signed_cursor_server.py's subject that start no process."""
import pytest
from mcp import Client
from mcp.server import MCPServer
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio
ORACLE = __import__("json").loads(fixture("servers", "signed_cursors.json").read_text(encoding="utf-8"))


async def test_mcpserver_answers_every_list_in_one_page_and_ignores_a_made_up_cursor():
    server = MCPServer("one-page")
    for n in range(ORACLE["mcpserver"]["tools"]):
        server.add_tool(lambda: "ok", name=f"tool_{n:03d}")
    async with Client(server) as client:  # in memory: the real SDK on both sides
        first = await client.list_tools()
        made_up = await client.list_tools(cursor="not-a-cursor")
    assert (len(first.tools), first.next_cursor) == (ORACLE["mcpserver"]["tools"], None)
    assert made_up.tools == first.tools and made_up.next_cursor is None
