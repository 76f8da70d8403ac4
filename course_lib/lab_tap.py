"""The tap on a lab's pipes: the Transport ``mcp.Client`` speaks through, recording every line.

Lines from the server are checked before the SDK sees them: a line that is not JSON-RPC is kept
as noise (or ends the lab), a broken frame or one past the frame budget ends the lab with
``ProtocolViolation``. The server's exit, not the end of its stdout, ends the reading.
"""
from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

from course_lib.errors import ProtocolViolation
from course_lib.lab_state import Lab
from course_lib._runtime.process import ServerProcess

# After the server process has exited, what it wrote before exiting is still read for this long;
# then its stdout counts as closed even if a leftover child still holds the pipe open.
EXIT_DRAIN = 0.2


@asynccontextmanager
async def tap(lab: Lab, process: ServerProcess) -> AsyncIterator[tuple]:
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
