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
The capstone battery ``fixtures/grading/capstone.json`` includes the walk and refresh batteries
(every walk scenario then runs as the candidate of a refresh) and adds two combined servers.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from course_lib.walker import walk
from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.grading.core import Scenario, Scorecard, Verdict, judge_names, load_battery, observe, select
from course_lib.labs import connect
from course_lib.paths import fixture
from course_lib.scenarios import gather


def _fixture(relative: str):
    return fixture(*relative.split("/"))


def load_refresh_battery(name: str) -> tuple[str, list[Scenario], dict, dict]:
    """A refresh battery and the batteries it ``includes``: (title, scenarios, spec, candidate fixtures).

    A scenario's candidate is ``server`` started with its ``mode`` and, when it names one, its
    ``fixture`` (a path under ``fixtures/``). Included batteries (e.g. ``walk``) bring their
    scenarios unchanged; each then runs as the candidate of a refresh.
    """
    title, scenarios, spec = load_battery(name)
    fixtures = {s["name"]: _fixture(s["fixture"]) for s in spec["scenarios"] if "fixture" in s}
    included = []
    for other in spec.get("includes", []):
        _, more, _, more_fixtures = load_refresh_battery(other)
        included += more
        fixtures.update(more_fixtures)
    keys = [(s.name, s.era) for s in included + scenarios]
    if len(keys) != len(set(keys)):
        raise ValueError(f"battery {name!r} repeats a scenario name")
    return title, included + scenarios, spec, fixtures


async def grade_refresh(student: Callable, battery: str = "refresh", *, only: list[str] | None = None,
                        eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(active, open_candidate)`` on the battery's servers.

    A scenario fails when the refresh sends anything on the active session (whatever it
    returns), returns without ever opening a candidate, or its outcome differs from the
    battery's expectation (complete names, or an error instead of a partial catalog).
    """
    title, scenarios, spec, candidates = load_refresh_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 8.0)
    active_fixture = _fixture(spec["active_fixture"])

    async def run(s: Scenario) -> Verdict:
        opened = 0

        def open_candidate():
            nonlocal opened
            opened += 1
            return connect(s.server, mode=s.mode, fixture=candidates.get(s.name), era=s.era,
                           lab_timeout=budget + 60)

        try:
            async with connect("schema", fixture=active_fixture, era=s.era, lab_timeout=budget + 60) as active:
                await walk(active)  # the active session holds a catalog, as in chapter 3
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


async def grade_capstone(student: Callable, *, only: list[str] | None = None, eras: list[str] | None = None,
                         budget: float | None = None) -> Scorecard:
    """The capstone: every walk and refresh scenario of chapters 1-4 plus the combined ones."""
    return await grade_refresh(student, "capstone", only=only, eras=eras, budget=budget)
