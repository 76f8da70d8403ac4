"""``server/discover`` refused, as the modern server's refusing modes answer it (``DISCOVER_REFUSALS``).

A server of the handshake era answers -32601 (it has no such method); a server that knows other
versions answers -32022 with the versions it supports, for every probe or for the first only (as to
a client that proposed a version the server lacks). The rest of the traffic reaches the same
``Server``: ``course_lib.servers.modern`` picks the mode, this module serves it on stdio.
"""
from __future__ import annotations

import mcp_types as types
from mcp.server import Server

from course_lib.protocol import ENVELOPE_KEYS, MODERN_VERSION
from course_lib.servers._base import lab_file

# mode: (code, data.supported, refuse every probe (else the first only), serve the handshake only)
DISCOVER_REFUSALS = {
    "legacy-only": (types.METHOD_NOT_FOUND, None, True, True),
    "legacy-versions": (types.UNSUPPORTED_PROTOCOL_VERSION, ["2025-11-25"], True, True),
    "future-only": (types.UNSUPPORTED_PROTOCOL_VERSION, ["2099-01-01"], True, True),
    "renegotiate": (types.UNSUPPORTED_PROTOCOL_VERSION, [MODERN_VERSION], False, False),
}


def serve_refusing_discover(server: Server, mode: str) -> int:
    """Serve with ``server/discover`` refused as ``DISCOVER_REFUSALS[mode]`` says.

    A handshake-only server (a server written before 2026-07-28) also ignores the per-request
    envelope: its keys are dropped, so a request before ``initialize`` is refused as a
    pre-handshake request. Everything else reaches the same ``Server``.
    """
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    code, supported, every, handshake_only = DISCOVER_REFUSALS[mode]
    message_of = {types.METHOD_NOT_FOUND: "Method not found"}.get(code, "Unsupported protocol version")
    refused = 0

    async def main() -> None:
        nonlocal refused
        async with stdio_server() as (read, write):
            ready = lab_file("ready")
            if ready is not None:
                ready.touch()  # the same start-up signal as _base.serve()
            forward, forwarded = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def pump() -> None:
                nonlocal refused
                async with forward:
                    async for item in read:
                        message = getattr(item, "message", None)
                        if isinstance(message, types.JSONRPCRequest):
                            meta = (message.params or {}).get("_meta")
                            if message.method == "server/discover" and (every or not refused):
                                refused += 1
                                asked = meta.get(ENVELOPE_KEYS[0]) if isinstance(meta, dict) else None
                                data = None if supported is None else {"supported": supported, "requested": asked}
                                error = types.ErrorData(code=code, message=message_of, data=data)
                                await write.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id,
                                                                                   error=error)))
                                continue
                            if handshake_only and isinstance(meta, dict):
                                for key in ENVELOPE_KEYS:
                                    meta.pop(key, None)
                        await forward.send(item)

            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                await server.run(forwarded, write, server.create_initialization_options())
                tg.cancel_scope.cancel()

    anyio.run(main)
    return 0
