"""The server around chapter 8's read handler: ``resources/read`` answered by the student's code.

``python -m course_lib.grading.read_harness MODULE.py FUNCTION`` imports the student's module
(written by ``grading.child``) and serves the atlas documents (``fixtures/atlas/documents.json``)
on the SDK's low-level ``Server`` over stdio: ``resources/list`` and ``resources/templates/list``
as the atlas server lists them, ``resources/read`` by ``FUNCTION(ctx, params)``. A handler that
raises anything but ``MCPError`` is answered ``-32603 crashed: Type: message`` with
``data.crashed`` (its traceback goes to stderr), so a grader tells the student's crash from an
error the SDK itself answered.
"""
from __future__ import annotations

import inspect
import sys
import traceback

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.stdio import stdio_server

from course_lib.grading.paging_harness import CRASHED, load
from course_lib.servers.atlas import Library


def serve(handler) -> None:
    library = Library.load()

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=uri, name=name, mime_type=library.mime_type)
                                                    for uri, name in library.uris.items()])

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        t = library.template
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=t["uriTemplate"], name=t["name"], description=t["description"],
            mime_type=library.mime_type)])

    async def on_read_resource(ctx, params):
        try:
            result = handler(ctx, params)
            return await result if inspect.isawaitable(result) else result
        except MCPError:
            raise
        except Exception as exc:
            traceback.print_exc()
            raise MCPError(types.INTERNAL_ERROR, CRASHED + (f"{type(exc).__name__}: {exc}" if str(exc)
                                                            else type(exc).__name__),
                           {"crashed": type(exc).__name__}) from None

    async def main():
        async with stdio_server() as (read, write):
            server = Server("atlas-graded", version="1.0", on_list_resources=on_list_resources,
                            on_list_resource_templates=on_list_resource_templates,
                            on_read_resource=on_read_resource)
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    serve(load(*sys.argv[1:3]))
