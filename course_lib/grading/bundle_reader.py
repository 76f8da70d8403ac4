"""Chapter 05's exercise: ``async def my_acquire(lab)``, on real snapshot servers.

It returns ``{"revision", "texts"}`` after the manifest, every pinned URI and the revision's prompt,
restarts once on ``SnapshotUnavailable`` and refuses with ``BundleError`` when that is not enough
(``bundles.acquire`` unavailable). Judged by ``grading.bundle_judge``."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Awaitable, Callable

from course_lib.grading.battery import Scenario, hint_in_era
from course_lib.grading.budget import call_student
from course_lib.grading.bundle_judge import judge_bundle, prepare_before, revisions
from course_lib.grading.runner import exercise, run_battery
from course_lib.grading.scorecard import Scorecard
from course_lib.grading.unavailable import without

Acquire = Callable[[Any], Awaitable[Any]]


async def grade_bundles(student: Acquire, battery: str = "bundles", *, only: list[str] | None = None,
                        eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(lab) -> bundle`` on the battery's snapshot servers (``only``, ``eras``)."""
    ex, oracle = exercise(battery, only, eras, budget), revisions()
    rows, student = ex.rows, without(student, ex.spec.get("unavailable", ()))

    def judge(s: Scenario, outcome):
        return judge_bundle(replace(s, hint=hint_in_era(s, rows[s.name])), outcome, oracle=oracle,
                            latest_hint=ex.spec["latest_hint"])

    return await run_battery(ex, lambda s, lab: call_student(student, lab), judge, request_timeout=30,
                             prepare=lambda s, lab: prepare_before(lab, rows[s.name].get("before"), oracle))
