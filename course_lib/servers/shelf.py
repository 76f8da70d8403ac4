"""The shelf server: two text documents as resources, and the two ways "not found" is answered.

* ``sdk``     -- the SDK's own high-level ``MCPServer``: an unknown URI is ``-32602`` with
  ``data.uri`` (the 2026-07-28 rule, used by SDK 2.3.0 in both eras);
* ``classic`` -- a low-level ``Server`` answering by the course's rule (``course_lib.uris.missing``):
  ``-32002 Resource not found`` at 2025-11-25, as older servers still send, ``-32602`` at 2026-07-28;
  each with ``data.uri``.

A client must treat both codes as "not found". Used by the troubleshooting page's tests.
``--pages 1,0,2`` (mode ``classic`` only: ``MCPServer`` lists everything in one page) pages
``resources/list`` and ``resources/templates/list`` with the rules of ``_base.Pager``.
"""
from __future__ import annotations

from typing import Sequence

import mcp_types as types
from mcp.server import Server

from course_lib.uris import missing
from course_lib.servers._base import Pager, add_pages_option, parser, serve

MODES = ("sdk", "classic")
DOCUMENTS = {"course://shelf/readme": "How to use the shelf.", "course://shelf/notes": "Two notes."}


def build_sdk():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("course-shelf")
    def document(text: str):
        return lambda: text

    for uri, text in DOCUMENTS.items():
        server.resource(uri, name=uri.rsplit("/", 1)[1], mime_type="text/plain")(document(text))
    return server._lowlevel_server


def build_classic(pages: Sequence[int] | None = None) -> Server:
    resource_pages = Pager(pages)

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        items, next_cursor = resource_pages.page([
            types.Resource(uri=uri, name=uri.rsplit("/", 1)[1], mime_type="text/plain") for uri in DOCUMENTS], params)
        return types.ListResourcesResult(resources=items, next_cursor=next_cursor)

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in DOCUMENTS:
            raise missing(uri, ctx.protocol_version)  # -32002 at 2025-11-25, -32602 at 2026-07-28
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=DOCUMENTS[uri])])

    return Server("course-shelf", version="1.0", on_list_resources=on_list_resources,
                  on_read_resource=on_read_resource)


def main(argv: list[str]) -> int:
    p = parser("shelf", MODES)
    add_pages_option(p)
    args = p.parse_args(argv)
    if args.mode == "sdk":
        if args.pages:
            p.error("--pages needs --mode classic: MCPServer answers every list in one page")
        return serve(build_sdk())
    return serve(build_classic(args.pages), pages=args.pages)
