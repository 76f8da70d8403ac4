"""The server around chapter 3's page function: ``tools/list`` served by the student's code.

``python -m course_lib.grading.paging_harness MODULE.py FUNCTION CONFIG.json`` imports the
student's module (written by ``grading.child``), and serves ``tools/list`` on the SDK's
low-level ``Server`` over stdio with ``FUNCTION(cursor, catalog)``. A page function that raises
anything but ``MCPError`` is answered ``-32603 crashed: Type: message`` (its traceback, with the
module's real line numbers, goes to stderr). ``CONFIG`` has the server's ``name``, ``key``,
``catalog``, ``page_size`` and, for the catalog that moves on, ``changed`` (generation 2, from
the second request on).
"""
from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from dataclasses import dataclass

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.stdio import stdio_server

CRASHED = "crashed: "  # how a page function's own error is prefixed on the wire


@dataclass
class Catalog:
    name: str
    key: bytes
    names: list
    page_size: int
    generation: int = 1


def load(path: str, function: str):
    where = importlib.util.spec_from_file_location("student_page", path)
    module = importlib.util.module_from_spec(where)
    where.loader.exec_module(module)
    return getattr(module, function)


def serve(page, config: dict) -> None:
    catalog = Catalog(config["name"], config["key"].encode(), list(config["catalog"]), config["page_size"])
    served = 0

    async def on_list_tools(ctx, params):
        nonlocal served
        if served == 1 and config.get("changed"):  # the catalog moves on before the second request
            catalog.generation, catalog.names = 2, list(config["changed"])
        served += 1
        cursor = None if params is None else params.cursor
        try:
            names, next_cursor = page(cursor, catalog)
            tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in names]
            return types.ListToolsResult(tools=tools, next_cursor=next_cursor)
        except MCPError:
            raise
        except Exception as exc:
            traceback.print_exc()
            raise MCPError(types.INTERNAL_ERROR, CRASHED + (f"{type(exc).__name__}: {exc}" if str(exc)
                                                            else type(exc).__name__),
                           {"crashed": type(exc).__name__})

    async def main():
        async with stdio_server() as (read, write):
            server = Server(catalog.name, version="1.0", on_list_tools=on_list_tools)
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    path, function, config = sys.argv[1:4]
    serve(load(path, function), json.loads(open(config, encoding="utf-8").read()))
