"""The catalog server: three pages 1/0/2 (alpha | — | beta, gamma) and the ways cursors go wrong.

Mode ``unsorted`` serves the same three pages in an order that is not alphabetical
(gamma | — | alpha, beta): a walker must keep the server's order.

Mode ``typed`` serves one page with one tool, ``forecast``, whose input schema asks for a
``city`` (a string) and allows ``days`` (an integer from 1 to 7).

Mode ``failing`` answers every cursored request, after checking its cursor, with JSON-RPC
-32603 (the backend behind the page failed): an error that is not about the cursor.

Every tool checks its arguments against its own input schema: arguments that fail it get a
tool *result* with ``isError: true`` whose text says what is wrong (a model can read it and
correct the call). An unknown tool name is a JSON-RPC error, -32602; so are ``arguments``
that are not an object, which the SDK refuses before any handler runs.

Cursors are opaque random tokens mapped to (generation, page). Within one generation the
same page always hands out the same next cursor (stable replay). A cursor this process never
issued, or one from an older generation, is refused with JSON-RPC -32602.

``--http`` serves Streamable HTTP on 127.0.0.1 instead of stdio (``course_lib.loopback.serve_http``
starts it; one process serves every session).
"""
from __future__ import annotations

import secrets

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.servers._base import parser, serve

MODES = ("normal", "single", "empty", "empty-token", "repeat", "cycle", "endless", "duplicate",
         "change", "large", "unsorted", "typed", "failing")
PAGES = (("alpha",), (), ("beta", "gamma"))
LARGE_PAGES, LARGE_PAGE_SIZE = 1000, 10
INPUT_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
# Tools whose input schema is not the empty one above (mode ``typed``).
SCHEMAS = {"forecast": {"type": "object",
                        "properties": {"city": {"type": "string"},
                                       "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                        "required": ["city"], "additionalProperties": False}}


def tool(name: str) -> types.Tool:
    return types.Tool(name=name, description=f"Synthetic catalog entry {name}",
                      input_schema=SCHEMAS.get(name, INPUT_SCHEMA))


def argument_problems(name: str, arguments: dict) -> list[str]:
    """What is wrong with ``arguments`` under the tool's own input schema, one line each."""
    from jsonschema import Draft202012Validator  # imported on the first call, not at start-up

    errors = Draft202012Validator(SCHEMAS.get(name, INPUT_SCHEMA)).iter_errors(arguments)
    return sorted(f"{'/'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in errors)


class Catalog:
    """The mode table lives here: each mode changes one decision, nothing else."""

    def __init__(self, mode: str = "normal"):
        self.mode = mode
        self.generation = 1
        self.list_calls = 0
        self.token_of: dict[tuple[int, int], str] = {}
        self.key_of: dict[str, tuple[int, int]] = {}
        if mode == "large":
            self.pages = tuple(tuple(f"tool-{p * LARGE_PAGE_SIZE + i:05d}" for i in range(LARGE_PAGE_SIZE))
                               for p in range(LARGE_PAGES))
        elif mode == "duplicate":
            self.pages = (("alpha",), (), ("alpha",))
        elif mode == "single":
            self.pages = (("alpha",),)
        elif mode == "empty":
            self.pages = ((),)
        elif mode == "unsorted":
            self.pages = (("gamma",), (), ("alpha", "beta"))
        elif mode == "typed":
            self.pages = (("forecast",),)
        else:
            self.pages = PAGES
        self.callable = {name for page in self.pages for name in page}

    def cursor_for(self, index: int) -> str:
        key = (self.generation, index)
        if key not in self.token_of:
            token = "" if self.mode == "empty-token" and index == 1 else secrets.token_urlsafe(12)
            self.token_of[key] = token
            self.key_of[token] = key
        return self.token_of[key]

    def index_of(self, cursor: str) -> int:
        key = self.key_of.get(cursor)
        if key is None:
            raise MCPError(types.INVALID_PARAMS, "Invalid cursor: not issued by this server process",
                           {"reason": "unknown"})
        if key[0] != self.generation:
            raise MCPError(types.INVALID_PARAMS,
                           f"Expired cursor: issued for catalog generation {key[0]}, current is {self.generation}",
                           {"reason": "expired"})
        return key[1]

    def page(self, cursor: str | None) -> types.ListToolsResult:
        self.list_calls += 1
        if self.mode == "change" and self.list_calls == 2:
            self.generation += 1  # the catalog changed between two requests of one walk
        index = 0 if cursor is None else self.index_of(cursor)
        if self.mode == "failing" and cursor is not None:  # a valid cursor, a failing backend
            raise MCPError(types.INTERNAL_ERROR, "Internal error: the catalog backend is unavailable")
        if self.mode == "repeat" and cursor is not None:
            return types.ListToolsResult(tools=[], next_cursor=cursor)
        if self.mode == "endless":
            return types.ListToolsResult(tools=[], next_cursor=self.cursor_for(index + 1))
        if self.mode == "cycle" and index == 2:
            return types.ListToolsResult(tools=[], next_cursor=self.cursor_for(1))
        last = index == len(self.pages) - 1
        return types.ListToolsResult(tools=[tool(n) for n in self.pages[index]],
                                     next_cursor=None if last else self.cursor_for(index + 1))


def build(mode: str) -> Server:
    catalog = Catalog(mode)

    async def on_list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return catalog.page(None if params is None else params.cursor)

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in catalog.callable:  # a protocol error: there is nothing to correct
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        problems = argument_problems(params.name, params.arguments or {})
        if problems:  # a tool error: the caller can read it and send better arguments
            text = f"Invalid arguments for {params.name}: " + "; ".join(problems)
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"synthetic:{params.name}")])

    return Server("course-catalog", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def main(argv: list[str]) -> int:
    p = parser("catalog", MODES)
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1 instead of stdio")
    args = p.parse_args(argv)
    if args.http:
        from course_lib.servers.modern import serve_http  # noqa: PLC0415 (only an HTTP lab needs it)

        return serve_http(build(args.mode))
    return serve(build(args.mode))
