"""The student's function inside a real stdio server: its labs and rows for ``runner.run``.

``written`` copies the function into a module served by ``Exercise.argv`` (one that cannot be copied is a crash
on every row). A row's judge raises ``outcome.Failed`` or says what it saw (``answered``); the student's
exception arrives as -32603 with its ``crash_record`` as ``data`` (``crash_of``)."""
from __future__ import annotations

import json
import tempfile
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Awaitable, Callable

import mcp_types as types
from mcp import MCPError

from course_lib.audit.session import ProbeFailed, probe
from course_lib.display import error_line
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario
from course_lib.grading.child import SourceError, write_module
from course_lib.grading.outcome import Failed
from course_lib.grading.runner import NOT_ASKED, RECORDER, Exercise, exercise, lab_lost, record, verdict_of
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.wire import Wire

LIMIT = 30.0  # seconds past the budget a reply may take before the lab gives up (the harness stops a call at it)


def crash_of(error: dict | MCPError) -> Failed | None:
    """The student's own crash or hang, rebuilt from ``data``, when ``error`` (a reply's or an ``MCPError``) is one."""
    if isinstance(error, MCPError):
        error = {"code": error.error.code, "message": error.error.message, "data": error.error.data}
    data = error.get("data")
    if error.get("code") != types.INTERNAL_ERROR or not isinstance(data, dict):
        return None
    if isinstance(data.get("hung"), (int, float)):  # the harness stopped the student's call at its budget
        return Failed(o.HANG, o.no_result(data["hung"]), o.hung(data["hung"]))
    crash = o.crash_from(data) if data.get("crashed") else None
    return None if crash is None else Failed(o.CRASH, o.describe(crash), crash)


