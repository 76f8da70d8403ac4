"""In-process: the checks of tests/stdio/test_signed_cursor_server.py's subject that start no process.

Chapter 06's signed-cursor server, beyond the chapter's own cells, on real stdio servers.

The oracle is ``fixtures/servers/signed_cursors.json``, written by hand. The server is the chapter's
own text (``SERVER_TOP``, ``SERVER_LOOP``, ``MINT``, ``REFUSE``, ``READ``, copied from its cells as they
are): it pages the same cursors in both eras and a second process of it honours them; the course's
catalog server refuses what it refuses; the same rules written the SDK 1.29.0 way (decorator,
camelCase fields, ``McpError(ErrorData(...))``) and run by the real 1.29.0 interpreter answer the
same pages and refusals; 2.3.0 has neither the decorator nor ``McpError``; ``MCPServer`` does not page.
"""
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
