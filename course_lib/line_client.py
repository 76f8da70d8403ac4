"""A strict newline-delimited JSON-RPC client, for chapters whose subject is the envelope.

The SDK's client repairs or hides much of what a server gets wrong on the wire. This client
hides nothing: one request at a time, and every reply must pass named checks, in order:

``reply_timeout``     a reply line arrived within the budget
``stdout_noise``      the line is JSON (a banner or a log line on stdout fails here)
``response_object``   the JSON value is an object
``jsonrpc_version``   ``jsonrpc`` is exactly ``"2.0"``
``id_type``           the id is an ``int`` (``True`` is not an id, though ``True == 1``)
``id_match``          the id equals the id of the request just sent
``result_xor_error``  exactly one of ``result`` and ``error``

and when the client closes its side (stdin EOF):

``server_exit``       the server exited by itself, with code 0 (no signal was needed)
``trailing_stdout``   nothing was left on stdout after the last reply
``stderr_empty``      the server wrote nothing to stderr (``stderr="info"``: kept, not judged)

``frame_size`` fails a line longer than ``max_line`` bytes, before it is parsed.
Messages the server sends on its own (a notification such as ``notifications/message``, or a
request such as ``roots/list``) are legal at any time: they are recorded in ``received``, a
server request gets a ``-32601`` error answer (``ping`` an empty result), and the wait for the
reply goes on. Only a line without ``method`` is taken as the reply and judged
(``server_messages="judge"``: every line is, as in a replay of a recorded session). A real
third-party server's stderr log is legal too: ``stderr="info"`` keeps it in ``exit.stderr``
without failing ``stderr_empty``; ``noise="skip"`` records non-JSON stdout lines in
``noise`` instead of failing ``stdout_noise`` (the audit reports them once, itself).

``sdk_version`` runs before any process starts: the installed ``mcp`` must be the version the
caller's expectations were written for. Every check is an explicit ``if ... raise``: running
Python with ``-O`` removes ``assert`` statements, and these checks must survive it.

It is a sequential fixture client, not a general MCP client: no batches, integer ids only.
The process is started by the course's one lifecycle, ``started_server`` (explicit environment
plus ``env``, ``cwd``, own process group, and the same stop: the group, then a sweep of whatever
left it, in ``swept``); a course server (``for_server``) is first waited for with ``wait_ready``.

This module is the session: the process, the handshake and the exit checks. The checks of one
reply line and of the SDK are in ``course_lib.line_checks``, the lines on the pipe and the wait
for the reply in ``course_lib.line_frames``; their names stay importable from here.
"""
from __future__ import annotations

import signal
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Callable, Sequence

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from course_lib.errors import CourseError
from course_lib.line_checks import (CHECKS, PINNED_SDK, WireError, asserts_active, check_reply,  # noqa: F401
                                    check_sdk, python_argv, require)
from course_lib.line_frames import (CLIENT_INFO, MAX_LINE, NOISE_POLICIES, SERVER_MESSAGE_POLICIES,  # noqa: F401
                                    Exchange, LineFrames)
from course_lib._runtime.process import (STDERR_LOG, ServerProcess, course_server_argv, read_rest,
                                         started_server, wait_ready)
from course_lib.protocol import BOTH_ERAS, LEGACY, LEGACY_VERSION, MODERN_VERSION

STDERR_POLICIES = ("fail", "info")


@dataclass
class ExitReport:
    """How the server process ended after the client closed stdin."""

    returncode: int | None = None
    forced: bool = False
    trailing_stdout: int = 0
    stderr: str = ""

    @property
    def clean(self) -> bool:
        """Exit 0 by itself, nothing after the last reply, nothing on stderr."""
        return self.returncode == 0 and not self.forced and self.trailing_stdout == 0 and self.stderr == ""


