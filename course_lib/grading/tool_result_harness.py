"""The server around chapter 6's result function: ``tools/call`` answered by the student's code.

``python -m course_lib.grading.tool_result_harness MODULE.py FUNCTION CONFIG.json`` imports the
student's module (written by ``grading.child``) and serves, on the SDK's low-level ``Server`` over
stdio, the tools of ``CONFIG`` (``{"tools": {name: outputSchema or null}}``). A call
``tools/call NAME {"result": VALUE}`` stands for a tool that computed VALUE; the answer is
``FUNCTION(tool, VALUE)``, sent as it is. A function that raises anything but ``MCPError`` is
answered ``-32603 crashed: Type: message`` (its traceback goes to stderr).
"""
from __future__ import annotations

import json
import sys
import traceback

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.stdio import stdio_server

from course_lib.grading.outcome import crash_line
from course_lib.grading.paging_harness import CRASHED, load


def serve(result_of, config: dict) -> None:
    tools = {name: types.Tool(name=name, input_schema={"type": "object"}, output_schema=schema)
             for name, schema in config["tools"].items()}

    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=list(tools.values()))

    async def on_call_tool(ctx, params):
        if params.name not in tools:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            return result_of(tools[params.name], (params.arguments or {}).get("result"))
        except MCPError:
            raise
        except Exception as exc:
            traceback.print_exc()
            raise MCPError(types.INTERNAL_ERROR, CRASHED + crash_line(exc), {"crashed": type(exc).__name__})

    async def main():
        async with stdio_server() as (read, write):
            server = Server("tool-results", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    path, function, config = sys.argv[1:4]
    serve(load(path, function), json.loads(open(config, encoding="utf-8").read()))
