"""The one runner: open a battery's labs, call the student's code under its budget, judge.

Per scenario ``run_battery`` starts a real stdio server through ``connect``, lets ``prepare``
set it up (outside the budget), calls the student's code with ``observe`` and hands the typed
``Outcome`` (with the requests the call put on the wire in ``sent``, and ``lab`` in ``state``)
to the exercise's ``judge``. A lab that fails is a ``LAB_FAILED`` outcome, never the student's.
"""
from __future__ import annotations

import os
import signal
from contextvars import ContextVar
from functools import partial
from typing import Any, Awaitable, Callable

import anyio
import psutil

from course_lib._runtime import interrupts
from course_lib.errors import CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario
from course_lib.grading.budget import ahead, observe
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import gather

Judge = Callable[[Scenario, o.Outcome], Verdict]
# Set by a caller that needs only "does it fail?" (the test that no function a chapter shows passes
# its exercise): the first failing verdict cancels the scenarios still running, and the card holds
# the verdicts that finished. A card without a failure is the whole card, as without it.
FAIL_FAST: ContextVar[bool] = ContextVar("course_grading_fail_fast", default=False)
# Set by ``make record`` (``course_lib.tooling.record``): called with every row as its judge gets it.
RECORDER: ContextVar[Callable[[Scenario, o.Outcome], None] | None] = ContextVar("course_recorder", default=None)


def lab_servers() -> set[int]:
    """Course servers below this process (``connect`` marks them ``COURSE_LAB_SERVER=1``)."""
    found = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.environ().get("COURSE_LAB_SERVER") == "1" and "fastlaunch" not in " ".join(proc.cmdline()):
                found.add(proc.pid)
        except psutil.Error:
            continue
    return found


def stop_leftovers(before: set[int]) -> int:
    """Stop the course servers started since ``before`` that are still alive: what the student's
    code opened and never closed. Returns how many there were."""
    left = lab_servers() - before
    for pid in left:
        try:
            os.killpg(pid, signal.SIGKILL)  # each server leads a process group of its own
        except (ProcessLookupError, PermissionError):
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
    for pid in left:
        try:
            psutil.Process(pid).wait(timeout=5)
        except psutil.Error:
            pass
    return len(left)


def lab_verdict(s: Scenario, outcome: o.Outcome) -> Verdict:
    return Verdict(s, False, o.describe(outcome), o.LAB, outcome)


async def run_battery(title: str, scenarios: list[Scenario], budget: float,
                      call: Callable[[Scenario, Any], Awaitable[Any]], judge: Judge, *,
                      prepare: Callable[[Scenario, Any], Awaitable[None]] | None = None,
                      battery: str = "", show_budget: bool = True, **connect_options) -> Scorecard:
    """One real lab per scenario; the verdicts in battery order, on one card."""
    # A call stopped by the watchdog held the event loop: requests of other labs waited with it.
    connect_options.setdefault("request_timeout", budget + 30)

    async def run(s: Scenario) -> Verdict:
        try:
            async with connect(s.server, mode=s.mode, era=s.era, args=s.args, lab_timeout=budget * 2 + 60,
                               **connect_options) as lab:
                if prepare is not None:
                    await prepare(s, lab)
                before = len(lab.wire.requests())
                outcome = await observe(lambda: call(s, lab), budget)
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return lab_verdict(s, o.lab_failed(exc))
        outcome = outcome.with_wire(lab.wire.requests()[before:], wire=lab.wire)
        if RECORDER.get() is not None:
            RECORDER.get()(s, outcome)
        return judge(s, outcome)

    before = lab_servers()
    with ahead([budget] * len(scenarios)):
        verdicts = await each_scenario(run, scenarios, title)
    card = Scorecard(title, verdicts, budget if show_budget else None, battery)
    card.left_running = stop_leftovers(before)
    return publish(card)


async def each_scenario(run: Callable[[Scenario], Awaitable[Verdict]], scenarios: list[Scenario],
                        name: str = "exercise") -> list[Verdict]:
    """``run`` on every scenario, side by side (a few labs at once), the verdicts in battery order.

    An interrupt (the stop button) while they run says in one line that the check ``name`` was
    stopped and its servers are gone (``course_lib._runtime.interrupts``), not a traceback."""
    with interrupts.running("check", name):
        if FAIL_FAST.get():
            return await _until_one_fails(run, scenarios)
        verdicts = await gather({i: partial(run, s) for i, s in enumerate(scenarios)})
    return list(verdicts.values())


async def _until_one_fails(run: Callable[[Scenario], Awaitable[Verdict]], scenarios: list[Scenario],
                           limit: int = 4) -> list[Verdict]:
    """``each_scenario`` under ``FAIL_FAST``: the verdicts that finished, in battery order."""
    done: dict[int, Verdict] = {}
    limiter = anyio.CapacityLimiter(limit)
    async with anyio.create_task_group() as group:
        async def one(i: int, s: Scenario) -> None:
            async with limiter:
                done[i] = await run(s)
            if not done[i].passed:
                group.cancel_scope.cancel()

        for i, s in enumerate(scenarios):
            group.start_soon(one, i, s)
    return [done[i] for i in sorted(done)]
