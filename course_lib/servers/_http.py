"""Streamable HTTP for a course server: ``--http`` of the modern, catalog, atlas and hostile servers.

The server listens on 127.0.0.1 at a port the OS picks and writes it to ``http.json`` in the lab
directory; every POST's routing headers are appended to ``headers.jsonl`` there. The process still
ends when its stdin closes, as a stdio server does.
"""
from __future__ import annotations

import json

from mcp.server import Server

from course_lib.protocol import ROUTING_HEADERS
from course_lib.servers._base import lab_file


def serve_http(server: Server) -> int:
    """Streamable HTTP on 127.0.0.1 (an OS-chosen port), until stdin closes."""
    import socket
    import sys

    import anyio
    import uvicorn

    headers_log = lab_file("headers.jsonl")

    async def record_headers(scope, receive, send, app):
        if scope["type"] == "http" and scope["method"] == "POST" and headers_log is not None:
            body = b""
            more = True
            messages = []
            while more:
                message = await receive()
                messages.append(message)
                body += message.get("body", b"")
                more = message.get("more_body", False)
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            try:
                method = json.loads(body).get("method")
            except (ValueError, AttributeError):
                method = None
            entry = {"body_method": method,
                     **{h: headers.get(h) for h in ROUTING_HEADERS}}
            with open(headers_log, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

            async def replay():
                return messages.pop(0) if messages else await receive()

            return await app(scope, replay, send)
        return await app(scope, receive, send)

    starlette_app = server.streamable_http_app(host="127.0.0.1")

    async def app(scope, receive, send):
        await record_headers(scope, receive, send, starlette_app)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))  # loopback only; the OS picks a free port
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)

    async def main() -> None:
        async def stdin_closed() -> None:
            await anyio.to_thread.run_sync(sys.stdin.buffer.read)  # returns at EOF
            http.should_exit = True

        async def announce() -> None:
            while not http.started:
                await anyio.sleep(0.01)
            port_file = lab_file("http.json")
            if port_file is not None:
                port_file.with_suffix(".tmp").write_text(json.dumps({"port": sock.getsockname()[1]}))
                port_file.with_suffix(".tmp").replace(port_file)

        async with anyio.create_task_group() as tg:
            tg.start_soon(stdin_closed)
            tg.start_soon(announce)
            await http.serve(sockets=[sock])
            tg.cancel_scope.cancel()

    anyio.run(main)
    return 0
