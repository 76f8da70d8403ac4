"""The server around chapter 5's tool handler: ``tools/call`` answered by the student's code.

``python -m course_lib.grading.tool_harness MODULE.py FUNCTION CONFIG.json`` imports the
student's module (written by ``grading.child``) and serves, on the SDK's low-level ``Server``
over stdio, ``tools/list`` from ``CONFIG`` (``{"name": ..., "tools": {name: input schema}}``) and
``tools/call`` with ``FUNCTION(name, arguments, catalog)``. ``name`` and ``arguments`` are the
request's fields as they arrived on the wire: a middleware (``as_sent``) keeps them and hands the
SDK a well-formed stand-in, so the SDK's own check of the request's shape (a string ``name``, an
object ``arguments``) does not answer first, as it would not on a server without the SDK's
models; ``catalog.tools`` is what
``tools/list`` lists, ``catalog.run(name, arguments)`` the tools' business logic (a result naming
what ran). A function that raises anything but ``MCPError``, or returns no ``CallToolResult``,
is answered ``-32603 crashed: Type: message`` (the traceback goes to stderr).
"""
from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import replace

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.grading.paging_harness import load
from course_lib.grading.state_harness import crash
from course_lib.servers._base import serve


SENT: ContextVar[tuple] = ContextVar("sent")  # (name, arguments) of the tools/call being served


async def as_sent(ctx, call_next):
    """Keep a ``tools/call``'s ``name`` and ``arguments`` as sent; pass a well-formed stand-in on."""
    if ctx.method != "tools/call" or not isinstance(ctx.params, Mapping):
        return await call_next(ctx)
    SENT.set((ctx.params.get("name"), ctx.params.get("arguments")))
    return await call_next(replace(ctx, params={**ctx.params, "name": "as-sent", "arguments": {}}))


def ran(name: str, arguments: dict) -> str:
    """What the business logic answers: which tool ran, with which arguments."""
    return f"{name} ran with {json.dumps(arguments, sort_keys=True)}"


class Catalog:
    def __init__(self, tools: dict):
        self.tools = {name: dict(schema) for name, schema in tools.items()}

    def run(self, name: str, arguments: dict | None = None) -> types.CallToolResult:
        """The tool's business logic: call it only with input you checked."""
        return types.CallToolResult(content=[types.TextContent(type="text", text=ran(name, arguments or {}))])


def build(handler, config: dict) -> Server:
    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=s) for n, s in config["tools"].items()])

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = SENT.get()
        try:
            result = handler(name, arguments, Catalog(config["tools"]))
            if inspect.isawaitable(result):
                result = await result
        except MCPError:
            raise
        except Exception as exc:
            raise crash(exc) from None
        if not isinstance(result, types.CallToolResult):
            raise crash(TypeError(f"returned {type(result).__name__}, not a types.CallToolResult"))
        return result

    server = Server(config["name"], version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.middleware.append(as_sent)
    return server


if __name__ == "__main__":
    path, function, config = sys.argv[1:4]
    sys.exit(serve(build(load(path, function), json.loads(open(config, encoding="utf-8").read()))))
