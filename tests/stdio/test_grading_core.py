"""The walker grader (chapters 1 and 2) on real servers: a request too many read off the wire, one
restart passes the restart battery, FAIL_FAST, and what hangs, spins or leaves a server running is
stopped. The starter, the wrong walkers and the correct ones are judged on transcripts recorded from
real runs (``test_transcripts_unit.py``, ``make record``); the judges' decisions on hand-made
outcomes: ``test_grading_walker_judges_unit.py``."""
import time

import anyio
import pytest
from mcp import MCPError

from course_lib import CatalogError
from course_lib.grading.runner import FAIL_FAST
from course_lib.grading.core import CRASH, HANG, WRONG_REFUSAL, Scorecard, grade_walker, load_battery
from scorecard_checks import assert_flagged

from test_grading_core_unit import first_page_only, generator_walk, one_request_too_many, params, safe_walk, \
    restarts_once_after_a_refused_cursor, uses_a_name_from_a_cell_not_run

pytestmark = pytest.mark.anyio
NAMES_ROWS = ["normal", "single page", "empty catalog", "empty-string cursor", "server order"]
RESTART = "walk_restart"  # chapter 2's exercise: one restart after a refused cursor


# -- walkers that never return --------------------------------------------------------------

async def no_repeat_check(session):
    names, cursor = [], None
    while True:
        page = await session.list_tools(params=params(cursor))
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names


async def spins(session):
    await session.list_tools()
    while True:  # never awaits again: the event loop is blocked
        pass


async def awaits_forever(session):
    await anyio.Event().wait()


# -- tests -------------------------------------------------------------------------------------

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


async def test_a_request_too_many_on_the_real_wire_is_a_wrong_refusal():
    """One wrong walker on the real servers (the request count is read off the lab's wire); the
    others, and every row of each, are judged on their recorded transcripts (test_transcripts_unit.py)."""
    solution, failing, control, failure, observed = (
        one_request_too_many, "repeated cursor", "normal", WRONG_REFUSAL,
        "raised CatalogError(cursor_repeated): a cursor came back after 3 tools/list requests (expected 2)")
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


async def restarts_until_it_works(session):
    while True:
        try:
            return await safe_walk(session)
        except MCPError:
            pass


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
