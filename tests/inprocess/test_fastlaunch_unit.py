"""In-process: the checks of tests/stdio/test_fastlaunch.py's subject that start no process."""
import os
import socket
import sys

import anyio
import pytest

from course_lib import LaunchError, connect
from course_lib._runtime import fastlaunch
from course_lib.paths import ROOT

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def fast_path_on(monkeypatch):
    """These tests are about the fast path: it is on for them even in a run that switched it off."""
    monkeypatch.setenv(fastlaunch.SWITCH, "1")


async def test_a_missing_server_fails_before_any_fork():
    with pytest.raises(LaunchError, match="no course server named"):
        async with connect("nope"):
            pass


async def test_closing_a_pipe_another_task_waits_on_leaves_no_stale_wait_behind():
    """A lab's stdout reader waits in its own task; the lab closes the pipe from another. The
    next file that gets the same fd number must still wake its own waiter."""
    r, w = os.pipe()
    reader = fastlaunch._Pipe(r)
    closed = []

    async def read():
        try:
            await reader.receive()
        except anyio.ClosedResourceError:
            closed.append(True)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()  # the reader now waits on the fd
            await reader.aclose()
            first, second = socket.socketpair()
            with first, second:
                reused, other = (first, second) if first.fileno() == r else (second, first)
                assert reused.fileno() == r  # the new socket took the closed pipe's number
                other.send(b"x")
                with anyio.fail_after(10):
                    await anyio.wait_readable(reused)
    finally:
        os.close(w)
    assert closed == [True]  # and the reader was told its pipe is closed


def test_another_environment_on_the_same_base_program_is_not_this_interpreter():
    from course_lib._runtime import process

    other = ROOT / ".venv-sdk129" / "bin" / "python"  # virtual environments share their base's program
    assert os.path.realpath(other) == os.path.realpath(sys.executable)
    assert not process.this_interpreter(str(other)) and process.this_interpreter(sys.executable)
