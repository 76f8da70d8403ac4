"""A raw session for the probes that send what no client library would: malformed frames, a death.

``async with raw_session(ctx, era) as conn`` starts the server with the course's one lifecycle
(``started_server``), does the era's opening (the 2025-11-25 handshake; nothing in 2026-07-28,
whose requests carry the envelope: ``conn.request_line``) and yields a ``RawSession``: lines sent
as they are, messages read as they come. ``era=None``: the handshake is tried, and the session
goes on whatever came back (a probe of the process, not of an era). Its processes count in ``ctx`` like every probe's.
"""
from __future__ import annotations

import json
import signal
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

import anyio

from course_lib._runtime.process import ServerProcess, started_server, wait_ready
from course_lib.audit.launch import INIT, _Lines, classify
from course_lib.audit.session import Context
from course_lib.line_client import CLIENT_INFO
from course_lib.protocol import LEGACY, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, MODERN_VERSION

SENT = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class Gone(Exception):
    """The server stopped reading or exited."""


@dataclass
class RawSession:
    process: ServerProcess
    era: str
    lines: _Lines
    seen: list = field(default_factory=list)  # every message read, in order
    budget: float = 5.0  # seconds to wait for the exit code once the server stopped reading or closed stdout

    def request_line(self, request_id, method: str, params: dict | None = None) -> bytes:
        """A well-formed request of this era (the 2026-07-28 envelope in its ``_meta``)."""
        if self.era == MODERN_VERSION:
            params = {**(params or {}), "_meta": {META_PROTOCOL_VERSION: MODERN_VERSION,
                                                  META_CLIENT_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return json.dumps(message).encode()

    async def send(self, line: bytes) -> None:
        try:
            await self.process.stdin.send(line + b"\n")
        except SENT:  # an exit still to be reaped must not read as a server that runs on
            exited = await self.process.wait_exit(self.budget)
            raise Gone(f"the server stopped reading (exit code {self.process.returncode})" if exited else
                       "the server stopped reading (still running)") from None

    async def read_until(self, done, timeout: float) -> list:
        """Messages read until ``done(message)`` is true for one of them, or ``timeout`` s pass."""
        got, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline and not self.lines.closed:
            for line in await self.lines.read(min(0.05, deadline - time.monotonic())):
                if classify(line) == "message" or line.lstrip().startswith(b"["):
                    message = json.loads(line) if classify(line) == "message" else _array(line)
                    got.append(message)
                    if done(message):
                        self.seen.extend(got)
                        return got
        self.seen.extend(got)
        if self.lines.closed:  # stdout ended: the exit code, once known, says how (not the moment it is read)
            await self.process.wait_exit(self.budget)
        return got


def _array(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def answers(request_id):
    """A predicate: the message is the reply to ``request_id``."""
    return lambda m: isinstance(m, dict) and m.get("id") == request_id and "method" not in m


@asynccontextmanager
async def raw_session(ctx: Context, era: str) -> AsyncIterator[RawSession]:
    target = ctx.target
    async with started_server(target.argv, prefix="course-audit-", fast=target.course_server, env=target.env,
                              cwd=target.cwd) as process:
        ctx.processes += 1
        try:
            if target.course_server:
                await wait_ready(process, ctx.request_timeout,
                                 on_exit=lambda p: Gone(f"the server exited with code {p.returncode} before it served"),
                                 on_timeout=lambda t: Gone(f"the server did not serve within {t:g} s"))
            conn = RawSession(process, era, _Lines(process.stdout), budget=ctx.request_timeout)
            if era in (LEGACY, None):
                await conn.send(json.dumps(INIT).encode())
                if not await conn.read_until(answers(1), ctx.request_timeout) and era is not None:
                    raise Gone("no reply to initialize")
                await conn.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            yield conn
        finally:
            with anyio.CancelScope(shield=True):  # as every probe but the exit probe: a short wait, then SIGTERM
                await _close_stdin(process)
                if not await process.wait_exit(ctx.exit_grace):
                    process.signal_group(signal.SIGTERM)
                await process.stop()
                ctx.leftovers.extend(process.swept)


async def _close_stdin(process: ServerProcess) -> None:
    try:
        await process.stdin.aclose()
    except SENT:
        pass
