"""A client that dies: no polite end, its pipes simply close while a request is in flight.

A killed client closes nothing in order: the kernel closes both ends of its pipes at once, so the
server reads end of file with a request still unanswered, and its next write finds no reader.
The probe does exactly that on an era probe's process after its list walk (the legacy era's when it
is walked), or on a fresh process after the handshake (answered or not: a server of the 2026-07-28
era refuses it, and must still go), with ``tools/list`` in flight (no reply read, nothing signalled;
its end of stdout closed before the request is sent, so that the reply finds no reader however fast
the server writes it: the verdict does not depend on a race), then watches the server and
everything it started (its process group, its session, what carries its lab's mark: see
``proctree.lab_processes``) for the exit budget. What is still running then is named by its
command line; the probe's stop ends it.
"""
from __future__ import annotations

import signal
import time

import anyio

from course_lib._runtime import proctree
from course_lib.audit.launch import command_lines
from course_lib.audit.rawwire import SENT, Gone, raw_session, taken_over
from course_lib.audit.session import Context

DIED = "MUST (course: a server and what it started go when its client dies)"
POLL = 0.05  # seconds between two looks at what is still running


async def _close(process, fd: int) -> None:
    """Close the client's end of the server's pipe ``fd`` (1: stdout, 0: stdin), as the kernel does
    for a client that died.

    A fork-server lab's pipe ends are plain descriptors; a cold start's are asyncio pipe transports,
    whose stream ``aclose`` would only mark the stream ended: the transports themselves are closed
    (not the process transport, whose ``close`` would kill the server)."""
    transport = getattr(getattr(process._proc, "_process", None), "_transport", None)
    pipe = transport.get_pipe_transport(fd) if transport is not None else None
    try:
        pipe.close() if pipe is not None else await (process.stdout if fd == 1 else process.stdin).aclose()
    except SENT:
        pass
    await anyio.sleep(0)  # the transports close on the next turn of the loop


async def run(ctx: Context, report) -> tuple[str, str]:
    """``(verdict, detail)`` of the ``exit.client-died`` line (the card shows it with the exit lines)."""
    try:
        async with raw_session(ctx, None) as conn:
            return await _dies(ctx, conn)
    except Gone as exc:
        return "INFO", f"not probed: {exc}"


async def on(ctx: Context, wire, era: str) -> tuple[str, str] | None:
    """The same on the process of the probes before it (stdio: a strict client's, which sends nothing
    more), with a request of ``era`` in flight; None when that process no longer reads (a fresh one
    is probed instead). What is still running is stopped as on a process of the probe's own."""
    conn = taken_over(wire, era, ctx.request_timeout)
    try:
        return await _dies(ctx, conn)
    except Gone:
        return None
    finally:
        with anyio.CancelScope(shield=True):
            if not await conn.process.wait_exit(ctx.exit_grace):
                conn.process.signal_group(signal.SIGTERM)
            await conn.process.stop()


async def _dies(ctx: Context, conn) -> tuple[str, str]:
    method = "tools/list"
    alive: set[int] = set()
    took = 0.0
    process = conn.process
    # The client dies before the reply is written, whatever the server's speed: its end of stdout is
    # closed first (the reply finds no reader), then the request is sent and stdin closes.
    await _close(process, 1)
    await conn.send(conn.request_line("course-audit-in-flight", method))
    await _close(process, 0)
    died = time.monotonic()
    while True:
        alive = proctree.lab_processes(process.pid, process.workdir, process.started)
        took = time.monotonic() - died
        if not alive or took > ctx.exit_budget:
            break
        await anyio.sleep(POLL)
    survivors = command_lines(alive)
    if survivors:
        return "FAIL", (f"{len(survivors)} process(es) still running {ctx.exit_budget:g} s after the client died "
                        f"with {method} in flight: {'; '.join(survivors)}")
    return "PASS", f"the client died with {method} in flight: the server and all it started were gone {took:.1f} s later"
