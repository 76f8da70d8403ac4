"""The one way a lab starts a server: ``async with connect(...) as lab``.

``connect`` launches a real stdio subprocess, puts a tap on its pipes (every JSON-RPC line
in both directions is recorded, in order), captures its stderr to a per-lab file, speaks the
chosen protocol era through the SDK's ``Client``, enforces a per-request and a whole-lab time
budget, and guarantees that the process (and its process group) is gone when the block ends.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.message import SessionMessage

from course_lib.errors import (CatalogError, CourseError, EraNotSupported, LabTimeout, LaunchError, ProtocolViolation,
                               ServerCrashed, unwrap)
from course_lib.protocol import ERAS, META_SERVER_INFO, MODERN_VERSION
from course_lib._runtime.process import (EXIT_GRACE, STDERR_LOG, TERM_GRACE, _POLL, ServerProcess,  # noqa: F401
                                         course_server_argv, launch, pid_alive)


# After the server process has exited, what it wrote before exiting is still read for this long;
# then its stdout counts as closed even if a leftover child still holds the pipe open.
EXIT_DRAIN = 0.2
NOISE_POLICIES = ("keep", "fail")
# The longest line the tap accepts from a server; a longer one ends the lab (ProtocolViolation).
MAX_FRAME_BYTES = 4 * 1024 * 1024



@dataclass
class Frame:
    """One line on the wire. ``direction`` is ``"→"`` (client to server) or ``"←"``."""

    index: int
    direction: str
    raw: str

    @cached_property
    def message(self) -> dict | None:
        """The parsed JSON object, or None when the line was not a JSON object.

        Parsed when first read: a long transcript then holds its lines as plain strings, which
        the garbage collector never has to walk.
        """
        try:
            message = json.loads(self.raw)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    @property
    def method(self) -> str | None:
        return (self.message or {}).get("method")

    @property
    def params(self) -> dict:
        return (self.message or {}).get("params") or {}

    @property
    def id(self):
        return (self.message or {}).get("id")

    @property
    def kind(self) -> str:
        m = self.message
        if m is None:
            return "noise"
        if "method" in m:
            return "request" if "id" in m else "notification"
        return "error" if "error" in m else "result"


@dataclass
class Wire:
    """The transcript of one lab: every frame in the order it crossed the pipe."""

    frames: list[Frame] = field(default_factory=list)

    def record(self, direction: str, raw: str) -> Frame:
        frame = Frame(len(self.frames), direction, raw)
        self.frames.append(frame)
        return frame

    def __iter__(self):
        return iter(self.frames)

    def __len__(self):
        return len(self.frames)

    def requests(self, method: str | None = None) -> list[Frame]:
        """Client-to-server requests, optionally of one method."""
        return [f for f in self.frames if f.direction == "→" and f.kind == "request"
                and (method is None or f.method == method)]

    def methods(self) -> list[str]:
        """The methods the client sent (requests and notifications), in order."""
        return [f.method for f in self.frames if f.direction == "→" and f.method]

    def response_to(self, request: Frame) -> Frame | None:
        for f in self.frames[request.index + 1:]:
            if f.direction == "←" and f.kind in ("result", "error") and f.id == request.id:
                return f
        return None


class Lab:
    """What a lab block sees: the client, the session, the wire, the server's stderr."""

    def __init__(self, argv: list[str], era: str, workdir: Path):
        self.argv = argv
        self.era = era
        self.workdir = workdir
        self.wire = Wire()
        self.client: Client | None = None
        self.protocol_version: str | None = None  # negotiated; kept after the lab ends
        self.pid: int | None = None
        self.returncode: int | None = None
        self.launch_path: str | None = None  # "fast" (forked by the fork server) or "cold"
        self.noise: list[str] = []  # stdout lines that were not JSON-RPC
        self._files: dict[str, str] | None = None  # workdir contents, kept after close
        self._answered = False
        self._request_budget: float | None = None
        self.noise_policy = "keep"  # "keep": record and skip them; "fail": end the lab
        self.max_frame_bytes = MAX_FRAME_BYTES
        self.violation: ProtocolViolation | None = None  # why the tap stopped reading, if it did
        self.swept: list[int] = []  # leftover processes of this lab that had to be killed
        self.forced_stop: str | None = None  # the signal the stop needed ("SIGTERM"/"SIGKILL"), if any

    @property
    def session(self):
        return self.client.session

    def _arm_request_budget(self, seconds: float) -> None:
        """Switch from the start-up budget to the per-request budget once the server has answered.

        The session reads its timeout when a request is sent, so requests sent before the
        server's first answer (a cold start) keep the start-up budget.
        """
        self._request_budget = seconds
        if self._answered:
            self.client.session._session_read_timeout_seconds = seconds

    def _first_answer(self) -> None:
        self._answered = True
        budget = self._request_budget
        if budget is not None and self.client is not None:
            self.client.session._session_read_timeout_seconds = budget

    @property
    def alive(self) -> bool:
        """Whether the server process still runs."""
        return pid_alive(self.pid)

    def file(self, name: str) -> str:
        """Text of a file the server wrote into its lab directory (readable after close too)."""
        if self._files is not None:
            if name not in self._files:
                raise FileNotFoundError(f"the server wrote no {name!r}")
            return self._files[name]
        return (self.workdir / name).read_text(encoding="utf-8")

    @property
    def stderr(self) -> str:
        try:
            return self.file(STDERR_LOG)
        except FileNotFoundError:
            return ""

    def _keep_files(self) -> None:
        files = {}
        for path in sorted(self.workdir.glob("*")):
            if path.is_file():
                files[path.name] = path.read_text(encoding="utf-8", errors="replace")
        self._files = files