@dataclass
class LineClient(LineFrames):
    """``async with LineClient(argv) as wire:`` then ``await wire.request(method, params)``."""

    argv: Sequence[str]
    era: str = LEGACY
    sdk: str = PINNED_SDK
    reply_timeout: float = 30.0  # the first reply also waits for the server to start
    exit_grace: float = 10.0  # how long the server may take to exit by itself after stdin EOF
    checker: Callable[[bytes, int], dict] = check_reply  # the envelope checks of one reply line
    exchanges: list[Exchange] = field(default_factory=list)
    replies_checked: int = 0
    exit: ExitReport | None = None
    swept: list[int] = field(default_factory=list)  # leftover processes of the server killed at the end
    fast: bool = False  # a course server's argv: may be forked by the fork server (``for_server``)
    env: dict[str, str] | None = None  # added to the explicit environment every server gets
    cwd: str | None = None  # the server's working directory (the course root by default)
    stderr: str = "fail"  # "info": a server's stderr is kept in ``exit.stderr``, not judged
    noise: str = "fail"  # "skip": non-JSON stdout lines go to ``noise_lines`` and the wait goes on
    # "record": a message the server sends on its own is recorded in ``received``, the wait goes on;
    # "judge": every line is the reply (a replay of a recorded session: each line stands where a reply stood)
    server_messages: str = "record"
    max_line: int = MAX_LINE
    received: list[dict] = field(default_factory=list)  # notifications and requests the server sent
    noise_lines: list[bytes] = field(default_factory=list)
    largest_line: int = 0  # bytes in the longest line read from stdout

    def __post_init__(self):
        if self.era not in BOTH_ERAS:
            raise ValueError(f"era must be {LEGACY!r} or {MODERN_VERSION!r}, got {self.era!r}")
        if self.stderr not in STDERR_POLICIES:
            raise ValueError(f"stderr must be one of {STDERR_POLICIES}, got {self.stderr!r}")
        if self.noise not in NOISE_POLICIES:
            raise ValueError(f"noise must be one of {NOISE_POLICIES}, got {self.noise!r}")
        if self.server_messages not in SERVER_MESSAGE_POLICIES:
            raise ValueError(f"server_messages must be one of {SERVER_MESSAGE_POLICIES}, "
                             f"got {self.server_messages!r}")
        self._next_id = 0
        self._process: ServerProcess | None = None
        self._stack: AsyncExitStack | None = None
        self._stderr_text = ""

    @classmethod
    def for_server(cls, name: str, mode: str | None = None, **options) -> "LineClient":
        """A strict client for a course server (``python -m course_lib.servers NAME``)."""
        return cls(course_server_argv(name, mode), fast=True, **options)

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        """The server's pid, once started."""
        return None if self._process is None else self._process.pid

    def _keep_stderr(self, process: ServerProcess) -> None:
        self._stderr_text = (process.workdir / STDERR_LOG).read_text(encoding="utf-8", errors="replace")

    async def __aenter__(self) -> "LineClient":
        check_sdk(self.sdk)  # before any process exists
        stack = AsyncExitStack()
        try:
            self._process = await stack.enter_async_context(started_server(
                self.argv, prefix="course-wire-", fast=self.fast, env=self.env, cwd=self.cwd,
                on_stopped=self._keep_stderr))
            self._stack = stack
            self._stdout = BufferedByteReceiveStream(self._process.stdout)
            if self.fast:  # a course server says when it serves: start-up stays out of the first reply's budget
                await wait_ready(self._process, self.reply_timeout, on_exit=self._exited_early,
                                 on_timeout=self._not_ready)
        except BaseException:
            if self._stack is None:
                await stack.aclose()
            else:
                await self._stop()
            raise
        if self.era == LEGACY:
            try:
                await self.handshake()
            except BaseException:
                await self._stop()
                raise
        return self

    @staticmethod
    def _exited_early(process: ServerProcess) -> WireError:
        return WireError("server_exit", f"the server exited with code {process.returncode} before it was ready",
                         returncode=process.returncode)

    @staticmethod
    def _not_ready(timeout: float) -> WireError:
        return WireError("reply_timeout", f"the server was not ready within {timeout:g} s")

    async def __aexit__(self, exc_type, exc, tb) -> None:
        await self.close(check=exc_type is None)

    async def handshake(self) -> dict:
        """The 2025-11-25 lifecycle: ``initialize``, then ``notifications/initialized``."""
        init = await self.request("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                                                 "clientInfo": CLIENT_INFO})
        await self.notify("notifications/initialized")
        return init

    async def result(self, method: str, params: dict | None = None) -> dict:
        """``request`` for a call that must succeed: returns the ``result`` object."""
        reply = await self.request(method, params)
        if "error" in reply:
            raise CourseError(f"{method} failed: {reply['error'].get('code')} {reply['error'].get('message')}",
                              reason="unexpected_error", error=reply["error"])
        return reply["result"]

    async def _stop(self) -> ExitReport:
        """Close stdin and wait; force the process group only if the server does not exit."""
        report = ExitReport()
        process = self._process
        with anyio.CancelScope(shield=True):
            try:
                await process.stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            exited = await process.wait_exit(self.exit_grace)
            report.forced = not exited
            if not exited:
                process.signal_group(signal.SIGTERM)
            tail = await read_rest(self._stdout, 1.0) if exited else b""
            stack, self._stack = self._stack, None
            if stack is not None:
                await stack.aclose()  # started_server: the stop (group, then sweep), the stderr log kept
            self.swept = list(process.swept)
            report.returncode = process.returncode
            report.trailing_stdout = len(tail)
            report.stderr = self._stderr_text
        self.exit = report
        return report

    async def close(self, check: bool = True) -> ExitReport:
        """End the session (stdin EOF). With ``check``, the exit checks run too."""
        if self._process is None or self.exit is not None:
            return self.exit
        report = await self._stop()
        if check:
            require(not report.forced and report.returncode == 0, "server_exit",
                    "the server did not exit by itself after stdin EOF" if report.forced
                    else f"the server exited with code {report.returncode}", returncode=report.returncode)
            require(report.trailing_stdout == 0, "trailing_stdout",
                    f"{report.trailing_stdout} bytes left on stdout after the last reply")
            require(report.stderr == "" or self.stderr == "info", "stderr_empty",
                    f"the server wrote to stderr: {report.stderr.strip()[:80]!r}")
        return report


__all__ = ["CHECKS", "ExitReport", "Exchange", "LineClient", "PINNED_SDK", "WireError", "asserts_active",
           "check_reply", "check_sdk", "python_argv", "require"]
