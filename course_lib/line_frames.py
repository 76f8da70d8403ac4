"""The strict line client's pipe: one JSON-RPC message a line each way, and the wait for the reply.

``LineFrames`` is the part of ``course_lib.line_client.LineClient`` that moves lines over the
server's stdin and stdout; the client holds the process, its start and its stop. A request gets the
next integer id and, in the 2026-07-28 era, the per-request ``_meta`` envelope; every message sent
is kept in ``exchanges``. Then stdout is read a line at a time (none longer than ``max_line``: else
``frame_size``) until the reply comes (``reply_timeout``: not in time, or stdout closed first). What
the server sends on its own is recorded in ``received`` (its requests answered) and skipped, and
what stays is the reply, judged by ``checker`` (``course_lib.line_checks.check_reply`` by default);
``noise`` and ``server_messages`` set what is skipped, as ``course_lib.line_client`` tells.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from course_lib.line_checks import WireError
from course_lib.protocol import (LEGACY, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
                                 MODERN_VERSION)
from course_lib._runtime.process import ServerProcess

CLIENT_INFO = {"name": "course-strict-client", "version": "1.0"}
MAX_LINE = 4 * 1024 * 1024
NOISE_POLICIES = ("fail", "skip")
SERVER_MESSAGE_POLICIES = ("record", "judge")


@dataclass
class Exchange:
    """One request (or notification) and its reply, as they crossed the pipe."""

    request: dict
    reply: dict | None = None


class LineFrames:
    """Sending and reading lines for a client that holds a started server (``_process``, ``_stdout``)."""

    # what the client holds (``LineClient``'s fields, and its process once started)
    era: str
    reply_timeout: float
    checker: Callable[[bytes, int], dict]
    exchanges: list[Exchange]
    replies_checked: int
    noise: str
    server_messages: str
    max_line: int
    received: list[dict]
    noise_lines: list[bytes]
    largest_line: int
    _next_id: int
    _process: ServerProcess | None
    _stdout: BufferedByteReceiveStream

    def _envelope(self, params: dict | None) -> dict | None:
        if self.era == LEGACY:
            return params
        meta = {META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}
        return {**(params or {}), "_meta": meta}

    async def _send(self, message: dict) -> None:
        self.exchanges.append(Exchange(message))
        try:
            await self._process.stdin.send((json.dumps(message) + "\n").encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):  # an exit: its stdout judges it
            if not await self._reaped():  # (as when the line still fitted in the pipe: a matter of timing)
                raise WireError("server_exit", f"the server stopped reading before {message.get('method')} "
                                "(still running)") from None

    async def _reaped(self) -> bool:
        with anyio.CancelScope(shield=True):  # the exit code within the reply budget, whatever cancels around
            return await self._process.wait_exit(self.reply_timeout)

    async def notify(self, method: str, params: dict | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def request(self, method: str, params: dict | None = None) -> dict:
        """Send one request and return its checked reply (``result`` or ``error`` inside)."""
        self._next_id += 1
        request_id = self._next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        params = params if method == "initialize" else self._envelope(params)
        if params is not None:
            message["params"] = params
        await self._send(message)
        with anyio.move_on_after(self.reply_timeout):
            while True:
                line = await self._read_line(request_id, method)
                if await self._server_message(line):
                    continue
                reply = self.checker(line, request_id)
                self.replies_checked += 1
                self.exchanges[-1].reply = reply
                return reply
        raise WireError("reply_timeout", f"no reply to request {request_id} ({method}) within "
                        f"{self.reply_timeout:g} s", request_id=request_id)

    async def _read_line(self, request_id: int, method: str) -> bytes:
        line, problem = None, "closed"  # no line: the server exited, and a helper may hold stdout open
        async with anyio.create_task_group() as group:
            group.start_soon(self._exit_watch, group.cancel_scope)
            try:
                line = await self._stdout.receive_until(b"\n", self.max_line)
            except (anyio.EndOfStream, anyio.IncompleteRead):
                pass
            except anyio.DelimiterNotFound:
                problem = "too large"
            group.cancel_scope.cancel()
        if line is None and problem == "closed":  # its exit code, once known, says how it ended
            await self._reaped()
            raise WireError("reply_timeout", f"the server closed stdout before replying to request "
                            f"{request_id} ({method})", request_id=request_id, returncode=self._process.returncode)
        if line is None:
            raise WireError("frame_size", f"a line from the server passed {self.max_line} bytes while "
                            f"waiting for the reply to request {request_id} ({method})",
                            request_id=request_id, limit=self.max_line)
        self.largest_line = max(self.largest_line, len(line))
        return line

    async def _exit_watch(self, scope: anyio.CancelScope) -> None:
        while self._process.returncode is None:
            await anyio.sleep(0.05)
        await anyio.sleep(0.2)  # what it wrote before exiting is still read
        scope.cancel()

    async def _server_message(self, line: bytes) -> bool:
        """Record what the server sent on its own (and answer its requests); True if it was that."""
        try:
            message = json.loads(line)
        except ValueError:
            if self.noise == "skip" and not line.lstrip().startswith((b"{", b"[")):  # a broken frame is judged
                self.noise_lines.append(line)
                return True
            return False  # the checker names it: stdout_noise
        if not isinstance(message, dict) or "method" not in message or self.server_messages == "judge":
            return False  # a reply (or something the checker rejects)
        self.received.append(message)
        if "id" in message:  # a server request: answered, so a server that waits for it goes on
            answer = ({"result": {}} if message["method"] == "ping" else
                      {"error": {"code": -32601, "message": "this client does not handle server requests"}})
            try:
                await self._process.stdin.send((json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer})
                                                + "\n").encode())
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the server is gone; the wait for the reply says so
        return True


__all__ = ["CLIENT_INFO", "Exchange", "LineFrames", "MAX_LINE", "NOISE_POLICIES", "SERVER_MESSAGE_POLICIES"]
