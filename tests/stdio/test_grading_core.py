"""The walker grader (chapters 1 and 2): the starter scores 0, one wrong walker per failure kind fails
at its scenario, a correct walker of another style and the reference pass, and what hangs or spins is
stopped. The judges' decisions on every other wrong walker: ``test_grading_walker_judges_unit.py``."""
import time

import anyio
import pytest
from mcp import MCPError
from mcp.types import PaginatedRequestParams

from course_lib import CatalogError
from course_lib.grading.runner import FAIL_FAST
from course_lib.grading.core import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, Scorecard, \
    grade_walker, load_battery
from course_lib.tooling.student_copy import reference_solution
from scorecard_checks import assert_flagged

from test_grading_core_unit import first_page_only

pytestmark = pytest.mark.anyio
NAMES_ROWS = ["normal", "single page", "empty catalog", "empty-string cursor", "server order"]
RESTART = "walk_restart"  # chapter 2's exercise: one restart after a refused cursor


def reference(notebook: str, name: str):
    """The chapter's ``reference_<name>``, with what its earlier cells define."""
    return reference_solution(notebook, f"reference_{name}", {
        "PaginatedRequestParams": PaginatedRequestParams, "CatalogError": CatalogError, "MCPError": MCPError,
        "page_params": lambda c: None if c is None else PaginatedRequestParams(cursor=c)})


def params(cursor):
    return None if cursor is None else PaginatedRequestParams(cursor=cursor)


# -- the untouched starter and wrong walkers of different kinds --------------------------------

async def starter(session, max_pages=32):
    raise NotImplementedError("write your walker here")


async def no_repeat_check(session):
    names, cursor = [], None
    while True:
        page = await session.list_tools(params=params(cursor))
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names


async def swallow_errors(session):
    names, cursor, seen = [], None, set()
    try:
        for _ in range(32):
            page = await session.list_tools(params=params(cursor))
            for t in page.tools:
                if t.name in names:
                    raise CatalogError("duplicate_name", "duplicate")
                names.append(t.name)
            cursor = page.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
    except Exception:
        pass
    return names  # a partial catalog on any failure


async def one_request_too_many(session):
    """Checks the cursor it sent rather than the one it got: the repeat is seen a request late."""
    names, cursor, sent = [], None, set()
    for _ in range(32):
        page = await session.list_tools(params=params(cursor))
        if cursor in sent:
            raise CatalogError("cursor_repeated", "a cursor came back")
        sent.add(cursor)
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names
    raise CatalogError("page_budget", "too many pages")


async def typo_on_page_2(session):
    page = await session.list_tools()
    names = [t.name for t in page.tools]
    cursor = page.next_cursor
    while cursor is not None:
        page = await session.list_tools(params=params(cursor))
        names += [t.name for t in page.tools]
        cursor = page.next_cursr  # the typo: AttributeError on page 2
    return names


async def wrong_reason(session):
    try:
        return await safe_walk(session)
    except CatalogError as exc:
        raise CatalogError("cursor_repeated", "something went wrong") from exc


async def spins(session):
    await session.list_tools()
    while True:  # never awaits again: the event loop is blocked
        pass


async def awaits_forever(session):
    await anyio.Event().wait()


# -- correct walkers ---------------------------------------------------------------------------

async def safe_walk(session, max_pages=32):
    """A correct walker in the reference's style: a loop with a set of cursors and of names."""
    names, seen, cursor = [], set(), None
    for _ in range(max_pages):
        page = await session.list_tools(params=params(cursor))
        for t in page.tools:
            if t.name in names:
                raise CatalogError("duplicate_name", f"{t.name!r} appears twice")
            names.append(t.name)
        cursor = page.next_cursor
        if cursor is None:
            return names
        if cursor in seen:
            raise CatalogError("cursor_repeated", "the server sent a cursor it had already sent")
        seen.add(cursor)
    raise CatalogError("page_budget", f"no last page within {max_pages} pages")