@asynccontextmanager
async def _tap(lab: Lab, process: ServerProcess) -> AsyncIterator[tuple]:
    """A Transport for ``mcp.Client``: the server's pipes, with every line recorded."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    def violation(reason: str, message: str, line: str) -> None:
        shown = line if len(line) <= 60 else line[:60] + "…"
        lab.violation = ProtocolViolation(reason, f"{message}: {shown!r}", line=line)

    async def deliver(line: str) -> None:
        lab.wire.record("←", line)
        if not lab._answered:
            lab._first_answer()
        item = None
        if not line.lstrip().startswith(("{", "[")):  # a JSON object or batch starts so
            lab.noise.append(line)  # a log line, not a frame: kept, never delivered
            if lab.noise_policy == "fail":
                violation("stdout_noise", "the server wrote a line that is not JSON-RPC to stdout", line)
        else:
            try:
                item = SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except ValueError:
                # Meant as a frame but broken: whatever it answered is lost, so the lab ends
                # now with the cause instead of waiting for a request budget.
                violation("bad_frame", "the server sent a line that is not a JSON-RPC message", line)
        if item is not None:
            await read_writer.send(item)

    async def reader() -> None:
        pending: list[bytes] = []  # pieces of the line being read (no quadratic re-joining)
        size = 0
        async with read_writer:
            try:
                async for chunk in process.stdout:
                    *ends, rest = chunk.split(b"\n")
                    for piece in ends:
                        raw, pending, size = b"".join(pending) + piece, [], 0
                        if len(raw) > lab.max_frame_bytes:
                            break
                        await deliver(raw.decode("utf-8", errors="replace"))
                        if lab.violation is not None:
                            return  # closing the read side fails every pending request at once
                    else:
                        if rest:
                            pending.append(rest)
                            size += len(rest)
                        if size <= lab.max_frame_bytes:
                            continue
                    # Refused before the whole line is read or parsed: parsing a page of
                    # 100,000 tools alone takes the SDK seconds.
                    lab.violation = ProtocolViolation(
                        "frame_too_large", f"a line from the server passed the frame budget of "
                        f"{lab.max_frame_bytes} bytes", limit=lab.max_frame_bytes)
                    return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass

    async def exit_watch() -> None:
        # The end of the server is its exit, not the end of its stdout: a child it left behind
        # can hold the pipe open forever.
        while process.returncode is None:
            await anyio.sleep(0.05)
        await anyio.sleep(EXIT_DRAIN)
        try:
            await process.stdout.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def writer() -> None:
        async with write_reader:
            try:
                async for item in write_reader:
                    line = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    lab.wire.record("→", line)
                    await process.stdin.send((line + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        tg.start_soon(exit_watch)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await process.stop()
            tg.cancel_scope.cancel()


async def _wait_ready(lab: Lab, process: ServerProcess, timeout: float) -> None:
    """Wait until a course server says it is about to serve (its ``ready`` file exists).

    This keeps start-up cost out of the first request's budget in both eras.
    """
    ready = lab.workdir / "ready"
    with anyio.move_on_after(timeout):
        while not ready.exists():
            if process.returncode is not None:
                lab.returncode = process.returncode
                raise ServerCrashed(f"before it was ready: {_describe_exit(lab)}", returncode=process.returncode)
            await anyio.sleep(_POLL)
        return
    raise LabTimeout(f"the server was not ready within the {timeout:g} s start-up budget", budget="startup")


def _describe_exit(lab: Lab) -> str:
    last = [ln for ln in lab.stderr.splitlines() if ln.strip()]
    tail = f": {last[-1].strip()}" if last else ""
    if lab.forced_stop is not None:
        return (f"server was stopped by force ({lab.forced_stop}): it did not exit after its stdin closed "
                f"(code {lab.returncode}){tail}")
    return f"server exited with code {lab.returncode}{tail}"


# What a server without the 2026-07-28 era answers to its envelope: invalid request, unsupported version,
# or an internal error (server-everything 2025.12.18 serves the request before any handshake and fails).
_ERA_REFUSALS = (types.INVALID_REQUEST, -32022, types.INTERNAL_ERROR)


def _era_unsupported(lab: Lab, cause: BaseException) -> EraNotSupported | None:
    """A 2026-07-28 lab whose very first request failed, from a server that never answered as a
    2026-07-28 server does (every result stamped with its serverInfo): the era, not the request."""
    if lab.era != MODERN_VERSION:
        return None
    sent = [f for f in lab.wire.frames if f.direction == "→" and f.kind == "request"]
    answers = [f for f in lab.wire.frames if f.direction == "←" and f.kind in ("result", "error")]
    if len(sent) != 1 or len(answers) != 1:
        return None
    result = (answers[0].message or {}).get("result")
    if isinstance(result, dict) and META_SERVER_INFO in (result.get("_meta") or {}):
        return None
    if isinstance(cause, MCPError) and (cause.error.code in _ERA_REFUSALS or (
            cause.error.code == types.INVALID_PARAMS and not isinstance(cause.error.data, dict))):
        # -32602 with a dict in data (a cursor, a URI) is the server judging the request, not the era
        answer = f"{cause.error.code} {cause.error.message}"
    elif (isinstance(cause, CatalogError) and cause.reason == "bad_page") or type(cause).__name__ == "ValidationError":
        answer = f"a result without the 2026-07-28 fields ({str(cause).splitlines()[0][:80]})"
    else:
        return None
    message = (f"the server does not seem to speak {MODERN_VERSION}: it answered the first request of that era "
               f"with {answer}, and never as a {MODERN_VERSION} server does (connect with era='auto' to fall back "
               "to the handshake)")
    if isinstance(cause, MCPError):
        return EraRefused(message, cause.error, era=MODERN_VERSION, answer=answer)
    return EraNotSupported(message, era=MODERN_VERSION, answer=answer)


class EraRefused(EraNotSupported, MCPError):
    """``EraNotSupported`` whose answer was an error: still an ``MCPError`` (``.error`` is that answer),
    so code that caught the bare error keeps catching it."""

    def __init__(self, message: str, error: types.ErrorData, **details):
        Exception.__init__(self, message)
        self.details, self.error = details, error

    def __str__(self) -> str:  # MCPError's would be the bare answer
        return self.args[0]


def _translate(exc: BaseException, lab: Lab, request_timeout: float, lab_timeout: float) -> BaseException:
    """Map what escaped the SDK's task groups to one typed, one-line error."""
    cause = unwrap(exc)
    if lab.violation is not None and (isinstance(cause, BaseExceptionGroup) or (
            isinstance(cause, MCPError) and cause.error.code == types.CONNECTION_CLOSED)):
        return lab.violation  # the tap closed the connection because of this line
    if isinstance(cause, BaseExceptionGroup):
        return cause
    unsupported = _era_unsupported(lab, cause)
    if unsupported is not None:
        return unsupported
    if isinstance(cause, MCPError) and cause.error.code == types.REQUEST_TIMEOUT:
        return LabTimeout(f"no answer within the {request_timeout:g} s request budget ({cause.error.message})",
                          budget="request")
    if isinstance(cause, MCPError) and cause.error.code == types.CONNECTION_CLOSED:
        if lab.returncode is not None:
            return ServerCrashed(_describe_exit(lab), returncode=lab.returncode)
        return ServerCrashed("the server closed its stdout without exiting", returncode=None)
    if isinstance(cause, TimeoutError) and not isinstance(cause, CourseError):
        return LabTimeout(f"the lab ran past its {lab_timeout:g} s budget", budget="lab")
    return cause


