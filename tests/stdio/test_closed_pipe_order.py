"""A server that exits at once gets one verdict, whichever end of its pipes the client notices first.

Which end comes first is a matter of timing: the client's request may still fit in the pipe (then
stdout ends while it waits for the reply) or find it unread (the server has gone; the write fails).
Here the second order is made certain: the request is written only once the server has exited.
The verdict must be the one of the first order (``closed_pipe`` with the exit code), never a
server that "stopped reading" with no exit code yet.
"""
import sys

import anyio
import psutil
import pytest

from course_lib.audit.rawwire import Gone, raw_session
from course_lib.audit.session import Context, ProbeFailed, Target, probe
from course_lib.line_client import LineClient, WireError
from course_lib.protocol import MODERN_VERSION

pytestmark = pytest.mark.anyio

EXITS = [sys.executable, "-c", "import sys; sys.exit(3)"]  # exits with code 3 before reading anything


async def gone(pid: int) -> None:
    """Until the process ``pid`` has exited (a zombie not yet reaped, or reaped)."""
    with anyio.fail_after(30):
        while True:
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    return
            except psutil.NoSuchProcess:
                return
            await anyio.sleep(0.01)


def context() -> Context:
    return Context(Target(list(EXITS)), budget=30, request_timeout=10)


async def test_the_strict_client_reads_the_end_of_stdout_and_the_exit_code():
    with pytest.raises(WireError) as caught:
        async with LineClient(EXITS, era=MODERN_VERSION, stderr="info", reply_timeout=10, exit_grace=5) as wire:
            await gone(wire.pid)
            await wire.request("server/discover", {})
    assert (caught.value.check, caught.value.details.get("returncode")) == ("reply_timeout", 3)
    assert caught.value.message == "the server closed stdout before replying to request 1 (server/discover)"


async def test_an_audit_probe_says_closed_pipe_with_the_exit_code():
    with pytest.raises(ProbeFailed) as caught:
        async with probe(context(), MODERN_VERSION) as wire:
            await gone(wire.pid)
            await wire.request("server/discover", {})
    assert caught.value.check == "closed_pipe"
    assert caught.value.message == ("the server exited with code 3, its stdout closed, before replying to "
                                    "request 1 (server/discover)")


async def test_the_raw_session_names_the_exit_code_of_a_server_that_stopped_reading():
    with pytest.raises(Gone) as caught:
        async with raw_session(context(), MODERN_VERSION) as conn:
            await gone(conn.process.pid)
            await conn.send(conn.request_line(1, "server/discover"))
    assert str(caught.value) == "the server stopped reading (exit code 3)"
