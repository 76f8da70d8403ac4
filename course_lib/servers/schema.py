"""The schema server: a fixture file decides every answer, and an audit records every request.

``python -m course_lib.servers schema --fixture fixtures/schema/NAME.json``

* ``tools/list`` answers from the fixture's ordered ``pages``: request number *n* must carry
  exactly the cursor ``pages[n].cursor`` (``null`` for an uncursored request), and gets
  ``pages[n].result``. A request beyond the last page, or with another cursor, is refused
  with -32602 (and still recorded, so an unexpected request is never invisible).
* ``tools/call`` accepts only ``alpha`` with no arguments and returns the fixture's
  ``call_content`` as ``structuredContent``, unchanged. That is deliberately non-conforming:
  a server that declares an ``outputSchema`` must return conforming content. The lab needs
  a server that lies so that the *client's* validation becomes visible.
* Every request is appended to ``audit.json`` in the lab directory; a finalizer writes
  ``closed: true`` when the server stops.
"""
from __future__ import annotations

import json

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.servers._base import Audit, parser, serve


def build(fixture: dict, audit: Audit) -> Server:
    pages = fixture["pages"]
    position = 0

    async def on_list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        nonlocal position
        cursor = None if params is None else params.cursor
        audit.record(method="tools/list", cursor=cursor)
        if position >= len(pages):
            raise MCPError(types.INVALID_PARAMS, f"fixture has no tools/list answer number {position + 1}")
        step = pages[position]
        if cursor != step["cursor"]:
            raise MCPError(types.INVALID_PARAMS,
                           f"fixture expected cursor {step['cursor']!r} in request {position + 1}, got {cursor!r}")
        position += 1
        return types.ListToolsResult.model_validate(step["result"])

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        audit.record(method="tools/call", name=params.name)
        if params.name != "alpha" or (params.arguments or {}) != {}:
            raise MCPError(types.INVALID_PARAMS, "this fixture answers only alpha with {}")
        content = fixture["call_content"]
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(content))],
                                    structured_content=content, is_error=False)

    return Server("course-schema", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def main(argv: list[str]) -> int:
    args = parser("schema", fixture=True).parse_args(argv)
    fixture = json.loads(args.fixture.read_text(encoding="utf-8"))
    audit = Audit()
    return serve(build(fixture, audit), audit=audit)
