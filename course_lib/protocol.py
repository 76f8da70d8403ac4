"""The protocol's vocabulary in one place: eras, versions, error codes, envelope keys, headers.

Plain constants and nothing else: this module imports no SDK, so the process launcher and the
stand-in replays can use it without paying for ``import mcp``. ``tests/inprocess/test_protocol_unit.py`` pins
every value the SDK also defines to the SDK's own constant.
"""
from __future__ import annotations

# Protocol revisions the course speaks.
LEGACY_VERSION = "2025-11-25"  # what a legacy-era handshake negotiates with the pinned SDK
MODERN_VERSION = "2026-07-28"  # the stateless revision: no handshake, a per-request envelope

# Eras, as ``connect(era=...)`` and the SDK's ``Client(mode=...)`` spell them.
LEGACY = "legacy"
AUTO = "auto"  # ``server/discover`` first, the handshake if the server does not know it
BOTH_ERAS = (LEGACY, MODERN_VERSION)  # the modern era is named by its version
ERAS = (LEGACY, MODERN_VERSION, AUTO)

# Standard JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# MCP error codes.
RESOURCE_NOT_FOUND = -32002  # 2025-11-25 and earlier; retired (never reused) at 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28: the envelope names a version the server lacks

# The course's own application-defined error (no MCP code): the snapshot server's "this revision is
# gone; reacquire the whole bundle". Outside JSON-RPC's reserved -32768..-32000, so the same in both
# eras: 2026-07-28 forbids new codes in -32000..-32019, keeps -32020..-32099 for the specification and
# retires -32002, which also means "no such resource", an answer a reader must not retry.
SNAPSHOT_UNAVAILABLE = -31001

# The SDK's own codes for what happened on the client side; never sent on the wire.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001

# The 2026-07-28 per-request envelope: keys of ``params._meta`` (and of a result's ``_meta``).
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
ENVELOPE_KEYS = (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO)

# Routing headers of a 2026-07-28 request over Streamable HTTP (lower case, as servers read them).
HEADER_PROTOCOL_VERSION = "mcp-protocol-version"
HEADER_METHOD = "mcp-method"
HEADER_NAME = "mcp-name"
ROUTING_HEADERS = (HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION)
