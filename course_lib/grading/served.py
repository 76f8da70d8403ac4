"""The one engine of the server-side exercises: the student's function inside a real stdio server.

``written`` copies the function into a module (``grading.child``; one that cannot be copied is the
student's crash on every row) and names the ``grading.harness`` command line that serves it.
A row's judge reads it into an ``Outcome`` (``outcome.judged``; a judge that rejects it raises
``outcome.Failed``). The student's own exception arrives as
``-32603`` with its ``outcome.crash_record`` as ``data`` (``crash_of``: a ``CRASHED`` outcome); a reply that
never came ends its lab's rows (``Asker``); a lab that fails is ``LAB`` for the rows left
(``on_lab``); ``grade`` runs the labs and publishes the card.
"""
from __future__ import annotations

import json
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Awaitable, Callable

import mcp_types as types
from mcp import MCPError

from course_lib.audit.session import ProbeFailed, probe
from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.grading import outcome as o
from course_lib.grading.outcome import Failed
from course_lib.grading.battery import Scenario, load_battery, rows_of, select
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.runner import FAIL_FAST
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import for_each

HARNESS = "course_lib.grading.harness"
NOT_ASKED = "not asked: an earlier request got no answer"


def crash_of(error: dict | MCPError) -> Failed | None:
    """The student's own crash (its ``CRASHED`` outcome rebuilt from ``data``), when that is what
    ``error`` (a reply's error, or an ``MCPError``) is."""
    if isinstance(error, MCPError):
        error = {"code": error.error.code, "message": error.error.message, "data": error.error.data}
    data = error.get("data")
    if error.get("code") != types.INTERNAL_ERROR or not isinstance(data, dict) or not data.get("crashed"):
        return None
    return crashed(o.crash_from(data))


def crashed(outcome: o.Outcome) -> Failed:
    """A row that ends with the student's crash."""
    return Failed(o.CRASH, o.describe(outcome), outcome)


def logged_crash(path: Path) -> o.Outcome | None:
    """The first crash the harness appended to ``path`` (``harness.CRASH_LOG``), as its outcome."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return o.crash_from(json.loads(lines[0])) if lines else None


class Asker:
    """The requests of one lab: a crash is read off the wire, and after a request that got no
    answer (``REQUEST_TIMEOUT``) nothing more is asked."""

    def __init__(self, lab, budget: float, not_asked: str = NOT_ASKED):
        self.lab, self.budget, self.not_asked, self.stuck = lab, budget, not_asked, False

    async def ask(self, request: Callable[[], Awaitable], label: str = ""):
        """``await request()``; a crash or a reply that never came is this row's ``Failed``."""
        if self.stuck:
            raise Failed(o.HANG, self.not_asked)
        try:
            return await request()
        except MCPError as exc:
            failed = crash_of(exc)
            if failed is None and exc.error.code == types.REQUEST_TIMEOUT:
                self.stuck, failed = True, Failed(o.HANG, label + o.no_result(self.budget))
            raise failed or exc


@dataclass
class Exercise:
    """A battery, its student's module in ``folder`` and the harness ``kind`` that serves it."""

    title: str
    scenarios: list[Scenario]
    spec: dict
    budget: float
    battery: str
    kind: str
    folder: Path
    path: Path | None = None
    function: str = ""
    card: Scorecard | None = None  # the published card when the function cannot be copied

    @property
    def rows(self) -> dict[str, dict]:
        return rows_of(self.spec)

    def wanted(self, era: str, keep: Callable[[dict], bool] = lambda row: True) -> list[dict]:
        """The rows of ``era`` (those ``keep`` keeps), in battery order."""
        return [self.rows[s.name] for s in self.scenarios if s.era == era and keep(self.rows[s.name])]

    def config(self, name: str, data: dict) -> Path:
        path = self.folder / f"{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def argv(self, config: Path | None = None) -> list[str]:
        return child_argv("-m", HARNESS, self.kind, str(self.path), self.function, *([str(config)] if config else []))


@contextmanager
def written(student: Callable, battery: str, kind: str, only=None, eras=None, budget=None, default: float = 10.0):
    """The ``Exercise`` of ``student`` on ``battery`` (its ``card`` set when the function cannot be copied)."""
    title, scenarios, spec = load_battery(battery)
    scenarios = [replace(s, hints={**spec.get("hints", {}), **s.hints}) for s in select(scenarios, only, eras)]
    budget = budget or spec.get("budget_seconds", default)
    with tempfile.TemporaryDirectory(prefix=f"course-{kind}-") as folder:
        ex = Exercise(title, scenarios, spec, budget, battery, kind, Path(folder),
                      function=getattr(student, "__name__", ""))
        try:
            ex.path = write_module(ex.folder, "student_" + kind, student, spec.get("unavailable", ()))
        except SourceError as exc:
            failed = o.crashed(exc)
            ex.card = publish(Scorecard(title, [Verdict(s, False, o.describe(failed), o.CRASH, failed)
                                                for s in scenarios], budget, battery))
        yield ex


