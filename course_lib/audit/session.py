"""What every probe shares: the command under audit, one strict session per probe, its budget.

A probe is one server process: ``async with probe(target, era, ctx) as wire`` starts it with the
strict line client (``LineClient``: the course's one lifecycle, ``started_server``, underneath;
over HTTP, ``target.url``, it is one session of ``HttpClient``, which has the same interface),
with real-server rules (stderr is information, non-JSON stdout lines are recorded, not fatal:
the launch probe judges those once). Whatever the session saw that every probe judges the same
way — envelope faults, messages the server sent on its own, forced stops, leftovers — is kept in
``ctx`` for the envelope and exit lines.
"""
from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable, Sequence

import anyio

from course_lib._runtime.process import this_interpreter
from course_lib.audit.http import HttpClient
from course_lib.errors import CourseError
from course_lib.line_checks import WireError
from course_lib.line_client import LineClient

# Checks of the strict client that judge a reply's envelope (the others judge the process).
ENVELOPE_CHECKS = ("stdout_noise", "response_object", "jsonrpc_version", "id_type", "id_match",
                   "result_xor_error")
PROBE_ENDED = "MUST (spec: lifecycle, a server answers until its stdin closes)"
# Seconds a server may take to exit by itself, after stdin EOF or after its client died: as long as
# the official SDK's stdio client waits after closing stdin before it stops the server (mcp.client.stdio)
EXIT_BUDGET = 2.0
NOT_SUPPORTED_CODES = (-32600, -32601, -32602, -32022)  # what an era's first request gets from a server without it


