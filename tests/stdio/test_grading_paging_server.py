"""The exercise of 06_paginating_server on real stdio servers, where the wire itself is the point: the
student's crash carried as -32603, the student's own error code carried to the client as it was raised,
a call stopped at its budget, and a check that stops at its first failing row. The reference, the starter,
every known-wrong page function and the chapter's visible functions are judged in process on their recorded
replies (tests/inprocess/test_transcripts_unit.py; the reference is recorded again on real servers in
tests/stdio/test_transcripts.py), and so is each row that borrows a cursor, on its lender's recorded lines.
The chapter's signed-cursor page(), copied from its server texts, is graded here: no source names it."""
import importlib.util

import pytest

from course_lib.grading.core import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL
from course_lib.grading.paging_server import grade_paging_server
from course_lib.grading.runner import FAIL_FAST
from scorecard_checks import assert_flagged
from test_signed_cursor_server import chapter_texts

from test_grading_paging_server_unit import crashes_on_garbage, no_generation, wrong_code

pytestmark = pytest.mark.anyio


def chapter_page(tmp_path):
    """The chapter's own signed-cursor ``page()``: its server texts MINT, REFUSE and READ, copied as they are."""
    texts = chapter_texts()
    path = tmp_path / "chapter_server_text.py"
    path.write_text(texts["MINT"] + texts["REFUSE"] + texts["READ"], encoding="utf-8")
    spec = importlib.util.spec_from_file_location("chapter_server_text", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.page


def forever(cursor, catalog):
    while True:
        pass


async def test_the_chapters_own_page_function_fails_the_two_rules_it_only_states(tmp_path):
    card = await grade_paging_server(chapter_page(tmp_path))
    assert {v.scenario.name for v in card.failures()} == {"another process", "another list"}, card.text()
    assert {v.scenario.era for v in card.failures()} == {"legacy", "2026-07-28"}
    assert {v.failure_class for v in card.failures()} == {MISSING_REFUSAL}


async def test_a_cursor_that_crashes_the_handler_is_no_refusal():
    card = await grade_paging_server(crashes_on_garbage, only=["forged cursor", "complete catalog"],
                                     eras=["legacy"])
    verdict = assert_flagged(card, "forged cursor", "complete catalog", "your code crashed: ")
    assert verdict.failure_class == CRASH


async def test_fail_fast_stops_at_the_first_failing_row():
    """Under ``FAIL_FAST`` the first era's labs run until a row fails (here the last lab's expired
    cursor); the other era is not started, and the card fails at that row."""
    fail_fast = FAIL_FAST.set(True)
    try:
        card = await grade_paging_server(no_generation)
    finally:
        FAIL_FAST.reset(fail_fast)
    assert [(v.scenario.name, v.scenario.era) for v in card.failures()] == [("expired cursor", "legacy")], card.text()
    assert {v.scenario.era for v in card.verdicts} == {"legacy"} and not card.passed


async def test_the_wrong_error_code_is_a_wrong_refusal():
    card = await grade_paging_server(wrong_code, only=["forged cursor"], eras=["2026-07-28"])
    verdict = card.verdict_of("forged cursor")
    assert not verdict.passed and verdict.failure_class == WRONG_REFUSAL
    assert verdict.observed == "cursor '3': answered MCPError -32600: bad cursor, not -32602 with a message"


async def test_a_handler_that_never_returns_is_stopped_at_the_budget():
    card = await grade_paging_server(forever, only=["complete catalog", "forged cursor"], eras=["legacy"], budget=2)
    assert [v.failure_class for v in card.verdicts] == [HANG, HANG], card.text()
    assert card.verdict_of("forged cursor").observed == "not asked: an earlier request got no answer"