async def generator_walk(session, max_pages=32):
    """Another style: an async generator of pages, a dict of names, errors raised where they show."""
    async def pages():
        cursors = []
        request = None
        while True:
            if len(cursors) == max_pages:
                raise CatalogError("page_budget", f"{max_pages} pages and no end")
            page = await session.list_tools(params=request)
            yield page.tools
            if page.next_cursor is None:
                return
            if page.next_cursor in cursors:
                raise CatalogError("cursor_repeated", f"cursor of page {cursors.index(page.next_cursor) + 1} again")
            cursors.append(page.next_cursor)
            request = PaginatedRequestParams(cursor=page.next_cursor)

    found = {}
    async for tools in pages():
        for t in tools:
            if found.setdefault(t.name, t) is not t:
                raise CatalogError("duplicate_name", f"{t.name} twice")
    return list(found)


# -- tests -------------------------------------------------------------------------------------

async def test_the_untouched_starter_scores_zero():
    card = await grade_walker(starter)
    assert len(card.verdicts) == 19 and card.failures() == card.verdicts, card.text()
    assert {v.observed for v in card.verdicts} == {"your code crashed: NotImplementedError: write your walker here"}
    assert {v.failure_class for v in card.verdicts} == {CRASH}
    assert card.text().endswith("0/19 scenarios pass")
    assert "Time budget: 20 s a call" in card.text()


async def calls_the_library(session, max_pages=32):
    from course_lib import walk  # the library's walker is the lesson, not an answer
    return (await walk(session, max_pages=max_pages)).names


async def calls_it_through_a_helper(session, max_pages=32):
    return await helper_that_walks(session)


async def helper_that_walks(session):
    import course_lib.walker
    return (await course_lib.walker.walk(session)).names


async def test_a_walker_that_calls_the_library_walk_fails_every_scenario():
    for cheat in (calls_the_library, calls_it_through_a_helper):
        card = await grade_walker(cheat, only=["normal", "repeated cursor"], eras=["legacy"])
        assert card.score == 0, card.text()
        assert all(v.failure_class == CRASH for v in card.verdicts)
        assert "without course_lib.walker.walk" in card.verdicts[0].hint
    # the restart exercise (chapter 2) builds on the walk: there it is allowed
    assert (await grade_walker(calls_the_library, RESTART, only=["normal"], eras=["legacy"])).passed


async def uses_a_name_from_a_cell_not_run(session, max_pages=32):
    return await session.list_tools(params=page_params_never_defined(None))  # noqa: F821


async def test_a_name_error_says_run_the_cells_above_first():
    card = await grade_walker(uses_a_name_from_a_cell_not_run, only=["normal"], eras=["legacy"])
    (verdict,) = card.verdicts
    assert verdict.failure_class == CRASH
    assert verdict.hint.startswith("`page_params_never_defined` is not defined where your function runs: if the "
                                   "chapter defines it, run the cells above first")


async def test_a_hanging_walker_says_it_is_still_running_while_it_waits(capsys):
    await grade_walker(awaits_forever, only=["normal"], eras=["legacy"], budget=2)
    assert capsys.readouterr().out == ("still running — the budget is 2 s a call; a call still running then is "
                                       "stopped; 1 call not finished: up to 2 s in all\n")
    await grade_walker(awaits_forever, only=["normal", "single page", "empty catalog"], eras=["legacy"], budget=2)
    assert capsys.readouterr().out == ("still running — the budget is 2 s a call; a call still running then is "
                                       "stopped; 3 calls not finished: up to 6 s in all\n")
    await grade_walker(first_page_only, only=["single page"], eras=["legacy"], budget=2)
    assert capsys.readouterr().out == "", "a call that ends in time says nothing"


async def test_a_correct_walker_in_another_style_passes_everything():
    card = await grade_walker(generator_walk)
    assert card.passed, card.text()
    assert len(card.verdicts) == 19


