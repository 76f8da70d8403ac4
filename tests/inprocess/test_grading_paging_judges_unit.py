"""Chapter 3's server judges on recorded answers, in-process (no server): each rule of a page, a
cursor, a repeated page, a refusal and a walk fails each kind of wrong answer. Names, cursors and
errors are written by hand in the shape of ``fixtures/grading/paging_server.json``."""
from types import SimpleNamespace

import pytest
from mcp import MCPError

from course_lib.errors import CatalogError
from course_lib.grading.outcome import MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.paging_server import (judge_first_page, judge_page, judge_refusal, judge_same,
                                              judge_walk, tamper)
from course_lib.grading.served import Failed
from course_lib.walker import Catalog

TOOLS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def failure(judge, *args):
    with pytest.raises(Failed) as caught:
        judge(*args)
    return caught.value.outcome.failure, caught.value.outcome.observed


def catalog(names, page_sizes, kind="tools"):
    return Catalog(kind, tuple(SimpleNamespace(name=n) for n in names), tuple(page_sizes))


# -- a page lists only names of its list --------------------------------------------------------

def test_a_page_of_names_from_its_list_passes():
    assert judge_page("tools", ["alpha", "beta"], TOOLS) is None
    assert judge_page("tools", [], TOOLS) is None


@pytest.mark.parametrize("names, first", [(["alpha", "zeta"], "zeta"), (["omega"], "omega"),
                                          (["ALPHA"], "ALPHA"), (["prompt-1", "beta"], "prompt-1")])
def test_a_name_outside_the_list_is_a_wrong_result_naming_the_first(names, first):
    kind, observed = failure(judge_page, "prompts", names, TOOLS)
    assert kind == WRONG_RESULT and observed.startswith(f"prompts/list served {first!r}")


# -- page 1 of a paged list has a next cursor ---------------------------------------------------

def test_page_1_with_a_cursor_gives_that_cursor():
    assert judge_first_page(["alpha", "beta"], "c1") == "c1"
    assert judge_first_page(["alpha", "beta"], "") == ""  # an empty cursor is a cursor (the walker judges it)


def test_page_1_without_a_cursor_is_a_wrong_result():
    assert failure(judge_first_page, TOOLS, None)[0] == WRONG_RESULT


# -- the same page asked twice ------------------------------------------------------------------

def test_the_same_page_twice_passes():
    assert judge_same((["alpha"], "c1"), (["alpha"], "c1"), "page 1") is None


@pytest.mark.parametrize("again", [(["beta"], "c1"), (["alpha"], "c2"), (["alpha"], None), (["alpha", "beta"], "c1")])
def test_another_page_or_another_cursor_the_second_time_is_a_wrong_result(again):
    kind, observed = failure(judge_same, (["alpha"], "c1"), again, "one cursor")
    assert kind == WRONG_RESULT and observed.startswith("one cursor asked twice: ['alpha'] with next cursor 'c1'")


# -- a cursor that must be refused --------------------------------------------------------------

@pytest.mark.parametrize("message", ["Invalid cursor", "  x "])
def test_minus_32602_with_a_message_passes(message):
    assert judge_refusal(MCPError(-32602, message), "forged") == f"MCPError -32602: {message}"


@pytest.mark.parametrize("code", [-32603, -32600, -32002, 0])
def test_another_code_is_a_wrong_refusal(code):
    kind, observed = failure(judge_refusal, MCPError(code, "Invalid cursor"), "forged")
    assert kind == WRONG_REFUSAL and observed == f"forged: answered MCPError {code}: Invalid cursor, not -32602 with a message"


@pytest.mark.parametrize("message", ["", "   "])
def test_minus_32602_without_a_message_is_a_wrong_refusal(message):
    assert failure(judge_refusal, MCPError(-32602, message), "forged")[0] == WRONG_REFUSAL


@pytest.mark.parametrize("page, said", [((["alpha", "beta"], "c2"), "given"), ((["alpha"], None), "none"),
                                        (([], None), "none")])
