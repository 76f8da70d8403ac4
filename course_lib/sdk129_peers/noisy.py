"""A tools server written the SDK 1.29.0 way whose handler calls ``print()`` (run only by ``.venv-sdk129``).

One page, three tools (``alpha``, ``beta``, ``gamma``). The ``tools/list`` handler prints a log
line before it answers, as a careless server does: in 1.29.0 that line reaches stdout, the
JSON-RPC stream, between the frames. Stdlib and mcp 1.29.0 only.
"""
import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("noisy-sdk-1.29.0", version="1.0")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    print("noisy: listing tools")  # the bug: a log line on stdout
    return [types.Tool(name=name, inputSchema={"type": "object"}) for name in ("alpha", "beta", "gamma")]


async def run() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(run)
