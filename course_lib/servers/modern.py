"""The modern server: one low-level ``Server`` for the stateless-era (2026-07-28) labs.

A mode selects one decision each:

* ``modern``      — working tools (echo, boom, provision, forever), ``request_state`` sent in clear;
* ``sealed``      — the same tools, but ``request_state`` carries an HMAC the server verifies;
* ``era-blind``   — the same tools, but ``provision`` and ``forever`` return ``input_required`` in
  every era, without looking at the negotiated version (the SDK refuses to send it on legacy);
* ``legacy-only``, ``legacy-versions``, ``future-only``, ``renegotiate`` — how ``server/discover`` is
  refused (``DISCOVER_REFUSALS``): -32601 by a server that knows only the handshake; -32022 naming
  only handshake versions; -32022 naming only a version the client lacks; -32022 naming
  2026-07-28 for the first probe only (as to a client that proposed a version the server lacks);
* ``header-mismatch`` — the working tools, but the first ``tools/call`` is refused with -32020
  (a server whose listing the client is assumed not to have read);
* ``catalog``     — a two-page catalog that a ``bump`` tool replaces; cursors survive the change
  (every catalog entry answers a call with one line naming itself);
* ``versioned``   — the same catalog, but cursors name the catalog version and expire with it;
* ``public``      — the catalog, labelled ``cacheScope: "public"`` although it is per principal;
* ``drifting``    — ``versioned``, and the catalog changes once, right after page 1 is first served
  (another writer's update landing in the middle of a walk);
* ``churning``    — ``versioned``, and the catalog changes after *every* page 1 served.

``tools/list`` carries the cache hint ``ttlMs=60000`` in every mode. ``--principal NAME`` adds a
tool only that principal should see. ``--http`` serves Streamable HTTP on 127.0.0.1 instead of
stdio (the port is written to ``http.json`` in the lab directory, every request's routing
headers to ``headers.jsonl``); the process still ends when its stdin closes.

The refusing modes are served by ``_discover``, ``--http`` by ``_http``; this module is the entry
(``python -m course_lib.servers modern``) and the lab's listing, tools and ``request_state``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets

import mcp_types as types
from mcp import MCPError
from mcp.server import CacheHint, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from course_lib.protocol import MODERN_VERSION
from course_lib.servers._base import parser, serve
from course_lib.servers._discover import DISCOVER_REFUSALS, serve_refusing_discover
from course_lib.servers._http import serve_http

MODES = ("modern", "sealed", "era-blind", *DISCOVER_REFUSALS, "header-mismatch", "catalog", "versioned", "public", "drifting",
         "churning")
VERSIONED = ("versioned", "drifting", "churning")
CATALOG_MODES = ("catalog", "public", *VERSIONED)
TTL_MS = 60_000
OBJECT = {"type": "object"}

# The catalog of the cache labs: version -> pages. "bump" (always callable) moves to version 2.
CATALOG = {1: (("alpha", "beta"), ("gamma",)), 2: (("delta", "epsilon"), ("zeta",))}
CATALOG_ENTRIES = {name: version for version, pages in CATALOG.items() for page in pages for name in page}
WORKING_TOOLS = {
    "echo": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "boom": OBJECT,
    "provision": {"type": "object", "properties": {"size": {"enum": ["small", "large"]}}, "required": ["size"]},
    "forever": OBJECT,
}
PRICES = {"small": 10, "large": 80}
REGION_SCHEMA = {"type": "object", "properties": {"region": {"type": "string", "enum": ["eu-west", "us-east"]}},
                 "required": ["region"]}
CONFIRM_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def tool(name: str, schema: dict = OBJECT) -> types.Tool:
    return types.Tool(name=name, description=f"modern lab tool {name}", input_schema=schema)


LEGACY_INPUT = "needs the 2026-07-28 era (input_required); at 2025-11-25 ask with elicitation/create"


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def elicit(message: str, schema: dict) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


class StateCodec:
    """``request_state`` as the client sees it. Plain JSON, or JSON plus an HMAC tag.

    The tag binds the state to the call it belongs to (``{"name": ..., "arguments": ...}``), so a
    state cannot be edited, nor replayed on another call. The key is per process (a
    multi-replica deployment would share one from its secret store).
    """

    def __init__(self, sealed: bool):
        self.sealed = sealed
        self.key = secrets.token_bytes(32)

    def _tag(self, payload: str, call: dict) -> str:
        binding = json.dumps(call, sort_keys=True, separators=(",", ":"))
        return hmac.new(self.key, f"{binding}\n{payload}".encode(), hashlib.sha256).hexdigest()[:32]

    def dump(self, state: dict, binding: dict) -> str:
        payload = json.dumps(state, sort_keys=True, separators=(",", ":"))
        if not self.sealed:
            return payload
        body = base64.urlsafe_b64encode(payload.encode()).decode()
        return f"{body}.{self._tag(payload, binding)}"

    def load(self, token: str, binding: dict) -> dict:
        if self.sealed:
            body, _, tag = token.rpartition(".")
            try:
                payload = base64.urlsafe_b64decode(body.encode()).decode()
            except ValueError:
                payload = ""
            if not body or not hmac.compare_digest(tag, self._tag(payload, binding)):
                raise MCPError(types.INVALID_PARAMS, "request_state failed verification",
                               {"reason": "state_tampered"})
        else:
            payload = token
        try:
            state = json.loads(payload)
        except ValueError:
            raise MCPError(types.INVALID_PARAMS, "request_state is not readable", {"reason": "state_malformed"}) from None
        if not isinstance(state, dict):
            raise MCPError(types.INVALID_PARAMS, "request_state is not readable", {"reason": "state_malformed"})
        return state


class Modern:
    def __init__(self, mode: str, principal: str | None, codec=None):
        self.mode = mode
        self.principal = principal
        self.version = 1
        self.drifted = False
        self.mismatched = False
        self.codec = codec or StateCodec(sealed=mode == "sealed")  # any object with dump() and load()
        self.bus = InMemorySubscriptionBus()

    # -- listing ---------------------------------------------------------------------------
    def pages(self) -> tuple[tuple[str, ...], ...]:
        if self.mode in CATALOG_MODES:
            first, *rest = CATALOG[self.version]
            return (tuple(first) + ("bump",), *rest)
        return (tuple(WORKING_TOOLS),)

    def cursor(self, index: int) -> str:
        raw = f"v{self.version}/p{index}" if self.mode in VERSIONED else f"p{index}"
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def page_index(self, cursor: str | None) -> int:
        if cursor is None:
            return 0
        for index in range(1, len(self.pages())):
            if cursor == self.cursor(index):
                return index
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor: not issued for the current catalog",
                       {"reason": "expired" if self.mode in VERSIONED else "unknown"})

    def list_tools(self, cursor: str | None) -> types.ListToolsResult:
        pages = self.pages()
        index = self.page_index(cursor)
        names = list(pages[index])
        if index == 0 and self.principal:
            names.append(f"{self.principal}_inbox")
        last = index == len(pages) - 1
        result = types.ListToolsResult(tools=[tool(n, WORKING_TOOLS.get(n, OBJECT)) for n in names],
                                       next_cursor=None if last else self.cursor(index + 1))
        if index == 0 and (self.mode == "churning" or (self.mode == "drifting" and not self.drifted)):
            self.version = 3 - self.version  # the other catalog; the cursor just issued expires
            self.drifted = True
        return result

    # -- tools -----------------------------------------------------------------------------
    async def call(self, ctx, params: types.CallToolRequestParams):
        args = params.arguments or {}
        name = params.name
        if self.mode == "header-mismatch" and not self.mismatched:
            self.mismatched = True
            raise MCPError(types.HEADER_MISMATCH, f"the call of {name!r} does not match the listed tool")
        if name == "echo":
            return text(str(args.get("text", "")))
        if name == "boom":
            raise ValueError("billing database at /srv/billing.db is locked")  # an unexpected failure
        if name == "bump":
            self.version = 2
            await self.bus.publish(ToolsListChanged())  # reaches 2026-07-28 listeners only
            await ctx.session.send_tool_list_changed()  # a legacy notification (dropped at 2026-07-28)
            return text("catalog version 2")
        if name in ("provision", "forever") and ctx.protocol_version != MODERN_VERSION and self.mode != "era-blind":
            # An input_required result has no 2025-11-25 form (the SDK would fail the handler):
            # a legacy caller gets a tool error that says so, never a crash.
            return types.CallToolResult(content=[types.TextContent(type="text", text=LEGACY_INPUT)],
                                        is_error=True)
        if name == "provision":
            return self.provision(params, args)
        if name == "forever":
            return types.InputRequiredResult(input_requests={"again": elicit("Confirm once more?", CONFIRM_SCHEMA)},
                                             request_state=self.codec.dump({"step": "again"}, call_of(params)))
        if self.mode in CATALOG_MODES and name in CATALOG_ENTRIES:
            # Any version's entries: a walk can list a tool of the catalog that was just replaced.
            return text(f"{name}: entry of catalog version {CATALOG_ENTRIES[name]}")
        if self.principal and name == f"{self.principal}_inbox":
            return text(f"inbox of {self.principal}")
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")

    def provision(self, params: types.CallToolRequestParams, args: dict):
        """Round 1 asks for a region; round 2 asks to approve the price; round 3 provisions.

        The price travels in ``request_state``: the server holds nothing between rounds.
        """
        size = args.get("size")
        if size not in PRICES:
            raise MCPError(types.INVALID_PARAMS, "size must be 'small' or 'large'")
        binding = call_of(params)
        answers = params.input_responses or {}
        if params.request_state is None:
            state = {"step": "region", "size": size, "price": PRICES[size]}
            return types.InputRequiredResult(input_requests={"region": elicit("Which region?", REGION_SCHEMA)},
                                             request_state=self.codec.dump(state, binding))
        state = self.codec.load(params.request_state, binding)
        if state.get("step") == "region":
            region = _accepted(answers.get("region"), "region")
            state = {"step": "approve", "size": size, "price": state.get("price"), "region": region}
            return types.InputRequiredResult(
                input_requests={"approve": elicit(f"Approve a charge of {state['price']} credits?", CONFIRM_SCHEMA)},
                request_state=self.codec.dump(state, binding))
        if state.get("step") == "approve":
            if not _accepted(answers.get("approve"), "ok"):
                return text("not approved; nothing provisioned")
            return text(f"provisioned {state.get('size')} in {state.get('region')}, charged {state.get('price')} credits")
        raise MCPError(types.INVALID_PARAMS, "request_state names no step", {"reason": "state_malformed"})


def call_of(params: types.CallToolRequestParams) -> dict:
    """The call a ``request_state`` is issued for: the tool's name and its arguments."""
    return {"name": params.name, "arguments": params.arguments or {}}


def _accepted(response, field: str):
    content = getattr(response, "content", None) or {}
    if getattr(response, "action", None) != "accept" or field not in content:
        raise MCPError(types.INVALID_PARAMS, f"expected an accepted answer with {field!r}")
    return content[field]


def build(mode: str, principal: str | None = None, codec=None) -> Server:
    lab = Modern(mode, principal, codec)

    async def on_list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return lab.list_tools(None if params is None else params.cursor)

    scope = "public" if mode == "public" else "private"
    server = Server("course-modern", version="1.0", instructions="Stateless-era lab server.",
                    cache_hints={"tools/list": CacheHint(ttl_ms=TTL_MS, scope=scope)},
                    on_list_tools=on_list_tools, on_call_tool=lab.call,
                    on_subscriptions_listen=ListenHandler(lab.bus))
    return server


def main(argv: list[str]) -> int:
    p = parser("modern", MODES)
    p.add_argument("--principal", default=None)
    p.add_argument("--http", action="store_true")
    args = p.parse_args(argv)
    server = build(args.mode, args.principal)
    if args.http:
        return serve_http(server)
    if args.mode in DISCOVER_REFUSALS:
        return serve_refusing_discover(server, args.mode)
    return serve(server)