@asynccontextmanager
async def connect(server: str | Sequence[str], *, mode: str | None = None, era: str = "legacy",
                  fixture: str | os.PathLike | None = None, args: Sequence[str] = (),
                  env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
                  request_timeout: float = 10.0, lab_timeout: float = 60.0, startup_timeout: float = 30.0,
                  noise: str = "keep", max_frame_bytes: int = MAX_FRAME_BYTES,
                  **client_options: Any) -> AsyncIterator[Lab]:
    """Start ``server`` on a real stdio subprocess and connect in ``era``.

    ``server`` is a course server name (``"catalog"``) or a full argv list for any other
    server (a student's script, a Node server). ``mode``/``fixture``/``args`` select a
    course server's behaviour. ``era`` is ``"legacy"`` (2025-11-25 initialize handshake),
    ``"2026-07-28"`` (stateless, per-request envelope) or ``"auto"``. Extra keyword
    arguments go to ``mcp.Client`` (``cache=``, ``elicitation_callback=`` ...).

    Budgets: the server's first answer may take up to ``startup_timeout`` (a cold start imports
    the SDK); every later request gets ``request_timeout``; the whole block ``lab_timeout``.

    Hostile servers: ``noise`` is what a non-JSON line on the server's stdout does (``"keep"``
    records it in ``lab.noise`` and skips it, ``"fail"`` ends the lab with ``ProtocolViolation``);
    a line that starts like a frame but is not valid JSON-RPC, or one longer than
    ``max_frame_bytes``, always ends the lab with ``ProtocolViolation``. The server's exit ends
    the lab even if a child still holds its stdout open, and whatever the server leaves behind
    (children in its group or in new sessions) is killed when the block ends (``lab.swept``).
    """
    if era not in ERAS:
        raise ValueError(f"era must be one of {ERAS}, got {era!r}")
    if noise not in NOISE_POLICIES:
        raise ValueError(f"noise must be one of {NOISE_POLICIES}, got {noise!r}")
    if isinstance(server, str):
        from course_lib import servers

        if server not in servers.names():
            raise LaunchError(f"no course server named {server!r}; known: {', '.join(servers.names())}")
        argv = course_server_argv(server, mode, fixture, args)
    else:
        argv = [str(a) for a in server] + list(args)
        if not argv:
            raise ValueError("server argv is empty")
    workdir = Path(tempfile.mkdtemp(prefix="course-lab-"))
    lab = Lab(argv, era, workdir)
    lab.noise_policy, lab.max_frame_bytes = noise, max_frame_bytes
    process: ServerProcess | None = None
    try:
        try:
            with anyio.fail_after(lab_timeout):
                process = await launch(argv, workdir, fast=isinstance(server, str), env=env, cwd=cwd)
                lab.pid = process.pid
                lab.launch_path = process.launch_path
                if isinstance(server, str):
                    await _wait_ready(lab, process, startup_timeout)
                client = Client(_tap(lab, process), mode=era, read_timeout_seconds=startup_timeout,
                                **client_options)
                async with client:
                    lab.client = client
                    lab.protocol_version = client.protocol_version
                    lab._arm_request_budget(request_timeout)
                    yield lab
        except BaseException as exc:
            if process is not None:
                await process.stop()
                lab.returncode, lab.forced_stop = process.returncode, process.forced
            translated = _translate(exc, lab, request_timeout, lab_timeout)
            if translated is exc:
                raise
            raise translated from None
    finally:
        if process is not None:
            lab.swept = list(await process.stop())
            lab.returncode, lab.forced_stop = process.returncode, process.forced
        lab._keep_files()
        shutil.rmtree(workdir, ignore_errors=True)
