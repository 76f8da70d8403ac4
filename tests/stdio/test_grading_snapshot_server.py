"""The server exercise of 05_snapshot_bundles: the reference passes every row in both eras, the
starter scores 0, and known-wrong read functions (one per failure kind, and one per rule's corner)
fail at their named rows, judged on the wire of real stdio servers."""
import pytest
from mcp import MCPError
from course_lib.grading.core import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.snapshot_server import grade_snapshot_server
from course_lib.servers.snapshot import Snapshots
from course_lib.uris import missing
from scorecard_checks import assert_flagged

from test_grading_snapshot_server_unit import only_r1_gone, parts

pytestmark = pytest.mark.anyio
UNAVAILABLE = -31001  # the snapshot's own application-defined code, the same in both eras
GONE = "Snapshot unavailable; reacquire the whole bundle"
ALL = {"r1 pinned, r2 current", "r2 pinned", "URIs it never served", "r1 dropped", "a revision it never had",
       "r2 still held"}


def falls_back(store, uri):
    """The bug the chapter shows: a revision it no longer has is answered with the current one."""
    revision, document = parts(store, uri)
    docs = store.revisions.get(revision, store.revisions[store.current])
    if not uri.startswith(store.base) or document not in docs:
        raise missing(uri, store.protocol_version)
    return "text/plain", docs[document]


def pinned(revision):
    return revision[:1] == "r" and revision[1:].isdigit()


def serves_current(store, uri):
    """Reads the document's name from the URI and answers the current revision's text."""
    revision, document = parts(store, uri)
    if revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE) if pinned(revision) else missing(uri, store.protocol_version)
    if document not in store.revisions[store.current]:
        raise missing(uri, store.protocol_version)
    return "text/plain", store.revisions[store.current][document]


def wrong_code(store, uri):
    """Refuses a revision it does not hold with -32602, the code of an invalid argument."""
    revision, document = parts(store, uri)
    if revision not in store.revisions or document not in store.revisions[revision]:
        raise MCPError(-32602, GONE)
    return "text/plain", store.revisions[revision][document]


def unlooked(store, uri):
    """Indexes the store without looking first: a KeyError for every URI it does not hold."""
    revision, document = parts(store, uri)
    return "text/plain", store.revisions[revision][document]


def forever(store, uri):
    while True:
        pass


def first_segment(store, uri):
    """Takes the first path segment after the revision as the document: r2/design/extra is served."""
    revision, document = parts(store, uri)
    if revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE)
    document = document.split("/")[0]
    if document not in store.revisions[revision]:
        raise missing(uri, store.protocol_version)
    return "text/plain", store.revisions[revision][document]


def markdown(store, uri):
    """The right texts, as text/markdown."""
    revision, document = parts(store, uri)
    if pinned(revision) and revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE)
    if revision not in store.revisions or document not in store.revisions[revision]:
        raise missing(uri, store.protocol_version)
    return "text/markdown", store.revisions[revision][document]


def vague(store, uri):
    """The era's not-found for every miss, where the revision is gone too."""
    revision, document = parts(store, uri)
    if revision not in store.revisions or document not in store.revisions[revision]:
        raise missing(uri, store.protocol_version)
    return "text/plain", store.revisions[revision][document]


async def test_a_fallback_to_the_current_revision_is_a_missing_refusal():
    card = await grade_snapshot_server(falls_back)
    assert {v.scenario.name for v in card.failures()} == {"r1 dropped", "a revision it never had"}, card.text()
    verdict = assert_flagged(card, "r1 dropped", "r2 still held",
                             "r1/requirements: answered the r2 text 'R2: cancellation visible immediately.\\n' "
                             "instead of -31001")
    assert verdict.failure_class == MISSING_REFUSAL


async def test_serving_the_current_text_for_a_pinned_uri_is_a_wrong_result():
    card = await grade_snapshot_server(serves_current, eras=["2026-07-28"])
    assert {v.scenario.name for v in card.failures()} == {"r1 pinned, r2 current"}, card.text()
    verdict = assert_flagged(card, "r1 pinned, r2 current", "r2 pinned",
                             "r1/requirements: answered the r2 text")
    assert verdict.failure_class == WRONG_RESULT


async def test_the_wrong_error_code_is_a_wrong_refusal():
    card = await grade_snapshot_server(wrong_code, eras=["legacy"])
    assert {v.scenario.name for v in card.failures()} == {"URIs it never served", "r1 dropped",
                                                          "a revision it never had"}, card.text()
    verdict = card.verdict_of("r1 dropped")
    assert verdict.failure_class == WRONG_REFUSAL
    assert verdict.observed == f"r1/requirements: answered MCPError -32602: {GONE}, not -31001 {GONE!r}"


async def test_a_function_that_raises_its_own_error_is_a_crash():
    card = await grade_snapshot_server(unlooked, eras=["legacy"])
    assert {v.scenario.name for v in card.failures()} == {"URIs it never served", "r1 dropped",
                                                          "a revision it never had"}, card.text()
    assert {v.failure_class for v in card.failures()} == {CRASH}
    assert card.verdict_of("r1 dropped").observed == "your code crashed: KeyError: 'r1'"


async def test_a_read_that_never_returns_is_stopped_at_the_budget():
    card = await grade_snapshot_server(forever, only=["r1 pinned, r2 current", "r2 pinned"], eras=["legacy"],
                                       budget=2)
    assert [v.failure_class for v in card.verdicts] == [HANG, HANG], card.text()
    assert card.verdict_of("r2 pinned").observed == "not asked: an earlier read got no answer"


@pytest.mark.parametrize("wrong, failing, control", [
    (only_r1_gone, {"a revision it never had"}, "r1 dropped"),
    (first_segment, {"URIs it never served"}, "r2 pinned"),
    (markdown, {"r1 pinned, r2 current", "r2 pinned", "r2 still held"}, "r1 dropped"),
    (vague, {"r1 dropped", "a revision it never had"}, "URIs it never served"),
])
async def test_each_rule_is_checked_across_its_domain(wrong, failing, control):
    card = await grade_snapshot_server(wrong, eras=["legacy"])
    assert {v.scenario.name for v in card.failures()} == failing, card.text()
    assert card.verdict_of(control).passed
    assert ALL - failing


def borrowed(store, uri):
    """The course server's own read side, fed the store: the exercise asks for it, so it is unavailable."""
    state = Snapshots("expired")
    state.retained, state.current = set(store.revisions), store.current
    return state.read(uri)


async def test_the_course_server_is_unavailable_to_the_exercise():
    card = await grade_snapshot_server(borrowed, only=["r2 pinned"], eras=["legacy"])
    assert card.verdict_of("r2 pinned").failure_class == CRASH
    assert "Snapshots is unavailable in this exercise" in card.verdict_of("r2 pinned").observed
