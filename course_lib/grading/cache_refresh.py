"""Chapter 10's exercise: ``async def refresh(client) -> names`` through the Client's response cache.

``fixtures/grading/stateless.json`` moves a real ``modern`` server's catalog before the refresh
(one listing caches page 1, then ``bump``), between two of its reads (``drifting``, ``churning``)
or after it (``"twice": "bump"``: the second answer must be the new catalog). The judge is the
walker's (``core.judge_on_wire``): the names or the server's second -32602, and the exact number
of ``tools/list`` requests that reach the server (a cached page never does)."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from course_lib.grading.battery import load_battery, rows_of, select
from course_lib.grading.core import judge_on_wire
from course_lib.grading.runner import run_battery
from course_lib.grading.scorecard import Scorecard
from course_lib.grading.unavailable import without

Refresh = Callable[[Any], Awaitable[Any]]


async def bump(client) -> None:
    await client.call_tool("bump", {})  # the server moves to its other catalog


async def _prepare(client, before: str | None) -> None:
    if before is None:
        return
    if before != "bump":
        raise ValueError(f"unknown preparation {before!r}")
    await client.list_tools()  # page 1 of the old catalog is now in the response cache
    await bump(client)  # and the server has moved on


async def grade_cache_refresh(student: Refresh, battery: str = "stateless", *, only: list[str] | None = None,
                              budget: float | None = None) -> Scorecard:
    """Grade ``async def student(client) -> names`` on the battery's modern servers."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None)
    rows = rows_of(spec)
    budget = budget or spec.get("budget_seconds", 8.0)
    student = without(student, spec.get("unavailable", ()))

    async def call(s, lab):
        twice = rows[s.name].get("twice")
        if twice is None:
            return await student(lab.client)
        if twice != "bump":
            raise ValueError(f"unknown step between two refreshes {twice!r}")
        await student(lab.client)  # its answer is the old catalog; what counts is the next one
        await bump(lab.client)
        return await student(lab.client)

    return await run_battery(title, scenarios, budget, call, judge_on_wire, battery=battery,
                             prepare=lambda s, lab: _prepare(lab.client, rows[s.name].get("before")))