def logged_record(path: Path) -> dict | None:
    """The record of the first crash the harness appended to ``path`` (``harness.CRASH_LOG``)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return json.loads(lines[0]) if lines else None


async def answer_of(request: Awaitable, refusals: tuple[type[BaseException], ...] = (MCPError,)):
    """What ``request`` got: its answer, or the refusal (one of ``refusals``) it raised, for a judge."""
    try:
        return await request
    except refusals as exc:
        return exc


class Asker:
    """The requests of one lab: the student's crash, or their call the harness stopped at the budget,
    is read off the wire (a reply past the lab's own limit, ``REQUEST_TIMEOUT``, is a hang too)."""

    def __init__(self, lab, budget: float):
        self.lab, self.budget = lab, budget

    async def ask(self, request: Callable[[], Awaitable], label: str = ""):
        """``await request()``; a crash or a hang is this row's ``Failed`` (``label`` before a hang)."""
        try:
            return await request()
        except MCPError as exc:
            failed = crash_of(exc)
            if failed is None and exc.error.code == types.REQUEST_TIMEOUT:
                failed = Failed(o.HANG, o.no_result(self.budget), o.hung(self.budget))
            if failed is not None and failed.outcome.failure == o.HANG:
                failed = Failed(o.HANG, label + failed.outcome.observed, failed.outcome)
            raise failed or exc


@contextmanager
def written(student: Callable, battery: str, kind: str, only=None, eras=None, budget=None, default: float = 10.0):
    """The ``Exercise`` of ``student`` on ``battery`` (its ``card`` set when the function cannot be copied)."""
    ex = exercise(battery, only, eras, budget, default)
    with tempfile.TemporaryDirectory(prefix=f"course-{kind}-") as folder:
        ex.kind, ex.folder, ex.function = kind, Path(folder), getattr(student, "__name__", "")
        try:
            ex.path = write_module(ex.folder, "student_" + kind, student, ex.spec.get("unavailable", ()))
        except SourceError as exc:
            failed = o.crashed(exc)
            ex.card = publish(Scorecard(ex.title, [Verdict(s, False, o.describe(failed), o.CRASH, failed)
                                                   for s in ex.scenarios], ex.budget, battery))
        yield ex


async def judged(row: Awaitable[str]) -> o.Outcome:
    """The ``judged`` outcome of one row (what ``row`` observed, or what its ``Failed`` carries)."""
    try:
        return o.judged(None, await row)
    except Failed as failed:
        return failed.outcome
    except MCPError as exc:  # a request this row needed answered was refused
        return o.judged(o.WRONG_REFUSAL, f"a request this row needs was answered {error_line(exc)}")


def answered(ask_row: Callable[[Scenario, object], Awaitable[str]], facts: Callable[[Scenario], dict] | None = None):
    """``runner.run``'s row of a served exercise: ``ask_row(s, lab)`` observed, or its ``Failed`` (recorded with
    ``facts(s)``)."""
    async def row(s: Scenario, lab) -> Verdict:
        session = lab[0] if isinstance(lab, tuple) else lab  # an ``Asker`` or an ``on_probe`` session, maybe first
        asker = getattr(session, "lab", None)  # of a tuple; an ``Asker``'s lab
        before = len(asker.wire.requests()) if asker is not None else len(getattr(session, "exchanges", ()))
        found = await judged(ask_row(s, lab))
        if asker is not None:
            record(s, o.returned(None).with_wire(asker.wire.requests()[before:], wire=asker.wire,
                                                 **(facts(s) if facts else {})))
        elif hasattr(session, "exchanges") and RECORDER.get() is not None:  # each request, then its reply
            own = Wire()
            for x in session.exchanges[before:]:
                own.record("→", json.dumps(x.request))
                if x.reply is not None:
                    own.record("←", json.dumps(x.reply))
            record(s, o.returned(None).with_wire(own.requests(), wire=own, **(facts(s) if facts else {})))
        return verdict_of(s, found)

    return row


def on_lab(ex: Exercise, argv: Callable[[Scenario], list[str]], *, setup=None, lab_timeout: float | None = None):
    """``runner.run``'s labs of a served exercise: ``argv(s)`` a real stdio server (``setup(lab)`` first)
    whose harness stops each call at the budget (a request's own limit is the lab's); a row gets its ``Asker``."""
    @asynccontextmanager
    async def open_lab(s: Scenario):
        async with connect(argv(s), era=s.era, request_timeout=ex.budget + LIMIT,
                           lab_timeout=lab_timeout or ex.budget * 20 + 60) as lab:
            if setup is not None:
                await setup(lab)
            yield Asker(lab, ex.budget)

    return open_lab


def on_probe(ctx, budget: float, start: Callable[[object], Awaitable]):
    """``runner.run``'s labs on one strict audit session (``audit.session.probe``): ``start(wire)`` under the
    probe's own timeout, then every reply has ``budget`` seconds; a row gets ``(wire, what start returned)``."""
    @asynccontextmanager
    async def open_lab(s: Scenario):
        async with probe(ctx, s.era) as wire:
            started = await start(wire)
            wire.reply_timeout = budget + LIMIT  # from here on, every reply is the student's code's
            yield wire, started

    return open_lab


def probe_ended(budget: float):
    """The rows left when a probe's session ends early: the student's crash, a hang (then not asked), or the lab's."""
    def ended(exc: BaseException, left: list[Scenario]) -> list[Verdict]:
        if not isinstance(exc, ProbeFailed):
            return lab_lost(exc, left)
        if exc.check == "closed_pipe":  # the server ended: the student's module, or their code, ended it
            found = o.judged(o.CRASH, "the server ended before it answered: your cell's code did not import, "
                                      "or it ended the process")
        elif exc.check != "reply_timeout":
            found = o.judged(o.LAB, f"the lab could not run: [{exc.check}] {exc.message}"[:150])
        else:  # the row that got no answer, then the rows never asked
            found = o.judged(o.HANG, NOT_ASKED, o.hung(budget, NOT_ASKED))
            return [verdict_of(left[0], o.judged(o.HANG, o.no_result(budget), o.hung(budget)))] + [
                verdict_of(s, found) for s in left[1:]]
        return [verdict_of(s, found) for s in left]

    return ended
