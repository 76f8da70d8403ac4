"""The shelf server: two text documents as resources, and the two ways "not found" is answered.

* ``sdk``     -- the SDK's own high-level ``MCPServer``: an unknown URI is ``-32602`` with
  ``data.uri`` (the 2026-07-28 rule, used by SDK 2.3.0 in both eras);
* ``classic`` -- a low-level ``Server`` answering ``-32002 Resource not found`` with
  ``data.uri``, the code the 2025-11-25 specification shows and older servers still send.

A client must treat both codes as "not found". Used by the troubleshooting page's tests.
"""
from __future__ import annotations

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.protocol import RESOURCE_NOT_FOUND
from course_lib.servers._base import parser, serve

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


def build_classic() -> Server:
    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=uri, name=uri.rsplit("/", 1)[1], mime_type="text/plain") for uri in DOCUMENTS])

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in DOCUMENTS:
            raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=DOCUMENTS[uri])])

    return Server("course-shelf", version="1.0", on_list_resources=on_list_resources,
                  on_read_resource=on_read_resource)


def main(argv: list[str]) -> int:
    args = parser("shelf", MODES).parse_args(argv)
    return serve(build_sdk() if args.mode == "sdk" else build_classic())
