"""A raw session for the probes that send what no client library would: malformed frames, a death.

``async with raw_session(ctx, era) as conn`` starts the server with the course's one lifecycle
(``started_server``), does the era's opening (the 2025-11-25 handshake; nothing in 2026-07-28,
whose requests carry the envelope: ``conn.request_line``) and yields a ``RawSession``: lines sent
as they are, messages read as they come. ``era=None``: the handshake is tried, and the session
goes on whatever came back (a probe of the process, not of an era). Its processes count in ``ctx`` like every probe's.
Over HTTP (``ctx.target.url``) the session is an ``HttpRawSession``: each line POSTed as it is.
"""
from __future__ import annotations

import json
import signal
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

import anyio
import httpx

from course_lib._runtime.process import ServerProcess, started_server, wait_ready
from course_lib.audit.http import Exchanger, era_request, shown
from course_lib.audit.launch import INIT, _Lines, classify
from course_lib.audit.session import Context
from course_lib.protocol import LEGACY, LEGACY_VERSION

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
        return era_request(self.era, request_id, method, params)

    def silence(self, timeout: float) -> str:
        """Why the next request got no reply, in the audit's words."""
        code = self.process.returncode
        return (f"the server exited with code {code}" if code is not None else
                f"the next request (ping) got no reply within {timeout:g} s")

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


def taken_over(wire, era: str, budget: float) -> RawSession:
    """The raw session of a strict client's process (stdio), which sends and reads nothing more: its
    stdout read from where the client left it."""
    return RawSession(wire._process, era, _Lines(wire._stdout), budget=budget)


@dataclass
class HttpRawSession:
    """The raw session over HTTP: ``send(line)`` POSTs the line as it is and waits for its answer (up
    to ``wait`` seconds: a POST that hangs goes on in the background, the next one leaves), and
    ``read_until`` reads the JSON-RPC messages of every answer, in the order the POSTs were sent."""

    url: str
    era: str
    http: httpx.AsyncClient
    group: anyio.abc.TaskGroup
    wait: float
    seen: list = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # what each POST got, in words

    def __post_init__(self):
        self._wire = Exchanger(self.url, self.era)
        self._send, self._queue = anyio.create_memory_object_stream(1000)

    def request_line(self, request_id, method: str, params: dict | None = None) -> bytes:
        return era_request(self.era, request_id, method, params)

    async def close(self) -> None:
        """End the 2025-11-25 session, if the server gave one."""
        with anyio.CancelScope(shield=True):
            await self._wire.delete(self.http)

    async def send(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        answered = anyio.Event()
        self.group.start_soon(self._one, line, message, answered)
        with anyio.move_on_after(self.wait):
            await answered.wait()

    async def _one(self, line: bytes, message, answered: anyio.Event) -> None:
        try:
            # an SSE answer is read up to its first message that is not the server's own (a reply)
            status, said, found = await self._wire.post(self.http, line, message, _not_the_servers)
        except httpx.HTTPError as exc:
            self.answers.append(f"no HTTP answer: {type(exc).__name__}")
            found = []
        else:
            self.answers.append(said)
        initialize = isinstance(message, dict) and message.get("method") == "initialize"
        for raw in found:
            try:
                got = json.loads(raw)
            except ValueError:
                self.answers[-1] += f", a body that is not JSON: {shown(raw)}"
                continue
            if initialize and isinstance(got, dict) and isinstance(got.get("result"), dict):
                self._wire.version = str(got["result"].get("protocolVersion") or LEGACY_VERSION)
            self._send.send_nowait(got)
        answered.set()

    async def read_until(self, done, timeout: float) -> list:
        got = []
        with anyio.move_on_after(timeout):
            while True:
                message = await self._queue.receive()
                got.append(message)
                if done(message):
                    break
        self.seen.extend(got)
        return got

    def silence(self, timeout: float) -> str:
        """Why the next request got no reply, in the audit's words."""
        last = self.answers[-1] if self.answers else "no answer yet"
        return f"the next request (ping) got no reply within {timeout:g} s (last HTTP answer: {last})"


def _not_the_servers(message) -> bool:
    return not (isinstance(message, dict) and "method" in message)


def _array(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def answers(request_id):
    """A predicate: the message is the reply to ``request_id``."""
    return lambda m: isinstance(m, dict) and m.get("id") == request_id and "method" not in m


@asynccontextmanager
async def raw_session(ctx: Context, era: str) -> AsyncIterator[RawSession | HttpRawSession]:
    """A raw session of ``era``: on the audited process's stdio, or over HTTP (``ctx.target.url``)."""
    opened = _http_session(ctx, era) if ctx.target.url else _stdio_session(ctx, era)
    async with opened as conn:
        if era in (LEGACY, None):
            await conn.send(json.dumps(INIT).encode())
            if not await conn.read_until(answers(1), ctx.request_timeout) and era is not None:
                raise Gone("no reply to initialize")
            await conn.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield conn


@asynccontextmanager
async def _http_session(ctx: Context, era: str) -> AsyncIterator[HttpRawSession]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=ctx.request_timeout)) as http:
        failure = None
        async with anyio.create_task_group() as group:  # the POSTs in flight, gone with the session
            conn = HttpRawSession(ctx.target.url, era or LEGACY, http, group, ctx.request_timeout)
            try:
                yield conn
            except Exception as exc:  # raised as itself, not inside the group's exception group
                failure = exc
            group.cancel_scope.cancel()
        await conn.close()
        if failure is not None:
            raise failure


@asynccontextmanager
async def _stdio_session(ctx: Context, era: str) -> AsyncIterator[RawSession]:
    target = ctx.target
    async with started_server(target.argv, prefix="course-audit-", fast=target.course_server, env=target.env,
                              cwd=target.cwd) as process:
        ctx.processes += 1
        try:
            if target.course_server:
                await wait_ready(process, ctx.request_timeout,
                                 on_exit=lambda p: Gone(f"the server exited with code {p.returncode} before it served"),
                                 on_timeout=lambda t: Gone(f"the server did not serve within {t:g} s"))
            yield RawSession(process, era, _Lines(process.stdout), budget=ctx.request_timeout)
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
