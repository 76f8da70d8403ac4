"""The one runner: open a scenario's lab, run the student's code on it, judge each row.

``run`` opens a lab per group of an ``Exercise``'s scenarios (a scenario alone, an era, a served lab) with
``open_lab`` and runs the group's rows on it in order; a lab that fails is ``LAB`` for the rows left.
``student_row`` is the row of code run in this process, its ``Outcome`` handed to the pure judge."""
from __future__ import annotations

import json
import os
import signal
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

import psutil

from course_lib._runtime import interrupts
from course_lib._runtime.forkserver import is_fork_server
from course_lib.audit.session import ProbeFailed
from course_lib.errors import CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, load_battery, rows_of, select
from course_lib.grading.budget import ahead, observe
from course_lib.grading.child import child_argv
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import gather

Judge = Callable[[Scenario, o.Outcome], Verdict]
Row = Callable[[Scenario, Any], Awaitable[Verdict]]
# Set by a caller that needs only "does it fail?" (no function a chapter shows passes its exercise): the labs
# run one after another, era by era, until a verdict fails; the card holds the verdicts that finished.
FAIL_FAST: ContextVar[bool] = ContextVar("course_grading_fail_fast", default=False)
HARNESS = "course_lib.grading.harness"
NOT_ASKED = "not asked: an earlier request got no answer"  # a row after one that hung


@dataclass
class Exercise:
    """A battery as one check runs it (``kind`` ... ``function``: the module ``served.written`` writes)."""

    title: str
    scenarios: list[Scenario]
    spec: dict
    budget: float
    battery: str
    kind: str = ""
    folder: Path | None = None
    path: Path | None = None
    function: str = ""
    card: Scorecard | None = None  # the published card when the function cannot be copied

    @property
    def rows(self) -> dict[str, dict]:
        return rows_of(self.spec)

    def config(self, name: str, data: dict) -> Path:
        path = self.folder / f"{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def argv(self, config: Path | None = None) -> list[str]:
        """The ``grading.harness`` command line that serves the student's module."""
        return child_argv("-m", HARNESS, self.kind, str(self.path), self.function, *([str(config)] if config else []),
                          "--budget", f"{self.budget:g}")


def exercise(battery: str, only=None, eras=None, budget: float | None = None, default: float = 8.0) -> Exercise:
    """``fixtures/grading/BATTERY.json``'s scenarios (``only`` these names, in ``eras``), with its hints."""
    title, scenarios, spec = load_battery(battery)
    scenarios = [replace(s, hints={**spec.get("hints", {}), **s.hints}) for s in select(scenarios, only, eras)]
    return Exercise(title, scenarios, spec, budget or spec.get("budget_seconds", default), battery)
# Set by ``make record`` (``course_lib.tooling.record``): called with every row as its judge gets it.
RECORDER: ContextVar[Callable[[Scenario, o.Outcome], None] | None] = ContextVar("course_recorder", default=None)


def record(s: Scenario, outcome: o.Outcome) -> None:
    """Hand ``make record``'s recorder a row as its judge gets it (nothing when no recording runs)."""
    if RECORDER.get() is not None:
        RECORDER.get()(s, outcome)


def lab_servers() -> set[int]:
    """Course servers below this process (``connect`` marks them ``COURSE_LAB_SERVER=1``)."""
    found = set()
    for proc in psutil.Process().children(recursive=True):
        with suppress(psutil.Error):
            if proc.environ().get("COURSE_LAB_SERVER") == "1" and not is_fork_server(proc.cmdline()):
                found.add(proc.pid)
    return found


def stop_leftovers(before: set[int]) -> int:
    """Stop the course servers started since ``before`` and still alive (the student's code never closed them)."""
    left = lab_servers() - before
    for pid in left:
        try:
            os.killpg(pid, signal.SIGKILL)  # each server leads a process group of its own
        except (ProcessLookupError, PermissionError):
            with suppress(psutil.Error):
                psutil.Process(pid).kill()
    for pid in left:
        with suppress(psutil.Error):
            psutil.Process(pid).wait(timeout=5)
    return len(left)


def verdict_of(s: Scenario, found: o.Outcome) -> Verdict:
    """The verdict of a row its judge read into a ``judged`` outcome."""
    return Verdict(s, found.failure is None, found.observed, found.failure, found)


