"""The autograder of chapter 6's exercise: a catalog refresh through the Client's response cache.

The student's ``async def refresh(client) -> names`` gets an ``mcp.Client`` connected at
2026-07-28 to a real ``modern`` server, with the SDK's response cache on (``connect``'s
default). A scenario may first prepare the client (``"before": "bump"``: one listing that
caches page 1, then the ``bump`` tool moves the server to its other catalog), so a refresh
that trusts the cached page 1 stitches two catalogs together. The battery is
``fixtures/grading/stateless.json``; verdicts and the scorecard are ``course_lib.grade``'s.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from .display import error_line
from .errors import CourseError
from .grade import Scorecard, Scenario, Verdict, judge_names, load_battery, observe, select
from .launch import connect
from .scenarios import gather

Refresh = Callable[[Any], Awaitable[Any]]


async def _prepare(client, before: str | None) -> None:
    if before is None:
        return
    if before != "bump":
        raise ValueError(f"unknown preparation {before!r}")
    await client.list_tools()  # page 1 of the old catalog is now in the response cache
    await client.call_tool("bump", {})  # and the server has moved on


async def grade_refresh(student: Refresh, battery: str = "stateless", *, only: list[str] | None = None,
                        budget: float | None = None) -> Scorecard:
    """Grade ``async def student(client) -> names`` on the battery's modern servers."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None)
    before = {s["name"]: s.get("before") for s in spec["scenarios"]}
    budget = budget or spec.get("budget_seconds", 8.0)

    async def run(s: Scenario) -> Verdict:
        try:
            async with connect(s.server, mode=s.mode, era=s.era, request_timeout=30,
                               lab_timeout=budget + 60) as lab:
                await _prepare(lab.client, before[s.name])
                kind, observed, value = await observe(lambda: student(lab.client), budget)
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return Verdict(s, False, f"the lab could not run: {error_line(exc)}")
        passed, observed = judge_names(s.expect, kind, observed, value)
        return Verdict(s, passed, observed)

    verdicts = await gather({i: (lambda s=s: run(s)) for i, s in enumerate(scenarios)})
    return Scorecard(title, list(verdicts.values()))
