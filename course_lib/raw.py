"""Hand-written JSON-RPC lines to a server, for frames the SDK client never sends.

``async with raw_lines("modern") as pipe:`` starts a course server exactly as ``connect`` does
(same argv, environment and stderr file; the one lifecycle, ``started_server``: the process
group, then a sweep of what left it, in ``pipe.swept``) but hands the lab a bare pipe. Any other
command line works too (``raw_lines([node, "server.js"], env=..., cwd=...)``): only a course server
is waited for (``wait_ready``); any other server's start-up is the first request's to wait for.
``await pipe.request(method, params)`` writes one line and returns the answer to its id;
``await pipe.notify(method)`` writes a notification; ``await pipe.silence()`` counts what
arrives in a short window. Every line is recorded in ``pipe.wire`` (a ``wire.Wire``), so
``display.wire_table`` shows it like any lab. It is deliberately small: no retries, no
validation, no SDK types; the point is to see what the server answers to exactly these bytes.
"""
from __future__ import annotations

import json
import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Sequence

import anyio

from course_lib.errors import LabTimeout
from course_lib.wire import Wire
from course_lib._runtime.process import ServerProcess, course_server_argv, started_server, wait_ready
from course_lib.protocol import (LEGACY_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
                                 MODERN_VERSION)

CLIENT_INFO = {"name": "course-raw", "version": "1.0"}


def envelope(version: str = MODERN_VERSION, *, capabilities: dict | None = None) -> dict:
    """The per-request ``_meta`` envelope of the 2026-07-28 era."""
    return {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: capabilities or {}, META_CLIENT_INFO: CLIENT_INFO}


def enveloped(params: dict | None = None, version: str = MODERN_VERSION) -> dict:
    """``params`` with the envelope added under ``_meta``."""
    return {**(params or {}), "_meta": envelope(version)}


INITIALIZE = {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}


class RawPipe:
    """One server process and the lines exchanged with it."""

    def __init__(self, process: ServerProcess, timeout: float):
        self._process = process
        self.timeout = timeout
        self.wire = Wire()
        self.pid = process.pid
        self.returncode: int | None = None  # set when the block ends
        self.swept: list[int] = []  # leftover processes of the server that had to be killed (set then too)
        self._next_id = 1
        self._buffer = b""
        self._pending: list[dict] = []  # frames read while waiting for another id

    async def send(self, message: dict) -> None:
        line = json.dumps(message, separators=(",", ":"))
        self.wire.record("→", line)
        await self._process.stdin.send((line + "\n").encode())

    async def _read_frame(self) -> dict | None:
        while b"\n" not in self._buffer:
            try:
                chunk = await self._process.stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return None
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        frame = self.wire.record("←", raw.decode("utf-8", errors="replace"))
        return frame.message if frame.message is not None else {}

    async def request(self, method: str, params: dict | None = None) -> dict:
        """Send one request; return the response (``{"result": ...}`` or ``{"error": ...}``)."""
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        for frame in list(self._pending):
            if frame.get("id") == request_id:
                self._pending.remove(frame)
                return frame
        with anyio.move_on_after(self.timeout):
            while True:
                frame = await self._read_frame()
                if frame is None:
                    raise LabTimeout("the server closed its stdout before answering", budget="request")
                if frame.get("id") == request_id and "method" not in frame:
                    return frame
                self._pending.append(frame)
        raise LabTimeout(f"no answer to {method!r} within {self.timeout:g} s", budget="request")

    async def notify(self, method: str, params: dict | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def silence(self, window: float = 0.5) -> list[dict]:
        """Frames that arrive within ``window`` seconds (a notification should get none)."""
        got: list[dict] = []
        with anyio.move_on_after(window):
            while True:
                frame = await self._read_frame()
                if frame is None:
                    break
                got.append(frame)
        self._pending.extend(got)
        return got

    async def handshake(self) -> dict:
        """The legacy ``initialize`` + ``notifications/initialized`` pair."""
        answer = await self.request("initialize", INITIALIZE)
        await self.notify("notifications/initialized")
        return answer


@asynccontextmanager
async def raw_lines(server: str | Sequence[str], *, mode: str | None = None, args: tuple[str, ...] = (),
                    env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
                    timeout: float = 30.0, lab_timeout: float = 90.0) -> AsyncIterator[RawPipe]:
    """Start ``server`` (a course server's name, or any argv) and yield a ``RawPipe``; the process
    and its group are gone afterwards."""
    course = isinstance(server, str)
    argv = course_server_argv(server, mode, None, args) if course else [str(a) for a in server] + list(args)
    with anyio.fail_after(lab_timeout):
        async with started_server(argv, prefix="course-raw-", fast=course, env=env, cwd=cwd) as process:
            if course:
                await wait_ready(process, timeout, on_exit=_exited, on_timeout=_not_ready)
            pipe = RawPipe(process, timeout)
            try:
                yield pipe
            finally:
                pipe.swept = list(await process.stop())
                pipe.returncode = process.returncode


def _exited(process: ServerProcess) -> LabTimeout:
    return LabTimeout(f"the server exited with code {process.returncode} before it was ready", budget="startup")


def _not_ready(timeout: float) -> LabTimeout:
    return LabTimeout(f"the server was not ready within {timeout:g} s", budget="startup")


def error_of(answer: dict) -> tuple[int, str, Any] | None:
    """``(code, message, data)`` of an error answer, or None for a result."""
    error = answer.get("error")
    if error is None:
        return None
    return error.get("code"), error.get("message"), error.get("data")