async def test_fail_fast_ends_a_grading_at_its_first_failure_and_keeps_a_passing_card_whole():
    """``FAIL_FAST`` (what the test of a chapter's own functions grades with): a walker that fails
    gets a failing card of the verdicts that finished; one that fails nothing gets every verdict."""
    fail_fast = FAIL_FAST.set(True)
    try:
        failing = await grade_walker(first_page_only)  # every scenario with a page 2 fails
        passing = await grade_walker(generator_walk, only=NAMES_ROWS, eras=["legacy"])
    finally:
        FAIL_FAST.reset(fail_fast)
    assert not failing.passed and failing.failures() and len(failing.verdicts) < 19, failing.text()
    assert passing.passed and len(passing.verdicts) == len(NAMES_ROWS), passing.text()


@pytest.mark.parametrize("solution, failing, control, failure, observed", [
    (first_page_only, "normal", "single page", WRONG_RESULT, "returned ['alpha']"),
    (swallow_errors, "duplicate name", "normal", MISSING_REFUSAL, "returned a partial catalog ['alpha']"),
    (one_request_too_many, "repeated cursor", "normal", WRONG_REFUSAL,
     "raised CatalogError(cursor_repeated): a cursor came back after 3 tools/list requests (expected 2)"),
    (typo_on_page_2, "normal", "single page", CRASH,
     "your code crashed: AttributeError: 'ListToolsResult' object has no attribute 'next_cursr'"),
    (wrong_reason, "endless catalog", "normal", WRONG_REFUSAL,
     "raised CatalogError(cursor_repeated): something went wrong, not CatalogError(page_budget)"),
])
async def test_wrong_walkers_are_flagged_at_their_scenario(solution, failing, control, failure, observed):
    card = await grade_walker(solution, only=[failing, control], eras=["legacy"])
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == failure
    text = " ".join(card.text().split())  # the failures are wrapped at 100 characters
    assert f"1. {failing} — failed in legacy" in text and "expected" in text
    assert " ".join(verdict.hint.split()) in text


async def test_a_walker_that_never_returns_is_stopped_at_the_budget():
    # A loop that keeps awaiting (cancelled) and one that never awaits (stopped by the watchdog).
    started = time.monotonic()
    loops = await grade_walker(no_repeat_check, only=["repeated cursor"], eras=["legacy"], budget=2)
    waits = await grade_walker(awaits_forever, only=["normal"], eras=["legacy"], budget=2)
    spinning = await grade_walker(spins, only=["normal"], eras=["legacy"], budget=2)
    control = await grade_walker(no_repeat_check, only=["normal"], eras=["legacy"])
    assert time.monotonic() - started < 60
    card = Scorecard(loops.title, loops.verdicts + waits.verdicts + spinning.verdicts + control.verdicts)
    for verdict in (loops.verdicts[0], waits.verdicts[0], spinning.verdicts[0]):
        assert verdict.observed == "no result within 2 s (stopped)"
        assert verdict.failure_class == HANG
    assert control.passed, control.text()
    assert "Your function never finished and was stopped" in card.text()
    wire = loops.verdicts[0].outcome.state["wire"]  # the hint names the cursor that came back
    handed = wire.response_to(wire.requests("tools/list")[0]).message["result"]["nextCursor"]
    assert f"Page 2 handed back the cursor {handed!r} of page 1." in loops.verdicts[0].hint


