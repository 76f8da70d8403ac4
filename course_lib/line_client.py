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
"""
from __future__ import annotations

import json
import signal
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Callable, Sequence

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from course_lib.errors import CheckFailed, CourseError
from course_lib._runtime.process import (STDERR_LOG, ServerProcess, course_server_argv, read_rest,
                                         started_server, wait_ready)
from course_lib.protocol import (BOTH_ERAS, LEGACY, LEGACY_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO,
                                 META_PROTOCOL_VERSION, MODERN_VERSION)

PINNED_SDK = "2.3.0"
CLIENT_INFO = {"name": "course-strict-client", "version": "1.0"}
MAX_LINE = 4 * 1024 * 1024

CHECKS = ("sdk_version", "reply_timeout", "stdout_noise", "response_object", "jsonrpc_version",
          "id_type", "id_match", "result_xor_error", "server_exit", "trailing_stdout", "stderr_empty",
          "frame_size")
STDERR_POLICIES = ("fail", "info")
NOISE_POLICIES = ("fail", "skip")
SERVER_MESSAGE_POLICIES = ("record", "judge")


class WireError(CheckFailed):
    """A strict-client check failed; ``check`` is its name (one of ``CHECKS``)."""

    CHECKS = CHECKS


require = WireError.require  # an explicit check: unlike ``assert``, it is still there under ``python -O``


def check_sdk(required: str = PINNED_SDK) -> str:
    """Stop unless the installed ``mcp`` is ``required``. Returns the installed version."""
    try:
        installed = version("mcp")
    except PackageNotFoundError:
        installed = None
    require(installed == required, "sdk_version",
            f"installed mcp is {installed}, these expectations were written for mcp {required}",
            installed=installed, required=required)
    return installed


def check_reply(line: bytes, request_id: int) -> dict:
    """All envelope checks of one reply line, in order; returns the reply object."""
    try:
        reply = json.loads(line)
    except ValueError:
        raise WireError("stdout_noise", f"reply to request {request_id} is not JSON: "
                        f"{line[:60].decode('utf-8', 'replace')!r}",
                        request_id=request_id) from None
    require(isinstance(reply, dict), "response_object",
            f"reply to request {request_id} is a JSON {type(reply).__name__}, not an object",
            request_id=request_id)
    require(reply.get("jsonrpc") == "2.0", "jsonrpc_version",
            f"reply to request {request_id} has jsonrpc={reply.get('jsonrpc')!r}, not '2.0'",
            request_id=request_id)
    require(type(reply.get("id")) is int, "id_type",
            f"reply to request {request_id} has id {reply.get('id')!r} of type "
            f"{type(reply.get('id')).__name__}, not int", request_id=request_id)
    require(reply["id"] == request_id, "id_match",
            f"reply has id {reply['id']}, the request had id {request_id}", request_id=request_id)
    require(("result" in reply) != ("error" in reply), "result_xor_error",
            f"reply to request {request_id} has " +
            ("both result and error" if "result" in reply else "neither result nor error"),
            request_id=request_id)
    return reply


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
class Exchange:
    """One request (or notification) and its reply, as they crossed the pipe."""

    request: dict
    reply: dict | None = None


@dataclass
class LineClient:
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


def python_argv(*args: str, optimize: bool | None = None) -> list[str]:
    """``[sys.executable, (-O), *args]``; by default the child inherits this process's ``-O``."""
    optimize = bool(sys.flags.optimize) if optimize is None else optimize
    return [sys.executable, *(["-O"] if optimize else []), *args]


def asserts_active() -> bool:
    """False when this interpreter runs with ``-O`` (``assert`` statements are compiled away)."""
    try:
        assert False  # noqa: B011 - the point is to see whether it is there at all
    except AssertionError:
        return True
    return False


__all__ = ["CHECKS", "ExitReport", "Exchange", "LineClient", "PINNED_SDK", "WireError", "asserts_active",
           "check_reply", "check_sdk", "python_argv", "require"]