def test_any_page_where_a_refusal_is_due_is_a_missing_refusal(page, said):
    kind, observed = failure(judge_refusal, page, "tampered")
    assert (kind, observed) == (MISSING_REFUSAL, f"tampered: answered the page {page[0]} (next cursor {said}) "
                                                 "instead of -32602")


# -- a whole walk ------------------------------------------------------------------------------

def test_the_expected_names_in_enough_pages_pass():
    assert judge_walk(catalog(TOOLS, [2, 2, 1]), TOOLS, 2) == "the walker read ['alpha', 'beta', 'gamma', " \
                                                              "'delta', 'epsilon'] in pages [2, 2, 1]"
    assert judge_walk(catalog(["p"], [1], "prompts"), ["p"], 1, "prompts") == "the walker read prompts ['p'] in pages [1]"


@pytest.mark.parametrize("names", [TOOLS[:4], TOOLS + ["zeta"], list(reversed(TOOLS)), []])
def test_other_names_are_a_wrong_result(names):
    kind, observed = failure(judge_walk, catalog(names, [len(names)]), TOOLS, 1)
    assert kind == WRONG_RESULT and observed == f"the walker read {names} in pages {[len(names)]}"


@pytest.mark.parametrize("pages", [[5], [3, 2]])
def test_too_few_pages_is_a_wrong_result(pages):
    kind, observed = failure(judge_walk, catalog(TOOLS, pages), TOOLS, 3)
    assert kind == WRONG_RESULT and observed.endswith(": one page is not paging")


def test_a_cursor_to_an_empty_page_is_a_wrong_result():
    kind, observed = failure(judge_walk, catalog(TOOLS[:4], [2, 2, 0]), TOOLS[:4], 2)
    assert kind == WRONG_RESULT and observed == ("the walker read ['alpha', 'beta', 'gamma', 'delta'] in pages "
                                                 "[2, 2, 0]: a next cursor led to an empty page")
    assert judge_walk(catalog([], [0]), [], 1) == "the walker read [] in pages [0]"  # an empty list is one empty page


def test_a_refused_walk_and_a_rejected_walk_are_told_apart():
    assert failure(judge_walk, MCPError(-32602, "Invalid cursor"), TOOLS, 1) == (
        WRONG_REFUSAL, "the walk was refused: MCPError -32602: Invalid cursor")
    kind, observed = failure(judge_walk, CatalogError("cursor_repeated", "cursor repeated"), TOOLS, 1)
    assert (kind, observed) == (WRONG_RESULT, "the walker refused the pages: CatalogError(cursor_repeated): "
                                              "cursor repeated")


@pytest.mark.parametrize("cursor, changed", [("abc", "abd"), ("ab9", "ab0"), ("aZ.-", "aA.-"), ("..", "..x")])
def test_tamper_changes_the_last_letter_or_digit_within_its_kind(cursor, changed):
    assert tamper(cursor) == changed


@pytest.mark.parametrize("name, judged, named", [
    ("forged cursor", lambda: judge_refusal((["alpha"], None), "cursor 'e30'", "e30"), "The cursor 'e30' was"),
    ("stable replay", lambda: judge_same((["a"], "c1"), (["b"], "c1"), "one cursor", "c0"), "The cursor 'c0' names"),
    ("complete catalog", lambda: judge_walk(catalog(TOOLS[:2], [2]), TOOLS, 2),
     "The catalog the walker read ['alpha', 'beta'] in pages [2] is not"),
])
def test_a_failing_row_is_named_in_its_hint(name, judged, named):
    """The hint names the cursor (or the catalog read) that broke the rule: ``{value}`` in the battery."""
    from course_lib.grading.battery import load_battery
    from course_lib.grading.scorecard import Verdict

    row = next(s for s in load_battery("paging_server")[1] if s.name == name)
    with pytest.raises(Failed) as caught:
        judged()
    found = caught.value.outcome
    assert named in Verdict(row, False, found.observed, found.failure, found).hint
