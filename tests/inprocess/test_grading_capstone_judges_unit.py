"""The capstone's judges of ``refresh`` and ``read`` on recorded outcomes, in-process: the rows of
``fixtures/grading/capstone.json``, the state a refresh left behind as ``_run_refresh`` records it, the
reads that reached the server, and the documents' texts of ``fixtures/atlas/documents.json``.
(``bundle()`` is judged by chapter 05's judges: ``test_grading_bundle_judges_unit.py``.)"""
import pytest
from mcp import MCPError

from course_lib.errors import CatalogError, CheckFailed
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery, rows_of
from course_lib.grading.capstone import URI_CHECK, documents, judge_reads, judge_refresh

_, SCENARIOS, SPEC = load_battery("capstone")
ROWS = {s.name: s for s in SCENARIOS if s.era == "legacy"}
NAMES, DUPLICATE, ENDLESS = ("refresh: \"\" and an empty page", "refresh: conflicting duplicate",
                             "refresh: endless catalog")
ABC = ["alpha", "beta", "gamma"]
HINT, UNTOUCHED = "the row's hint", "the untouched hint"
VALID = "accepts alpha -> {\"alpha\": \"a\"}"


def refresh(name, outcome, **state):
    recorded = {"touched": 0, "changed": False, "validated": VALID, "now": VALID, "opened": 1, "page_1": 1, **state}
    return judge_refresh(ROWS[name], outcome.with_wire((), **recorded), HINT, UNTOUCHED)


def test_a_whole_catalog_or_the_rows_refusal_with_the_active_session_untouched_passes():
    for name, outcome in [(NAMES, o.returned(ABC)), (DUPLICATE, o.raised(CatalogError("duplicate_name", "x"))),
                          (ENDLESS, o.raised(CatalogError("page_budget", "x")))]:
        for state in ({}, {"opened": 2, "page_1": 2}, {"validated": None, "now": None}):
            v = refresh(name, outcome, **state)
            assert (v.passed, v.failure_class) == (True, None), v.observed


@pytest.mark.parametrize("state, fact", [
    ({"touched": 1}, "sent 1 message(s) on the active session during the refresh"),
    ({"touched": 3, "changed": True, "now": "rejects alpha"},
     "sent 3 message(s) on the active session during the refresh"),
    ({"changed": True}, "changed the active session's output schemas without a message"),
    ({"changed": True, "now": "rejects alpha"}, "changed the active session's output schemas without a message"),
    ({"now": "rejects alpha: MCPError"}, f"the active session now rejects alpha: MCPError (before: {VALID})"),
])
def test_anything_done_to_the_active_session_fails_even_a_right_answer(state, fact):
    for name, outcome in [(NAMES, o.returned(ABC)), (DUPLICATE, o.raised(CatalogError("duplicate_name", "x"))),
                          (DUPLICATE, o.raised(ValueError("own")))]:
        v = refresh(name, outcome, **state)
        assert (v.passed, v.failure_class) == (False, o.WRONG_RESULT), v.observed
        assert v.observed.startswith(fact + "; ") and v.observed.count("; ") == 1, v.observed
        assert v.hint.startswith(UNTOUCHED)


def test_page_1_must_reach_the_candidate_and_a_candidate_must_be_opened():
    v = refresh(NAMES, o.returned(ABC), page_1=0)
    assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_RESULT,
                                                       f"page 1 never reached the candidate server; returned {ABC}")
    assert v.hint.startswith(HINT)
    v = refresh(NAMES, o.returned(ABC), opened=0, page_1=0)
    assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_RESULT, "returned without opening a candidate")
    v = refresh(NAMES, o.returned(ABC), opened=0, touched=2)
    assert v.observed == "sent 2 message(s) on the active session during the refresh; " \
                         "returned without opening a candidate"


@pytest.mark.parametrize("name, outcome, failure, observed", [
    (NAMES, o.returned(["alpha", "beta"]), o.WRONG_RESULT, "returned ['alpha', 'beta']"),
    (NAMES, o.returned(ABC + ["alpha"]), o.WRONG_RESULT, "returned ['alpha', 'beta', 'gamma', 'alpha']"),
    (NAMES, o.returned("alpha"), o.WRONG_RESULT, "returned str, not a list of names"),
    (NAMES, o.raised(CatalogError("duplicate_name", "x")), o.WRONG_REFUSAL, "refused: CatalogError(duplicate_name): x"),
    (DUPLICATE, o.returned(["alpha"]), o.MISSING_REFUSAL,
     "returned a partial catalog ['alpha'] instead of refusing (duplicate_name)"),
    (DUPLICATE, o.raised(CatalogError("page_budget", "x")), o.WRONG_REFUSAL, "refused: CatalogError(page_budget): x"),
    (ENDLESS, o.raised(CatalogError("cursor_repeated", "x")), o.WRONG_REFUSAL,
     "refused: CatalogError(cursor_repeated): x"),
    # the server's error passed on, a typed error of another kind, the student's own exception, a hang
    (ENDLESS, o.raised(MCPError(-32602, "bad cursor")), o.CRASH, "your code crashed: MCPError -32602: bad cursor"),
    (DUPLICATE, o.raised(CheckFailed("duplicate_name", "x")), o.CRASH, "your code crashed: CheckFailed"),
    (DUPLICATE, o.raised(KeyError("alpha")), o.CRASH, "your code crashed: KeyError: 'alpha'"),
    (NAMES, o.hung(20), o.HANG, "no result within 20 s (stopped)"),
])
def test_a_wrong_catalog_or_refusal_fails_with_its_own_kind(name, outcome, failure, observed):
    v = refresh(name, outcome)
    assert (v.passed, v.failure_class) == (False, failure)
    assert v.observed.startswith(observed), v.observed
    assert v.hint.endswith(HINT)


