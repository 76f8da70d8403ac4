"""What an interrupt stopped, said in one line instead of a traceback.

JupyterLab's stop button sends the kernel SIGINT. ipykernel 7 turns it into a ``CancelledError``
thrown into a cell that runs top-level ``await`` (it cancels the cell's task), and a
``KeyboardInterrupt`` into a cell that runs plain code. Either one unwinds every lab the cell had
open, and each lab's lifecycle stops its server on the way out; what reaches the top of the cell
is then a bare traceback, longer than a screen, that says nothing of the servers.

So every lab (``process.started_server``, under ``labs.connect`` and every other client) and every
grader check runs inside ``running(kind, name)``, and every process ``launch`` starts is noted in
what runs around it. When an interrupt unwinds a ``running`` block, the block is recorded as
stopped. The handler installed in an IPython kernel
(``set_custom_exc``) prints, for an interrupt that stopped course work in this cell, one line:

    Interrupted: lab `catalog --mode cycle` stopped; its server processes are gone.

after checking that they are gone (otherwise the line names the pids still running). Any other
interrupt, and every other error, keeps its normal traceback.

A grader names its check around the work it runs (its labs nest inside and are not repeated):

    with interrupts.running("check", "exercise 3: bound cursors"):
        ...   # "Interrupted: check `exercise 3: bound cursors` stopped; its server processes are gone."
"""
from __future__ import annotations

import asyncio
import contextvars
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from course_lib._runtime.portable import pid_alive

INTERRUPTS = (KeyboardInterrupt, asyncio.CancelledError)


@dataclass(eq=False)
class Activity:
    """One lab or check: what it is, and the pids of the processes started inside it."""

    kind: str
    name: str
    outer: Activity | None = None
    pids: list[int] = field(default_factory=list)
    stopped_by: int | None = None  # id() of the interrupt that unwound it (not the exception: its frames)

    @property
    def label(self) -> str:
        return f"{self.kind} `{self.name}`"


_active: contextvars.ContextVar[tuple[Activity, ...]] = contextvars.ContextVar("course_activities", default=())
_stopped: list[Activity] = []  # stopped by an interrupt since the current cell began
_KEPT = 100


@contextmanager
def running(kind: str, name: str) -> Iterator[Activity]:
    """Mark a block as course work: ``kind`` is ``"lab"`` or ``"check"``, ``name`` what a
    student recognises (``"catalog --mode cycle"``, ``"exercise 3.1"``). Blocks nest (a check's
    labs). Works in sync and async code; tasks started inside inherit the block."""
    install()
    outer = _active.get()
    activity = Activity(kind, name, outer[-1] if outer else None)
    _active.set((*outer, activity))
    try:
        yield activity
    except INTERRUPTS as exc:
        activity.stopped_by = id(exc)
        _stopped.append(activity)
        del _stopped[:-_KEPT]  # outside a kernel no cell start clears them
        raise
    finally:
        if _active.get()[-1:] == (activity,):  # not so when a block ends in another task than it began
            _active.set(outer)


def note_process(pid: int | None) -> None:
    """Record a started process in every block that runs around this call (``launch`` calls it)."""
    if pid is not None:
        for activity in _active.get():
            activity.pids.append(pid)


def summary(stopped: list[Activity]) -> str | None:
    """The one line for what an interrupt stopped, or None if it stopped no course work."""
    tops = [a for a in stopped if not _inside(a, stopped)]
    if not tops:
        return None
    names = ", ".join(a.label for a in tops)
    pids = [pid for a in stopped for pid in a.pids]
    left = sorted({pid for pid in pids if pid_alive(pid)})
    whose = "its" if len(tops) == 1 else "their"
    if left:
        return f"Interrupted: {names} stopped; still running: pid {', '.join(map(str, left))}."
    return f"Interrupted: {names} stopped; {whose} server processes are gone."


def _inside(activity: Activity, stopped: list[Activity]) -> bool:
    outer = activity.outer
    while outer is not None:
        if outer in stopped:
            return True
        outer = outer.outer
    return False


def _begin_cell(*_args) -> None:
    _stopped.clear()


def _handler(shell, etype, value, tb, tb_offset=None):
    line = None
    if isinstance(value, INTERRUPTS):
        line = summary([a for a in _stopped if a.stopped_by == id(value)])
    _stopped.clear()
    if line is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)  # as without us
    else:
        # An error output whose traceback is the one line: the cell counts as failed (Run All
        # stops there), and the line is all it shows.
        shell._showtraceback(etype, value, [line])
    return None


_installed = False


def install() -> None:
    """Install the handler in the IPython kernel this runs in, once; elsewhere do nothing."""
    global _installed
    if _installed or "IPython" not in sys.modules:
        return
    _installed = True
    shell = sys.modules["IPython"].get_ipython()
    if shell is None or shell.custom_exceptions:  # not a kernel, or someone else's handler: keep it
        return
    shell.set_custom_exc(INTERRUPTS, _handler)
    shell.events.register("pre_run_cell", _begin_cell)