async def judged(row: Awaitable[str]) -> o.Outcome:
    """The ``judged`` outcome of one row (what ``row`` observed, or what its ``Failed`` carries)."""
    try:
        return o.judged(None, await row)
    except Failed as failed:
        return failed.outcome
    except MCPError as exc:  # a request this row needed answered was refused
        return o.judged(o.WRONG_REFUSAL, f"a request this row needs was answered {error_line(exc)}")


async def on_lab(ex: Exercise, argv: list[str], era: str, rows: list[dict],
                 ask_row: Callable[[Asker, dict], Awaitable[str]], *, setup=None, lab_timeout: float | None = None,
                 not_asked: str = NOT_ASKED) -> dict[str, o.Outcome]:
    """The rows on one real stdio server, in order (``setup(lab)`` first); a lab that fails is
    ``LAB`` for the rows left. Under ``FAIL_FAST`` the rows after a failing one are not asked."""
    out: dict[str, o.Outcome] = {}
    if not rows:
        return out
    try:
        async with connect(argv, era=era, request_timeout=ex.budget,
                           lab_timeout=lab_timeout or ex.budget * 20 + 60) as lab:
            asker = Asker(lab, ex.budget, not_asked)
            if setup is not None:
                await setup(lab)
            for row in rows:
                out[row["name"]] = await judged(ask_row(asker, row))
                if FAIL_FAST.get() and out[row["name"]].failure is not None:
                    break
    except CourseError as exc:
        for row in rows:
            out.setdefault(row["name"], o.judged(o.LAB, o.describe(o.lab_failed(exc)), o.lab_failed(exc)))
    return out


async def on_probe(ctx, era: str, rows: list[dict], ask_row: Callable, budget: float,
                   start: Callable[[object], Awaitable]) -> dict[str, o.Outcome]:
    """The rows on one strict audit session (``audit.session.probe``), in order: ``start(wire)`` first
    under the probe's own timeout (start-up is the harness's), then every reply has ``budget``
    seconds and ``ask_row(wire, row, started)`` is judged. When the session ends early, the rows
    left are the student's crash (the server ended), a hang (then the rows not asked), or the lab's."""
    out: dict[str, o.Outcome] = {}
    try:
        async with probe(ctx, era) as wire:
            started = await start(wire)
            wire.reply_timeout = budget  # from here on, every reply is the student's code's
            for row in rows:
                out[row["name"]] = await judged(ask_row(wire, row, started))
    except ProbeFailed as exc:
        for n, row in enumerate(r for r in rows if r["name"] not in out):
            if exc.check == "closed_pipe":  # the server ended: the student's module, or their code, ended it
                out[row["name"]] = o.judged(o.CRASH, "the server ended before it answered: your cell's code did "
                                                     "not import, or it ended the process")
            elif exc.check != "reply_timeout":
                out[row["name"]] = o.judged(o.LAB, f"the lab could not run: [{exc.check}] {exc.message}"[:150])
            else:  # the row that got no answer, then the rows never asked
                out[row["name"]] = o.judged(o.HANG, NOT_ASKED if n else o.no_result(budget),
                                            o.hung(budget, NOT_ASKED if n else None))
    return out


async def grade(ex: Exercise, run: Callable[..., Awaitable[dict]],
                key: Callable[[Scenario], object] = lambda s: s.era) -> Scorecard:
    """``run`` per key of the scenarios (an era, or a tuple spread as its arguments), side by side
    (under ``FAIL_FAST`` one after another until one fails, and only the rows asked are on the
    card); each scenario's verdict is its row's ``judged`` outcome under its key."""
    keys = list(dict.fromkeys(key(s) for s in ex.scenarios))
    if not FAIL_FAST.get():
        results = await for_each(run, keys)
    else:
        results = {}
        for k in keys:
            results[k] = (await for_each(run, [k]))[k]
            if any(found.failure is not None for found in results[k].values()):
                break
    verdicts = []
    for s in ex.scenarios:
        found = results.get(key(s), {}).get(s.name)
        if found is not None or not FAIL_FAST.get():
            verdicts.append(Verdict(s, found.failure is None, found.observed, found.failure, found))
    return publish(Scorecard(ex.title, verdicts, ex.budget, ex.battery))
