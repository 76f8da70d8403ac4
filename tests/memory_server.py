"""Small in-process MCP servers for the unit tests: no subprocess, the SDK's own client and server.

``paged(pages)`` is a low-level SDK ``Server`` whose ``tools/list`` answers are a dict written
by hand in the test: cursor -> (tool names on that page, next cursor). ``memory_lab(server)``
connects an ``mcp.Client`` to it over in-memory streams and records every message on a
``Wire``, as a lab does, so ``walk`` reads the raw pages too. ``rewrite`` edits a server
message's JSON text before the client parses it: a way to send what the SDK's server never
would (a misspelled key).
"""
from contextlib import asynccontextmanager
from typing import Callable

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from course_lib.wire import Wire

Pages = dict[str | None, tuple[list[str], str | None]]


def paged(pages: Pages) -> Server:
    async def on_list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        names, next_cursor = pages[None if params is None else params.cursor]
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in names],
                                     next_cursor=next_cursor)

    return Server("unit-pages", on_list_tools=on_list_tools)


class MemoryLab:
    """A client session that also keeps its wire: all ``walk`` reads from a lab."""

    def __init__(self):
        self.wire = Wire()
        self.client: Client | None = None

    def __getattr__(self, name: str):  # list_tools and the other list methods
        return getattr(self.client.session, name)

    def cursors_sent(self) -> list[str | None]:
        return [f.params.get("cursor") for f in self.wire.requests("tools/list")]


def _text(message: SessionMessage) -> str:
    return message.message.model_dump_json(by_alias=True, exclude_unset=True)


@asynccontextmanager
async def _recorded(server: Server, wire: Wire, rewrite: Callable[[str], str]):
    async with create_client_server_memory_streams() as ((to_server_read, to_server), (server_read, server_write)):
        reader_feed, reader = anyio.create_memory_object_stream[SessionMessage](0)
        writer, writer_drain = anyio.create_memory_object_stream[SessionMessage](0)

        async def outbound():
            async for message in writer_drain:
                wire.record("→", _text(message))
                await to_server.send(message)

        async def inbound():
            async for message in to_server_read:
                raw = rewrite(_text(message))
                wire.record("←", raw)
                await reader_feed.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(raw, by_name=False)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, server_read, server_write, server.create_initialization_options())
            tg.start_soon(outbound)
            tg.start_soon(inbound)
            yield reader, writer
            tg.cancel_scope.cancel()


@asynccontextmanager
async def memory_lab(server: Server, rewrite: Callable[[str], str] = lambda raw: raw):
    lab = MemoryLab()
    async with Client(_recorded(server, lab.wire, rewrite), mode="legacy") as client:
        lab.client = client
        yield lab
