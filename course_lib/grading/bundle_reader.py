"""Chapter 05's exercise: ``async def my_acquire(lab)``, on real snapshot servers.

It returns ``{"revision", "texts"}`` after the manifest, every pinned URI and the revision's prompt,
restarts once on ``SnapshotUnavailable`` and refuses with ``BundleError`` when that is not enough
(``bundles.acquire`` unavailable). Judged by ``grading.bundle_judge``."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from course_lib.grading.budget import call_student
from course_lib.grading.bundle_judge import bundle_rows
from course_lib.grading.runner import exercise, run
from course_lib.grading.scorecard import Scorecard
from course_lib.grading.unavailable import without


async def grade_bundles(student: Callable[[Any], Awaitable[Any]], battery: str = "bundles", *,
                        only: list[str] | None = None, eras: list[str] | None = None,
                        budget: float | None = None) -> Scorecard:
    """Grade ``async def student(lab) -> bundle`` on the battery's snapshot servers (``only``, ``eras``)."""
    ex = exercise(battery, only, eras, budget)
    student = without(student, ex.spec.get("unavailable", ()))
    return await run(ex, *bundle_rows(ex, lambda s, lab: call_student(student, lab)))