# -- read ----------------------------------------------------------------------------------------

READ = ROWS["read: allowed and hostile URIs"]
ROW = rows_of(SPEC)[READ.name]
ALLOWED = set(SPEC["allowed"])
DOCUMENTS = documents()
URIS = ROW["uris"]
FIRST_ALLOWED, FIRST_HOSTILE = URIS[0], URIS[1]


def refusal(uri):
    return o.raised(CheckFailed(URI_CHECK, f"{uri} is not allowed"))


def right(uri):
    return o.returned(DOCUMENTS[uri]) if uri in ALLOWED else refusal(uri)


def reads(changes=None, extra=(), reached=None):
    answers = {uri: right(uri) for uri in URIS} | (changes or {})
    sent = [u for u in URIS if u in ALLOWED] if reached is None else reached
    return judge_reads(READ, ROW, answers, sent + list(extra), ALLOWED, DOCUMENTS, HINT)


def test_the_allowed_texts_read_from_the_server_and_every_other_uri_refused_unsent_pass():
    assert FIRST_ALLOWED in ALLOWED and FIRST_HOSTILE not in ALLOWED and len(ALLOWED & set(URIS)) == 3
    v = reads()
    assert (v.passed, v.observed) == (True, "read 3, refused the others unsent")


@pytest.mark.parametrize("uri", [u for u in URIS if u not in ALLOWED][:4])
def test_a_hostile_uri_that_reached_the_server_fails_even_when_refused_afterwards(uri):
    v = reads(extra=[uri])
    assert (v.passed, v.failure_class) == (False, o.WRONG_RESULT)
    assert v.observed == f"1 URI(s) outside the allowlist reached the server, e.g. {uri!r}"
    crashed = reads({FIRST_ALLOWED: o.raised(ValueError("x"))}, extra=[uri])
    assert crashed.failure_class == o.WRONG_RESULT and crashed.observed.endswith("(and 1 more)")


@pytest.mark.parametrize("changes, reached, failure, observed", [
    ({FIRST_ALLOWED: o.returned("# a cached copy")}, None, o.WRONG_RESULT,
     f"{FIRST_ALLOWED!r}: returned '# a cached copy', not the document's text"),
    ({FIRST_ALLOWED: o.returned(DOCUMENTS[URIS[-1]])}, None, o.WRONG_RESULT, f"{FIRST_ALLOWED!r}: returned \"# Atlas"),
    ({}, [u for u in URIS if u in ALLOWED][1:], o.WRONG_RESULT,
     f"{FIRST_ALLOWED!r}: returned its text, but no read reached the server"),
    ({FIRST_ALLOWED: refusal(FIRST_ALLOWED)}, None, o.WRONG_RESULT,
     "docs/requirements: refused: CheckFailed(check_failed): [uri_allowlist]"),
    ({FIRST_ALLOWED: o.raised(MCPError(-32602, "no"))}, None, o.CRASH,
     "docs/requirements: your code crashed: MCPError"),
    ({FIRST_ALLOWED: o.raised(TypeError("x"))}, None, o.CRASH, "docs/requirements: your code crashed: TypeError: x"),
    ({FIRST_ALLOWED: o.hung(20)}, None, o.HANG, "docs/requirements: no result within 20 s"),
    ({FIRST_HOSTILE: o.returned(DOCUMENTS[URIS[-1]])}, None, o.WRONG_RESULT,
     f"{FIRST_HOSTILE!r}: returned \"# Atlas"),
    ({FIRST_HOSTILE: o.returned(None)}, None, o.WRONG_RESULT, f"{FIRST_HOSTILE!r}: returned None instead of refusing"),
    ({FIRST_HOSTILE: o.raised(CheckFailed("uri_shape", "x"))}, None, o.WRONG_RESULT,
     f"{FIRST_HOSTILE!r}: refused: CheckFailed(check_failed): [uri_shape] x"),
    ({FIRST_HOSTILE: o.raised(MCPError(-32602, "no"))}, None, o.CRASH,
     f"{FIRST_HOSTILE!r}: your code crashed: MCPError"),
    ({FIRST_HOSTILE: o.raised(ValueError("x"))}, None, o.CRASH, f"{FIRST_HOSTILE!r}: your code crashed: ValueError"),
    ({FIRST_HOSTILE: o.hung(20, "not asked: an earlier read did not return")}, None, o.HANG,
     f"{FIRST_HOSTILE!r}: not asked: an earlier read did not return"),
])
def test_each_wrong_answer_to_one_uri_fails_with_its_own_kind(changes, reached, failure, observed):
    v = reads(changes, reached=reached)
    assert (v.passed, v.failure_class) == (False, failure), v.observed
    assert v.observed.startswith(observed) and "more)" not in v.observed, v.observed
    assert v.hint.endswith(HINT)
    assert v.outcome == (next(iter(changes.values())) if failure in (o.CRASH, o.HANG) else o.Outcome(o.RETURNED))
    assert v.outcome.state["value"] == repr(next(iter(changes), FIRST_ALLOWED)), "the hint names the URI"


def test_the_first_crash_or_hang_names_the_failure_and_every_problem_is_counted():
    crash, hang = o.raised(ValueError("first")), o.hung(20)
    v = reads({FIRST_ALLOWED: crash, FIRST_HOSTILE: hang, URIS[2]: o.returned("x")})
    assert (v.failure_class, v.outcome) == (o.CRASH, crash)
    assert v.observed.endswith("(and 2 more)")
    v = reads({FIRST_ALLOWED: hang, FIRST_HOSTILE: crash})
    assert (v.failure_class, v.outcome) == (o.HANG, hang)
