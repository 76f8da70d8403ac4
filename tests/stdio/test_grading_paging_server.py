"""The exercise of 06_paginating_server: the reference passes every row, the starter scores 0, and
known-wrong page functions fail at their named rows, judged on the wire of real stdio servers."""
import base64
import importlib.util
import json
import secrets

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading.core import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.paging_server import grade_paging_server
from course_lib.grading.runner import FAIL_FAST
from scorecard_checks import assert_flagged
from test_signed_cursor_server import chapter_texts

from test_grading_paging_server_unit import bound_page, claim_of, no_generation, signed

pytestmark = pytest.mark.anyio


def offsets(cursor, catalog):
    """The naive server: the cursor is the offset of the next page."""
    start = 0 if cursor is None else int(cursor)
    end = start + catalog.page_size
    return catalog.names[start:end], (str(end) if end < len(catalog.names) else None)


def no_process(cursor, catalog):
    """Bound to the server, its list and the generation: an earlier process's cursor still reads."""
    return bound_page(cursor, catalog, ("name", "kind", "generation"))


def no_list(cursor, catalog):
    """Bound to the server, its process and the generation: a tools cursor reads as a prompts one."""
    return bound_page(cursor, catalog, ("name", "process", "generation"))


def crashes_on_garbage(cursor, catalog):
    """Reads the claim before it checks anything: a cursor that is not base64 JSON crashes it."""
    start = 0 if cursor is None else json.loads(base64.urlsafe_b64decode(cursor.partition(".")[0]))["o"]
    end = start + catalog.page_size
    return catalog.names[start:end], (signed(catalog, {"o": end}) if end < len(catalog.names) else None)


def chapter_page(tmp_path):
    """The chapter's own signed-cursor ``page()``: its server texts MINT, REFUSE and READ, copied as they are."""
    texts = chapter_texts()
    path = tmp_path / "chapter_server_text.py"
    path.write_text(texts["MINT"] + texts["REFUSE"] + texts["READ"], encoding="utf-8")
    spec = importlib.util.spec_from_file_location("chapter_server_text", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.page


def restarts(cursor, catalog):
    """Serves page 1 for any cursor it cannot read: a silently restarted walk."""
    try:
        start = 0 if cursor is None else claim_of(cursor, catalog)["o"]
    except MCPError:
        start = 0
    end = start + catalog.page_size
    more = end < len(catalog.names)
    return catalog.names[start:end], (signed(catalog, {"g": catalog.generation, "o": end}) if more else None)


def fresh_tokens(cursor, catalog):
    """A new random token every time a page is served: the same cursor never gives the same page twice."""
    start = 0 if cursor is None else int(cursor.split("-")[0])
    end = start + catalog.page_size
    more = end < len(catalog.names)
    return catalog.names[start:end], (f"{end}-{secrets.token_hex(4)}" if more else None)


def wrong_code(cursor, catalog):
    """Refuses every cursor, with -32600 (Invalid request) instead of -32602."""
    if cursor is not None:
        raise MCPError(types.INVALID_REQUEST, "bad cursor")
    return catalog.names[:2], "next"


def forever(cursor, catalog):
    while True:
        pass


async def test_the_chapters_own_page_function_fails_the_two_rules_it_only_states(tmp_path):
    card = await grade_paging_server(chapter_page(tmp_path))
    assert {v.scenario.name for v in card.failures()} == {"another process", "another list"}, card.text()
    assert {v.scenario.era for v in card.failures()} == {"legacy", "2026-07-28"}
    assert {v.failure_class for v in card.failures()} == {MISSING_REFUSAL}


async def test_offset_cursors_fail_at_every_cursor_check():
    card = await grade_paging_server(offsets, eras=["legacy"])
    assert {v.scenario.name for v in card.failures()} == {"forged cursor", "tampered cursor", "foreign cursor",
                                                          "another process", "another list",
                                                          "expired cursor"}, card.text()
    verdict = assert_flagged(card, "expired cursor", "complete catalog",
                             "a generation-1 cursor at generation 2: answered the page ['delta', 'epsilon']")
    assert verdict.failure_class == MISSING_REFUSAL
    assert card.verdict_of("forged cursor").observed.startswith("cursor '3': answered the page")


@pytest.mark.parametrize("page, row, observed", [
    (no_generation, "expired cursor", "a generation-1 cursor at generation 2: answered the page"),
    (no_process, "another process", "the cursor of an earlier process of this server: answered the page"),
    (no_list, "another list", "page 1's tools/list cursor sent to prompts/list: answered the page ['summary']"),
])
async def test_each_binding_left_out_fails_only_at_its_row(page, row, observed):
    card = await grade_paging_server(page)
    assert {v.scenario.name for v in card.failures()} == {row}, card.text()
    assert {v.scenario.era for v in card.failures()} == {"legacy", "2026-07-28"}
    verdict = assert_flagged(card, row, "tampered cursor", observed)
    assert verdict.failure_class == MISSING_REFUSAL


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


async def test_a_silent_restart_is_no_refusal():
    card = await grade_paging_server(restarts, eras=["legacy"])
    verdict = assert_flagged(card, "forged cursor", "complete catalog",
                             "cursor '3': answered the page ['alpha', 'beta'] (next cursor given) instead of -32602")
    assert verdict.failure_class == MISSING_REFUSAL
    # another server's cursor (signed with another key) restarts the walk too
    assert card.verdict_of("foreign cursor").observed.startswith("the cursor of server 'paging-b': answered")


async def test_random_cursors_break_stable_replay():
    card = await grade_paging_server(fresh_tokens, only=["stable replay", "complete catalog"], eras=["legacy"])
    verdict = assert_flagged(card, "stable replay", "complete catalog", "page 1 asked twice: ['alpha', 'beta'] with")
    assert verdict.failure_class == WRONG_RESULT


async def test_the_wrong_error_code_is_a_wrong_refusal():
    card = await grade_paging_server(wrong_code, only=["forged cursor"], eras=["2026-07-28"])
    verdict = card.verdict_of("forged cursor")
    assert not verdict.passed and verdict.failure_class == WRONG_REFUSAL
    assert verdict.observed == "cursor '3': answered MCPError -32600: bad cursor, not -32602 with a message"


async def test_a_refusal_where_a_page_was_due_is_a_wrong_refusal_not_a_grader_crash():
    card = await grade_paging_server(wrong_code, only=["stable replay"], eras=["legacy"])
    (verdict,) = card.verdicts
    assert verdict.failure_class == WRONG_REFUSAL
    assert verdict.observed == "a request this row needs was answered MCPError -32600: bad cursor"


def not_a_page(cursor, catalog):
    return "alpha"  # not (names, next_cursor)


async def test_an_answer_that_is_not_a_page_is_the_students_crash():
    card = await grade_paging_server(not_a_page, only=["complete catalog", "prompts list"], eras=["2026-07-28"])
    assert [v.failure_class for v in card.verdicts] == [CRASH, CRASH], card.text()
    assert "your code crashed: ValueError" in card.verdict_of("complete catalog").observed


async def test_a_handler_that_never_returns_is_stopped_at_the_budget():
    card = await grade_paging_server(forever, only=["complete catalog", "forged cursor"], eras=["legacy"], budget=2)
    assert [v.failure_class for v in card.verdicts] == [HANG, HANG], card.text()
    assert card.verdict_of("forged cursor").observed == "not asked: an earlier request got no answer"
