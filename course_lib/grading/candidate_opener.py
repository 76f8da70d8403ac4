"""Chapter 03's ``open_candidate``: every candidate server the student's code opens, held by the grader.

Each ``open_candidate()`` is a handle whose ``async with`` starts the n-th candidate's server in a task of
the grader, which closes it after the row and sees whether two ran at once. ``sent`` counts the frames
sent on the active session once ``settled`` has waited for its handshake."""
from __future__ import annotations

from typing import Any

import anyio

from course_lib.errors import CourseError
from course_lib.labs import connect
from course_lib.protocol import LEGACY


class CandidateHandle:
    """What ``open_candidate()`` returns: ``async with`` it starts the candidate's server (a task of the grader)."""

    def __init__(self, opener: "CandidateOpener"):
        self._opener, self._release, self._done, self._entered = opener, anyio.Event(), anyio.Event(), False
        self.lab, self.error = None, None  # the candidate's lab once started, or why it could not start

    async def __aenter__(self):
        if self._entered:
            raise RuntimeError("each open_candidate() is entered once; call it again for another candidate")
        self._entered = True
        ready = anyio.Event()

        # The n-th candidate's server; a candidate still running when the next one opens is noted.
        fixtures = self._opener.fixtures  # the n-th candidate's fixture; the last one repeats
        options = dict(self._opener.options, fixture=fixtures[min(len(self._opener.labs), len(fixtures) - 1)])
        if any(lab.returncode is None for lab in self._opener.labs):
            self._opener.overlapped = True

        async def hold() -> None:
            try:
                async with connect(**options) as lab:
                    self.lab = lab
                    self._opener.labs.append(lab)
                    ready.set()
                    await self._release.wait()
            except Exception as exc:  # kept for __aenter__; a failure after the walk is not the student's
                self.error = exc
            finally:
                ready.set()
                self._done.set()

        self._opener.task_group.start_soon(hold)
        await ready.wait()
        if self.lab is None:
            raise self.error or CourseError("the candidate could not start", reason="launch_failed")
        return self.lab

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        await self.close()
        return False

    async def close(self) -> None:
        if self._entered:
            self._release.set()
            with anyio.CancelScope(shield=True):
                await self._done.wait()


class CandidateOpener:
    """``open_candidate``: every lab it started, and whether all of them have exited."""

    def __init__(self, task_group, *, fixtures: list, **options: Any):
        self.task_group, self.options, self.fixtures = task_group, options, fixtures
        self.overlapped = False   # a candidate opened while an earlier one still ran
        self.labs, self._handles = [], []  # every lab started; every open_candidate() handed out

    def __call__(self) -> CandidateHandle:
        handle = CandidateHandle(self)
        self._handles.append(handle)
        return handle

    @property
    def lab(self):
        return self.labs[-1] if self.labs else None

    @property
    def closed(self) -> bool:
        return bool(self.labs) and all(lab.returncode is not None for lab in self.labs)

    async def close_all(self) -> None:
        for handle in self._handles:
            await handle.close()


def sent(active) -> int:
    """Frames the client sent on the active session (what can change its schema cache)."""
    return sum(1 for f in active.wire.frames if f.direction == "→")


async def settled(active) -> None:
    """Wait for the legacy handshake's last frame (``notifications/initialized``, sent after ``connect`` returns)."""
    if active.era != LEGACY:
        return
    with anyio.move_on_after(10):
        while "notifications/initialized" not in active.wire.methods():
            await anyio.sleep(0.01)