async def test_a_spinning_walker_does_not_spoil_the_other_scenarios():
    async def spins_in_one_mode(session, max_pages=32):
        names, seen, cursor = [], set(), None
        for _ in range(max_pages):
            page = await session.list_tools(params=params(cursor))
            if not page.tools and cursor is None:  # the empty catalog only: page 1 is empty
                while True:
                    pass
            for t in page.tools:
                if t.name in names:
                    raise CatalogError("duplicate_name", f"{t.name!r} appears twice")
                names.append(t.name)
            cursor = page.next_cursor
            if cursor is None:
                return names
            if cursor in seen:
                raise CatalogError("cursor_repeated", "a cursor came back")
            seen.add(cursor)
        raise CatalogError("page_budget", "too many pages")

    # The scenarios run side by side: while one call holds the event loop the others wait,
    # and their budgets move on by the time it held it.
    card = await grade_walker(spins_in_one_mode, only=["empty catalog", "normal", "duplicate name"],
                              eras=["legacy"], budget=3)
    assert [v.scenario.name for v in card.failures()] == ["empty catalog"], card.text()


# -- chapter 2's exercise: restart once after a refused cursor (battery walk_restart) ----------

async def restarts_on_every_refusal(session):
    try:
        return await safe_walk(session)
    except (MCPError, CatalogError):
        return await safe_walk(session)  # a repeating server is walked twice


async def keeps_the_refused_pages(session):
    """Restarts once, but keeps the names the refused walk had read: two catalogs mixed."""
    names = []
    for _ in range(2):
        cursor = None
        try:
            while True:
                page = await session.list_tools(params=params(cursor))
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    return names
        except MCPError:
            continue
    raise CatalogError("page_budget", "two walks refused")


async def restarts_once_after_a_refused_cursor(session):
    """The rule: one restart, and only after -32602."""
    try:
        return await safe_walk(session)
    except MCPError as exc:
        if exc.error.code != -32602:
            raise
        return await safe_walk(session)


async def restarts_until_it_works(session):
    while True:
        try:
            return await safe_walk(session)
        except MCPError:
            pass


@pytest.mark.parametrize("solution, failing, control, observed", [
    (safe_walk, "catalog changed once", "normal", "raised MCPError -32602"),
    (restarts_on_every_refusal, "repeated cursor", "catalog changed once",
     "raised CatalogError(cursor_repeated): the server sent a cursor it had already sent after 4 tools/list"),
    (keeps_the_refused_pages, "moved to a new catalog", "normal",
     "returned ['alpha', 'beta', 'bump', 'delta', 'epsilon', 'bump', 'zeta']"),
])
async def test_wrong_restart_policies_are_flagged(solution, failing, control, observed):
    card = await grade_walker(solution, RESTART, only=[failing, control], eras=["legacy"])
    assert_flagged(card, failing, control, observed)


async def test_restarting_forever_is_stopped_at_the_budget():
    card = await grade_walker(restarts_until_it_works, RESTART, only=["changes on every walk"],
                              eras=["legacy"], budget=2)
    (verdict,) = card.verdicts
    assert verdict.failure_class == HANG and verdict.observed == "no result within 2 s (stopped)"


async def test_one_restart_passes_the_restart_battery():
    card = await grade_walker(restarts_once_after_a_refused_cursor, RESTART)
    assert card.passed, card.text()
    _, scenarios, _ = load_battery(RESTART)
    assert {s.server for s in scenarios} == {"catalog", "modern"}


def starts_a_server_process(session, max_pages=32):
    import os
    import subprocess
    import sys

    env = dict(os.environ, COURSE_LAB_SERVER="1")  # what connect() marks every server with
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env, start_new_session=True)
    return ["alpha", "beta", "gamma"]


async def test_a_walker_that_leaves_a_server_running_gets_its_verdict_and_nothing_is_left_alive():
    from course_lib.grading.runner import lab_servers

    before = lab_servers()
    started = time.monotonic()
    # a server process started and left running: stopped by the check, and the card says so
    card = await grade_walker(starts_a_server_process, only=["normal"], eras=["legacy"], budget=5)
    assert not card.passed and card.left_running == 1
    assert "left 1 server process(es) running; the check stopped them" in " ".join(card.text().split())
    assert lab_servers() <= before, "the check stopped what the student's code left"
    assert time.monotonic() - started < 60