def lab_lost(exc: BaseException, left: list[Scenario]) -> list[Verdict]:
    return [Verdict(s, False, o.describe(o.lab_failed(exc)), o.LAB, o.lab_failed(exc)) for s in left]


async def run(ex: Exercise, open_lab: Callable[[Scenario], Any], row: Row, **options) -> Scorecard:
    """The exercise's card (``calls=N``: the student's code runs N times, not once a row), leftovers stopped."""
    if ex.card is not None:  # the function could not be run at all
        return ex.card
    before = lab_servers()
    with ahead([ex.budget] * options.pop("calls", len(ex.scenarios))):
        card = Scorecard(ex.title, await judge_rows(ex, open_lab, row, **options), ex.budget, ex.battery)
    card.left_running = stop_leftovers(before)
    return publish(card)


async def judge_rows(ex: Exercise, open_lab: Callable[[Scenario], Any], row: Row, *,
                     key: Callable[[Scenario], Any] = lambda s: (s.name, s.era),
                     ended: Callable[[BaseException, list[Scenario]], list[Verdict]] = lab_lost,
                     not_asked: str = NOT_ASKED) -> list[Verdict]:
    """A lab per ``key``, its rows in order (after a hang, ``not_asked``); a failed lab is ``ended(exc, rows left)``."""
    groups: dict[Any, list[Scenario]] = {}
    for s in ex.scenarios:
        groups.setdefault(key(s), []).append(s)

    async def on_lab(rows: list[Scenario]) -> list[Verdict]:
        verdicts: list[Verdict] = []
        try:
            async with open_lab(rows[0]) as lab:
                for s in rows:
                    hung = verdicts and verdicts[-1].failure == o.HANG
                    verdicts.append(await row(s, lab) if not hung else Verdict(
                        s, False, not_asked, o.HANG, o.judged(o.HANG, not_asked, o.hung(ex.budget, not_asked))))
                    if FAIL_FAST.get() and not verdicts[-1].passed:
                        break
        except (CourseError, ProbeFailed) as exc:  # the lab itself: say so rather than blame the student
            verdicts += ended(exc, rows[len(verdicts):])
        return verdicts

    found = [v for vs in await each_scenario(on_lab, list(groups.values()), ex.title) for v in vs]
    order = {(s.name, s.era): n for n, s in enumerate(ex.scenarios)}
    return sorted(found, key=lambda v: order[(v.scenario.name, v.scenario.era)])


def labs(ex: Exercise, prepare: Callable[[Scenario, Any], Awaitable[None]] | None = None, **options):
    """``open_lab`` of a scenario's own server (``connect``); ``prepare(s, lab)`` runs outside the budget."""
    # A call stopped by the watchdog held the event loop: requests of other labs waited with it.
    options.setdefault("request_timeout", ex.budget + 30)

    @asynccontextmanager
    async def open_lab(s: Scenario):
        async with connect(s.server, mode=s.mode, era=s.era, args=s.args, lab_timeout=ex.budget * 2 + 60,
                           **options) as lab:
            if prepare is not None:
                await prepare(s, lab)
            yield lab

    return open_lab


def student_row(ex: Exercise, call: Callable[[Scenario, Any], Awaitable[Any]], judge: Judge) -> Row:
    """The row of code that runs in this process: ``call(s, lab)`` under the budget, then ``judge``."""
    async def row(s: Scenario, lab) -> Verdict:
        before = len(lab.wire.requests())
        outcome = await observe(lambda: call(s, lab), ex.budget)
        outcome = outcome.with_wire(lab.wire.requests()[before:], wire=lab.wire)
        record(s, outcome)
        return judge(s, outcome)

    return row


async def each_scenario(run_one: Callable[[Any], Awaitable[Any]], items: list, name: str = "exercise") -> list:
    """``run_one`` on every item (a lab's scenarios), a few side by side (under ``FAIL_FAST``: in turn, era by era,
    until a verdict fails); the stop button says in one line that check ``name`` stopped."""
    with interrupts.running("check", name):
        if not FAIL_FAST.get():
            return list((await gather({i: partial(run_one, item) for i, item in enumerate(items)})).values())
        era = lambda rows: rows[0].era  # noqa: E731
        eras = list(dict.fromkeys(map(era, items)))
        done = {}
        for i in sorted(range(len(items)), key=lambda i: eras.index(era(items[i]))):
            done[i] = await run_one(items[i])
            if not all(v.passed for v in done[i]):
                break
        return [done[i] for i in sorted(done)]
