"""The URI allowlist grader (chapter 6): the starter scores 0, wrong checks fail at their scenario,
a correct check of another style and the reference pass, and a check that loops is stopped."""
import posixpath
import time
from urllib.parse import unquote, urlsplit

import pytest

from course_lib.grading.allowlist import grade_allowlist
from course_lib.grading.core import CRASH, HANG, WRONG_RESULT
from course_lib.tooling.student_copy import reference_solution
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio

BASE = "project://atlas/docs/"
CANONICAL = {BASE + "requirements", BASE + "design", BASE + "release%20notes"}


def reference():
    """The chapter's reference check (``reference_my_is_allowed``, or ``my_is_allowed`` in an older chapter)."""
    return reference_solution("06_resources_and_uris.ipynb", "reference_my_is_allowed")


def starter(uri: str) -> bool:
    raise NotImplementedError("write your allowlist check here")


def resolves_dots(uri):
    """Normalises the path first, so a traversal back into the base is accepted."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}{posixpath.normpath(parts.path)}" in CANONICAL


def unquotes_first(uri):
    return unquote(uri) in {unquote(u) for u in CANONICAL}


def prefix_match(uri):
    return uri.startswith(BASE)


def refuses_everything(uri):
    return False


def not_a_bool(uri):
    return "yes" if uri in CANONICAL else ""


def crashes_on_odd_input(uri):
    return uri.split("/docs/")[1] in {"requirements", "design", "release%20notes"}  # IndexError elsewhere


def strips_whitespace(uri):
    return uri.strip() in CANONICAL


async def async_exact(uri):
    """Another style: an async check, a tuple and a loop rather than a set."""
    for allowed in (BASE + "requirements", BASE + "design", BASE + "release%20notes"):
        if uri == allowed:
            return True
    return False


def loops(uri):
    while True:  # never returns, never sleeps
        pass


def sleeps(uri):
    time.sleep(60)
    return True


async def async_loops(uri):
    while True:
        pass


async def test_the_untouched_starter_scores_zero():
    card = await grade_allowlist(starter)
    assert len(card.verdicts) == 25 and card.failures() == card.verdicts, card.text()
    crashed = "your code crashed: NotImplementedError: write your allowlist check here"
    assert card.verdict_of("requirements").observed == crashed
    assert card.verdict_of("served URIs are allowed", "legacy").observed == crashed
    assert card.verdict_of("allowed URIs read OK", "legacy").observed == \
        "allowed no URI at all, so nothing could be read"
    assert card.text().endswith("0/25 scenarios pass")
    assert "Time budget: 10 s a call" in card.text()


async def test_a_correct_check_in_another_style_passes():
    card = await grade_allowlist(async_exact)
    assert card.passed, card.text()


@pytest.mark.parametrize("solution, failing, control, observed", [
    (resolves_dots, "dot-dot back into docs", "traversal ../private", "returned True (the server answers not-found)"),
    (resolves_dots, "allowed URIs read OK", "served URIs are allowed", "allowed 6 URIs the server refuses"),
    (unquotes_first, "encoded letter", "plus for space", "returned True (the server answers not-found)"),
    (unquotes_first, "raw space", "requirements", "returned True (the server answers not-found)"),
    (prefix_match, "traversal ../private", "other scheme", "returned True (the server answers not-found)"),
    (prefix_match, "missing document", "served URIs are allowed", "returned True (the server answers not-found)"),
    (refuses_everything, "served URIs are allowed", "traversal ../private", "refused served ["),
    (refuses_everything, "allowed URIs read OK", "traversal ../private",
     "allowed no URI at all, so nothing could be read"),  # no vacuous pass
    (not_a_bool, "requirements", "requirements", "returned 'yes', not True or False"),
    (crashes_on_odd_input, "other scheme", "requirements", "your code crashed: IndexError: list index out of range"),
    (strips_whitespace, "leading space", "trailing slash", "returned True (the server answers not-found)"),
])
async def test_wrong_checks_are_flagged_at_their_scenario(solution, failing, control, observed):
    card = await grade_allowlist(solution, eras=["legacy"])
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == (CRASH if observed.startswith("your code crashed") else WRONG_RESULT)
    assert "FAIL" in card.text() and "expected" in card.text()


@pytest.mark.parametrize("check", [loops, sleeps, async_loops])
async def test_a_check_that_never_returns_is_stopped_within_the_budget(check):
    started = time.monotonic()
    card = await grade_allowlist(check, only=["requirements", "design"], budget=0.5)
    assert time.monotonic() - started < 5
    first, second = card.verdicts
    assert not first.passed and first.observed == "no result within 0.5 s (stopped)"
    assert first.failure_class == HANG
    assert not second.passed and second.observed == "not asked: an earlier call was stopped"
