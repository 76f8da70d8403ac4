"""Chapter 03's candidate grader: the chapter's probes judge the student's retrying context manager."""
from contextlib import asynccontextmanager

import pytest

from course_lib import CatalogError, walk
from course_lib.grading.candidate_refresh import grade_candidate
from course_lib.refresh import Ready
from course_lib.walker import Catalog
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def publishes_page_1(active, open_candidate):
    async with open_candidate() as lab:
        page = await lab.session.list_tools()
        yield Ready(lab, Catalog("tools", tuple(page.tools), (len(page.tools),)))


@asynccontextmanager
async def swallows_the_catalog_error(active, open_candidate):
    async with open_candidate() as lab:
        try:
            catalog = await walk(lab)
        except Exception:
            catalog = Catalog("tools", (), ())
        yield Ready(lab, catalog)


@asynccontextmanager
async def swallows_the_caller_exception(active, open_candidate):
    async with open_candidate() as lab:
        catalog = await walk(lab)
        try:
            yield Ready(lab, catalog)
        except Exception:
            pass  # the caller's exception stops here


@asynccontextmanager
async def closes_after_raising(active, open_candidate):
    opened = open_candidate()
    lab = await opened.__aenter__()
    catalog = await walk(lab)  # its error leaves with the process still running
    try:
        yield Ready(lab, catalog)
    finally:
        await opened.__aexit__(None, None, None)


@asynccontextmanager
async def walks_the_active_session(active, open_candidate):
    catalog = await walk(active)
    async with open_candidate() as lab:
        yield Ready(lab, catalog)


@asynccontextmanager
async def never_closes(active, open_candidate):
    lab = await open_candidate().__aenter__()
    yield Ready(lab, await walk(lab))


@asynccontextmanager
async def never_retries(active, open_candidate):
    """Chapter 03's candidate in cells: correct, but one rejected walk is the end of it."""
    async with open_candidate() as lab:
        yield Ready(lab, await walk(lab))


@asynccontextmanager
async def retries_while_the_first_runs(active, open_candidate):
    async with open_candidate() as first:
        try:
            catalog = await walk(first)
        except CatalogError:
            async with open_candidate() as lab:  # the rejected candidate is still running
                yield Ready(lab, await walk(lab))
                return
        yield Ready(first, catalog)


@asynccontextmanager
async def retries_until_it_works(active, open_candidate):
    for _ in range(5):
        async with open_candidate() as lab:
            try:
                catalog = await walk(lab)
            except CatalogError:
                continue
            yield Ready(lab, catalog)
            return
    raise RuntimeError("no complete candidate")


async def not_a_context_manager(active, open_candidate):
    async with open_candidate() as lab:
        return await walk(lab)


class ClassCandidate:
    """A correct retrying candidate without @asynccontextmanager: __aenter__ and __aexit__ by hand."""

    def __init__(self, active, open_candidate):
        self.open_candidate = open_candidate

    async def __aenter__(self):
        for attempt in (1, 2):
            self.opened = self.open_candidate()
            lab = await self.opened.__aenter__()
            try:
                return await walk(lab, max_pages=8)  # the Catalog itself is accepted too
            except BaseException as exc:
                await self.opened.__aexit__(type(exc), exc, exc.__traceback__)
                if attempt == 2 or not isinstance(exc, CatalogError):
                    raise

    async def __aexit__(self, exc_type, exc, tb):
        await self.opened.__aexit__(exc_type, exc, tb)
        return False


async def test_a_class_with_aenter_and_aexit_passes():
    card = await grade_candidate(ClassCandidate)
    assert card.passed, card.text()


@pytest.mark.parametrize("solution, failing, control, observed", [
    (publishes_page_1, "gives up after one retry", "gives up after one retry", "[candidate_never_yields]"),
    (publishes_page_1, "caller failure", "caller failure", "[candidate_complete]"),
    (swallows_the_catalog_error, "gives up after one retry", "accepted candidate", "[candidate_never_yields]"),
    (swallows_the_caller_exception, "caller failure", "accepted candidate", "[caller_failure_propagates]"),
    (closes_after_raising, "gives up after one retry", "accepted candidate",
     "[candidate_closed_before_error]"),
    (closes_after_raising, "active untouched", "caller failure", "[candidate_closed_before_error]"),
    (walks_the_active_session, "active untouched", "active untouched", "[active_untouched]"),
    (walks_the_active_session, "accepted candidate", "accepted candidate", "[active_untouched]"),
    (never_closes, "caller failure", "caller failure", "[candidate_closed_after_caller_failure]"),
    (never_closes, "accepted candidate", "accepted candidate", "[closed_after_context]"),
    (not_a_context_manager, "accepted candidate", "accepted candidate", "your code crashed: TypeError"),
    (never_retries, "retry recovers", "active untouched", "[retried_once]"),
    (never_retries, "gives up after one retry", "caller failure", "[retried_once]"),
    (retries_while_the_first_runs, "retry recovers", "accepted candidate", "[one_candidate_at_a_time]"),
    (retries_until_it_works, "gives up after one retry", "retry recovers", "[candidate_never_yields]"),
])
async def test_wrong_context_managers_are_flagged_at_the_named_check(solution, failing, control, observed):
    card = await grade_candidate(solution, only=[failing] + ([control] if control != failing else []))
    verdict = assert_flagged(card, failing, control, observed)  # the same failure in both eras
    assert "legacy:" not in verdict.observed and "2026-07-28:" not in verdict.observed, card.text()


@asynccontextmanager
async def waits_forever(active, open_candidate):
    import anyio

    async with open_candidate() as lab:
        await anyio.sleep_forever()
        yield lab


async def test_a_context_manager_that_waits_forever_is_stopped_within_the_budget():
    card = await grade_candidate(waits_forever, only=["accepted candidate"], budget=1)
    assert card.verdicts[0].observed == "no result within 1 s (stopped)", card.text()


@asynccontextmanager
async def spins_forever(active, open_candidate):
    async with open_candidate() as lab:
        while True:  # never gives the event loop back: only the watchdog can stop it
            pass
        yield lab


async def test_a_context_manager_that_spins_is_stopped_within_the_budget():
    card = await grade_candidate(spins_forever, only=["accepted candidate"], budget=1)
    assert card.verdicts[0].observed == "no result within 1 s (stopped)", card.text()


async def test_one_era_only():
    card = await grade_candidate(ClassCandidate, eras=["2026-07-28"], only=["caller failure"])
    assert card.passed and card.verdicts[0].scenario.era == "2026-07-28", card.text()
