"""The URI allowlist grader: the reference solution passes, known-wrong checks fail at the expected scenario."""
import posixpath
import time
from urllib.parse import unquote, urlsplit

import pytest

from course_lib.grading.allowlist import grade_allowlist
from course_lib.tooling.student_copy import reference_solution
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio

BASE = "project://atlas/docs/"
CANONICAL = {BASE + "requirements", BASE + "design", BASE + "release%20notes"}


def reference(notebook: str, name: str):
    return reference_solution(notebook, name)


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


async def async_exact(uri):
    return uri in CANONICAL


def hangs(uri):
    time.sleep(3)  # longer than the budget below; a finite sleep so the worker thread ends
    return True


def not_a_bool(uri):
    return "yes" if uri in CANONICAL else ""


async def test_reference_solution_passes_everything():
    card = await grade_allowlist(reference("05_resources_and_uris.ipynb", "reference_my_is_allowed"))
    assert card.passed, card.text()
    assert len(card.verdicts) == 25  # 21 URI rows + 2 server checks x 2 eras
    assert {v.scenario.era for v in card.verdicts} == {"any", "legacy", "2026-07-28"}


async def test_an_async_check_is_graded_too():
    card = await grade_allowlist(async_exact, eras=["legacy"])
    assert card.passed, card.text()


@pytest.mark.parametrize("solution, failing, control, observed", [
    (resolves_dots, "dot-dot back into docs", "traversal ../private", "returned True (the server answers not-found)"),
    (resolves_dots, "allowed URIs read OK", "served URIs are allowed", "allowed 6 URIs the server refuses"),
    (unquotes_first, "encoded letter", "plus for space", "returned True (the server answers not-found)"),
    (unquotes_first, "raw space", "requirements", "returned True (the server answers not-found)"),
    (unquotes_first, "allowed URIs read OK", "encoded dot-dot", "allowed 2 URIs the server refuses"),
    (prefix_match, "traversal ../private", "other scheme", "returned True (the server answers not-found)"),
    (prefix_match, "missing document", "served URIs are allowed", "returned True (the server answers not-found)"),
    (refuses_everything, "served URIs are allowed", "traversal ../private", "refused served ["),
    (refuses_everything, "requirements", "allowed URIs read OK", "returned False"),
    (not_a_bool, "requirements", "requirements", "returned 'yes', not True or False"),
])
async def test_wrong_solutions_are_flagged_at_their_scenario(solution, failing, control, observed):
    card = await grade_allowlist(solution, eras=["legacy"])
    assert_flagged(card, failing, control, observed)
    assert "FAIL" in card.text() and "expected" in card.text()


async def test_a_check_that_hangs_gets_a_verdict_within_the_budget():
    card = await grade_allowlist(hangs, only=["requirements", "design"], budget=0.5)
    first, second = card.verdicts
    assert not first.passed and first.observed.startswith("no result within 0.5 s")
    assert not second.passed and second.observed == "not asked: an earlier call did not return"
