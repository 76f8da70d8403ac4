"""The autograder of chapter 9's exercise (09_stateless_cache): a catalog refresh through the
Client's response cache.

The student's ``async def refresh(client) -> names`` gets an ``mcp.Client`` connected at
2026-07-28 to a real ``modern`` server, with the SDK's response cache on (``connect``'s
default). A scenario may first prepare the client (``"before": "bump"``: one listing that
caches page 1, then the ``bump`` tool moves the server to its other catalog), so a refresh
that trusts the cached page 1 stitches two catalogs together. The battery is
``fixtures/grading/stateless.json``; verdicts and the scorecard are ``course_lib.grading.core``'s.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from course_lib.grading.core import Scorecard, load_battery, run_battery, select

Refresh = Callable[[Any], Awaitable[Any]]


async def _prepare(client, before: str | None) -> None:
    if before is None:
        return
    if before != "bump":
        raise ValueError(f"unknown preparation {before!r}")
    await client.list_tools()  # page 1 of the old catalog is now in the response cache
    await client.call_tool("bump", {})  # and the server has moved on


async def grade_cache_refresh(student: Refresh, battery: str = "stateless", *, only: list[str] | None = None,
                        budget: float | None = None) -> Scorecard:
    """Grade ``async def student(client) -> names`` on the battery's modern servers."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None)
    before = {s["name"]: s.get("before") for s in spec["scenarios"]}
    budget = budget or spec.get("budget_seconds", 8.0)

    return await run_battery(title, scenarios, budget, lambda s, lab: student(lab.client),
                             prepare=lambda s, lab: _prepare(lab.client, before[s.name]),
                             request_timeout=30)