@dataclass
class Target:
    """The command under audit, as the probes start it; or the URL of a Streamable HTTP server."""

    argv: list[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None  # the probes POST their frames here; nothing is started

    @property
    def course_server(self) -> bool:
        """``python -m course_lib.servers ...`` on this interpreter: the fork server may start it."""
        argv = self.argv
        return self.url is None and len(argv) >= 3 and argv[1:3] == ["-m", "course_lib.servers"] and this_interpreter(argv[0])


@dataclass
class Context:
    """What the probes of one audit share."""

    target: Target
    budget: float  # seconds per probe
    request_timeout: float
    exit_grace: float = 0.5  # a probe that is not the exit probe does not wait long for the exit
    processes: int = 0
    replies: int = 0
    envelope_faults: list[tuple[str, str, str]] = field(default_factory=list)  # (era, check, message)
    received: list[tuple[str, dict]] = field(default_factory=list)  # (era, notification or request)
    forced: int = 0
    leftovers: list[int] = field(default_factory=list)  # processes a stop's sweep had to kill
    outlived: list[str] = field(default_factory=list)  # what was still running when the server had exited by itself
    exit_budget: float = EXIT_BUDGET  # how long the server may take to exit by itself
    noise: list[bytes] = field(default_factory=list)  # non-JSON stdout lines, from every probe
    oversized: list[int] = field(default_factory=list)  # frame budgets that a line passed
    eras_seen: dict = field(default_factory=dict)  # era -> the protocol version it answered with
    lists: dict = field(default_factory=dict)  # era -> {kind: walk.Listing}, from the list probe
    capabilities: dict = field(default_factory=dict)  # era -> the server's capabilities
    late: float | None = None  # seconds the first reply took, when past the request budget
    frames: list[tuple[str, str | None, dict]] = field(default_factory=list)  # (era, method, frame) read by a probe


class ProbeFailed(Exception):
    """A probe ended early; ``check`` and ``message`` say why (its line says so)."""

    def __init__(self, check: str, message: str):
        super().__init__(message)
        self.check, self.message = check, message


@asynccontextmanager
async def probe(ctx: Context, era: str, *, exit_grace: float | None = None,
                budget: float | None = None) -> AsyncIterator[LineClient | HttpClient]:
    """One strict session in ``era`` (the legacy handshake already done); a fault becomes ``ProbeFailed``.
    ``budget``: seconds for the whole session (the probe budget by default)."""
    budget = ctx.budget if budget is None else budget
    target = ctx.target
    wire = HttpClient(target.url, era=era, reply_timeout=ctx.request_timeout) if target.url else \
        LineClient(target.argv, era=era, env=target.env, cwd=target.cwd, fast=target.course_server, stderr="info",
                   noise="skip", reply_timeout=ctx.request_timeout,
                   exit_grace=ctx.exit_grace if exit_grace is None else exit_grace)
    try:
        with anyio.move_on_after(budget) as scope:
            wire.probe_scope = scope  # ``more_time`` gives a second probe on this session its own budget
            try:
                await wire.__aenter__()
                try:
                    yield wire
                finally:
                    await wire.close(check=False)  # the exit is the exit probe's to judge
            except WireError as exc:
                if exc.check == "frame_size":
                    ctx.oversized.append(wire.max_line)
                if exc.check in ENVELOPE_CHECKS:
                    ctx.envelope_faults.append((era, exc.check, exc.message))
                if exc.check == "reply_timeout" and "closed stdout" in exc.message:  # not a timeout: it ended
                    code = exc.details.get("returncode")
                    raise ProbeFailed("closed_pipe", exc.message.replace("the server closed stdout", (
                        f"the server exited with code {code}, its stdout closed," if code is not None else
                        "the server closed stdout"))) from None
                raise ProbeFailed(exc.check, exc.message) from None
            except CourseError as exc:
                raise ProbeFailed(exc.reason, str(exc)) from None
        if scope.cancelled_caught:
            raise ProbeFailed("budget", f"the probe found no verdict within its {budget:g} s budget")
    finally:
        ctx.processes += wire.started
        ctx.replies += wire.replies_checked
        ctx.received.extend((era, message) for message in wire.received)
        ctx.frames.extend([(era, exchange.request.get("method"), exchange.reply) for exchange in wire.exchanges
                           if exchange.reply is not None] + [(era, None, message) for message in wire.received])
        ctx.noise.extend(wire.noise_lines)
        if wire.exit is not None and wire.exit.forced:
            ctx.forced += 1
        ctx.leftovers.extend(wire.swept)


def more_time(wire, seconds: float) -> None:
    """Another probe goes on on ``wire``'s session: its budget grows by ``seconds``."""
    wire.probe_scope.deadline = max(wire.probe_scope.deadline, anyio.current_time() + seconds)


@dataclass
class Work:
    """What one probe does on a session: ``body(wire, report)``; ``subject`` and ``where()`` name it
    on the ``probe.ended`` line when its session ends early."""

    subject: str
    body: Callable[[LineClient, object], Awaitable[None]]
    where: Callable[[], str] = lambda: ""
    budget: float | None = None  # seconds, when not the probe budget


async def in_sessions(ctx: Context, era: str, report, works: list[Work | None], last: Work | None = None,
                      ready: Callable[[], Awaitable[list[Work | None] | None]] | None = None) -> bool | None:
    """The ``works`` one after another on one server process (a probe that needs no fresh one reuses
    it); after a work whose session ended early, the next starts a fresh process. Each work has the
    probe budget. ``last``: a probe that goes on on the process once every work is done, with a budget
    of its own (``last.budget``); True if it did (False: no process was left to it).
    ``ready``: the first process starts at once, and the works are what ``ready()`` returns once it
    may go on (None: nothing to do, the process ends unused, and so does this, returning None); a
    process that ends before its works begin leaves them a fresh one."""
    pending = None if ready else [work for work in works if work is not None]
    while pending is None or pending:
        try:
            async with probe(ctx, era, budget=ctx.budget * max(len(pending or ()), 2)) as wire:
                if pending is None:
                    pending = await _ready(ready)
                    if pending is None:
                        return None
                    more_time(wire, ctx.budget * len(pending))
                while pending:
                    await pending[0].body(wire, report)
                    pending.pop(0)
                if last is not None:
                    more_time(wire, last.budget or ctx.budget)
                    pending.append(last)
                    await last.body(wire, report)
                    return True
        except ProbeFailed as exc:
            if pending is None:  # the early process ended before its works began
                pending = await _ready(ready)
                if pending is None:
                    return None
                continue
            work = pending.pop(0)
            report.add("probe.ended", "FAIL", PROBE_ENDED, era, f"{work.where()}{exc.check}: {exc.message}",
                       work.subject)
            if work is last:
                return True
    return False


async def _ready(ready) -> list[Work] | None:
    works = await ready()
    return None if works is None else [work for work in works if work is not None]


def error_of(reply: dict) -> dict | None:
    """The ``error`` object of a reply, or None for a result."""
    error = reply.get("error")
    return error if isinstance(error, dict) else ({"code": None, "message": repr(error)} if error is not None else None)


def describe_error(error: dict) -> str:
    message = str(error.get("message", "")).replace("\n", " ")
    message = " ".join(message.split())
    return f"{error.get('code')} {message[:60]}{'…' if len(message) > 60 else ''}"

