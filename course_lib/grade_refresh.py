"""The refresh exercise's grader: a student's refresh against an active server and a candidate.

The student writes ``async def my_refresh(active, open_candidate)``. ``active`` is the lab
whose session is in use (its catalog already walked); ``open_candidate()`` returns a fresh
``connect(...)`` context for a separate server process. The refresh must return the
candidate's complete catalog (names, Tool objects or a ``Catalog``) and raise when the
candidate's walk fails, and it must never send anything on the active session: every
listed page, even one the caller rejects, lands in that session's output-schema cache.

The battery ``fixtures/grading/refresh.json`` is written by hand: per scenario, the schema
fixture of the candidate server and the expected outcome. Every scenario runs on real
``schema`` servers in both eras, with ``grade``'s primitives (``observe``, ``judge_names``).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .catalog import walk
from .display import error_line
from .errors import CourseError
from .grade import Scenario, Scorecard, Verdict, judge_names, load_battery, observe, select
from .launch import connect
from .paths import fixture
from .scenarios import gather


def _fixture(relative: str):
    return fixture(*relative.split("/"))


async def grade_refresh(student: Callable, battery: str = "refresh", *, only: list[str] | None = None,
                        eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(active, open_candidate)`` on the battery's schema servers.

    A scenario fails when the refresh sends anything on the active session (whatever it
    returns), returns without ever opening a candidate, or its outcome differs from the
    battery's expectation (complete names, or an error instead of a partial catalog).
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 8.0)
    candidates = {s["name"]: _fixture(s["fixture"]) for s in spec["scenarios"]}
    active_fixture = _fixture(spec["active_fixture"])

    async def run(s: Scenario) -> Verdict:
        opened = 0

        def open_candidate():
            nonlocal opened
            opened += 1
            return connect(s.server, fixture=candidates[s.name], era=s.era, lab_timeout=budget + 60)

        try:
            async with connect(s.server, fixture=active_fixture, era=s.era, lab_timeout=budget + 60) as active:
                await walk(active)  # the active session holds a catalog, as in the chapter
                before = len(active.wire)
                kind, observed, value = await observe(lambda: student(active, open_candidate), budget)
                touched = len(active.wire) - before
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return Verdict(s, False, f"the lab could not run: {error_line(exc)}")
        if touched:
            # Whatever it returned, the active session's cache may have changed: that is the failure.
            return Verdict(replace(s, hint=spec["untouched_hint"]), False,
                           f"sent {touched} message(s) on the active session, which must stay untouched")
        if kind == "returned" and not opened:
            return Verdict(s, False, "returned without opening a candidate")
        passed, observed = judge_names(s.expect, kind, observed, value)
        return Verdict(s, passed, observed)

    verdicts = await gather({i: (lambda s=s: run(s)) for i, s in enumerate(scenarios)})
    return Scorecard(title, list(verdicts.values()))
