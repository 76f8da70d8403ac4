"""A lab that lives across a widget's clicks: an owner task holds it, a scheduler runs each click.

A connection that must live across button clicks belongs to one *owner task* (:class:`LiveLab`)
that enters **and** exits the ``async with connect(...)`` block, so the SDK's cancel scopes open
and close in the same task. A click only schedules a coroutine and returns at once
(:class:`Scheduler`); ``await scheduler.settle()`` waits for whatever the clicks scheduled.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from mcp import MCPError

from course_lib.errors import CourseError
from course_lib.lab_state import Lab
from course_lib.labs import connect

# A widget waits longer than a script: a student's machine may be busy while the server starts.
REQUEST_TIMEOUT = 30.0


class Scheduler:
    """Runs click handlers as tasks on the kernel's main event loop and remembers them.

    JupyterLab sends widget messages over a kernel subshell (its ``commsOverSubshells`` setting,
    on by default), and ipykernel 7 runs a button's callback on that subshell's own thread and
    event loop. The widget's connection lives on the main loop, where the cell that made the
    widget ran: a task started on the subshell's loop would wake the main loop's waiters with a
    plain ``call_soon`` that does not wake a sleeping loop, so each click's page would appear only
    when the next message arrived. Every task therefore starts on the loop the widget was made
    on, from whichever thread the click came, through ``call_soon_threadsafe``.
    """

    def __init__(self):
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # made outside a loop: the first click's loop becomes the widget's
        self.pending: set[asyncio.Task] = set()
        self.failures: list[BaseException] = []

    def schedule(self, coro_fn: Callable[[], Awaitable[Any]]) -> None:
        """Start ``coro_fn()`` as a task on the widget's loop; never waits for it."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        self._loop = self._loop or running
        if self._loop is None:
            raise RuntimeError("no event loop to run the widget's work on")
        if self._loop is running:
            self._start(coro_fn)
        else:
            self._loop.call_soon_threadsafe(self._start, coro_fn)

    def _start(self, coro_fn) -> None:
        task = asyncio.get_running_loop().create_task(coro_fn())
        self.pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self.pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.failures.append(task.exception())

    async def settle(self) -> None:
        """Wait until every scheduled task (and any task it scheduled) has finished."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)


class LiveLab:
    """A ``connect(...)`` lab that outlives one cell: one owner task enters and exits it.

    ``lab = await live.start()`` returns once the server is connected (or raises what
    ``connect`` raised); ``await live.stop()`` ends the block in the task that opened it.
    """

    def __init__(self, server: str = "catalog", **options):
        self.server, self.options = server, options
        self.lab: Lab | None = None
        self.error: BaseException | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def _owner(self) -> None:
        try:
            async with connect(self.server, **self.options) as lab:
                self.lab = lab
                self._ready.set()
                await self._stop.wait()
        except (CourseError, MCPError) as exc:
            self.error = exc  # e.g. LabTimeout after the lab budget: reported, not raised
        finally:
            self._ready.set()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> Lab:
        self._task = asyncio.get_running_loop().create_task(self._owner())
        await self._ready.wait()
        if self.lab is None:
            await self._task
            raise self.error or RuntimeError("the lab ended before it started")
        return self.lab

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
