"""The server around chapter 3's page function: ``tools/list`` and ``prompts/list`` served by it.

``python -m course_lib.grading.paging_harness MODULE.py FUNCTION CONFIG.json`` imports the
student's module (written by ``grading.child``), and serves ``tools/list`` and ``prompts/list``
on the SDK's low-level ``Server`` over stdio with one ``FUNCTION(cursor, catalog)``: the catalog
of each list says which list it is (``kind``) and which process serves it (``process``, new at
every start; the ``key`` is the same for every process of one server). A page function that
raises anything but ``MCPError`` is answered ``-32603 crashed: Type: message`` (its traceback,
with the module's real line numbers, goes to stderr). ``CONFIG`` has the server's ``name``,
``key``, ``catalog`` (the tools), ``prompts``, ``page_size`` and, for the catalog that moves on,
``changed`` (the tools of generation 2, from the second ``tools/list`` request on).
"""
from __future__ import annotations

import importlib.util
import json
import secrets
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
    process: str  # this process's id: new at every start of the server
    kind: str     # the list: "tools" or "prompts"
    names: list
    page_size: int
    generation: int = 1


def load(path: str, function: str):
    where = importlib.util.spec_from_file_location("student_page", path)
    module = importlib.util.module_from_spec(where)
    where.loader.exec_module(module)
    return getattr(module, function)


def serve(page, config: dict) -> None:
    process = secrets.token_hex(8)
    lists = {kind: Catalog(config["name"], config["key"].encode(), process, kind, list(names), config["page_size"])
             for kind, names in (("tools", config["catalog"]), ("prompts", config["prompts"]))}
    served = 0

    def answer(kind: str, params):
        cursor = None if params is None else params.cursor
        try:
            names, next_cursor = page(cursor, lists[kind])
            if kind == "tools":
                tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in names]
                return types.ListToolsResult(tools=tools, next_cursor=next_cursor)
            return types.ListPromptsResult(prompts=[types.Prompt(name=n) for n in names], next_cursor=next_cursor)
        except MCPError:
            raise
        except Exception as exc:
            traceback.print_exc()
            raise MCPError(types.INTERNAL_ERROR, CRASHED + (f"{type(exc).__name__}: {exc}" if str(exc)
                                                            else type(exc).__name__),
                           {"crashed": type(exc).__name__})

    async def on_list_tools(ctx, params):
        nonlocal served
        if served == 1 and config.get("changed"):  # the catalog moves on before the second request
            for catalog in lists.values():
                catalog.generation = 2
            lists["tools"].names = list(config["changed"])
        served += 1
        return answer("tools", params)

    async def on_list_prompts(ctx, params):
        return answer("prompts", params)

    async def main():
        async with stdio_server() as (read, write):
            server = Server(config["name"], version="1.0", on_list_tools=on_list_tools,
                            on_list_prompts=on_list_prompts)
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    path, function, config = sys.argv[1:4]
    serve(load(path, function), json.loads(open(config, encoding="utf-8").read()))
