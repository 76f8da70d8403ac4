"""Chapter 05's server judge on recorded answers, in-process (no server): each rule of a read fails
each kind of wrong answer. The texts are the fixed oracle (``fixtures/snapshot/expected.json``);
the expectations are written by hand in the shape of ``fixtures/grading/snapshot_server.json``."""
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.chapters.snapshot_lab import load_oracle
from course_lib.grading.outcome import MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.served import Failed
from course_lib.grading.snapshot_server import judge_read

ORACLE = load_oracle()
R1 = "project://atlas/r1/design"
R2 = "project://atlas/r2/design"
GONE = "Snapshot unavailable; reacquire the whole bundle"
TEXTS_R1 = {"texts": "r1"}
UNAVAILABLE = -31001  # the snapshot's own application-defined code, the same in both eras
REFUSED = {"code": UNAVAILABLE}
GONE_EXACTLY = {"code": UNAVAILABLE, "message": GONE}


def text(uri, body, mime="text/plain"):
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=body)])


def blob(uri):
    return types.ReadResourceResult(contents=[types.BlobResourceContents(uri=uri, mime_type="text/plain",
                                                                         blob="aGVsbG8=")])


def error(code, message="Resource not found"):
    return MCPError(code, message)


def failure(expect, uri, answer):
    with pytest.raises(Failed) as caught:
        judge_read(expect, uri, answer, ORACLE)
    return caught.value.outcome.failure, caught.value.outcome.observed


def test_the_fixed_text_as_text_plain_passes():
    assert judge_read(TEXTS_R1, R1, text(R1, ORACLE["r1"][R1]), ORACLE) is None


@pytest.mark.parametrize("answer, said", [
    (error(UNAVAILABLE, GONE), "r1/design: answered MCPError -31001"),
    (error(-32602, "Invalid params"), "r1/design: answered MCPError -32602"),
])
def test_any_refusal_where_a_text_is_due_is_a_wrong_refusal(answer, said):
    kind, observed = failure(TEXTS_R1, R1, answer)
    assert kind == WRONG_REFUSAL and observed.startswith(said) and observed.endswith("not its r1 text")


@pytest.mark.parametrize("answer, what", [
    (text(R1, ORACLE["r2"][R2]), "the r2 text"),              # another revision's text: the fallback
    (text(R1, "D3: something else.\n"), "the ? text"),       # a text of no revision
    (text(R1, ""), "the ? text"),
    (blob(R1), "the no text"),                                # no text at all
])
def test_any_other_text_is_a_wrong_result_named_by_its_revision(answer, what):
    kind, observed = failure(TEXTS_R1, R1, answer)
    assert kind == WRONG_RESULT and f"answered {what}" in observed and observed.endswith("not the fixed r1 text")


@pytest.mark.parametrize("mime", ["text/markdown", "application/json", None])
def test_the_right_text_of_another_type_is_a_wrong_result(mime):
    kind, observed = failure(TEXTS_R1, R1, text(R1, ORACLE["r1"][R1], mime))
    assert (kind, observed) == (WRONG_RESULT, f"r1/design: the right text as {mime}, not text/plain")


@pytest.mark.parametrize("expect", [REFUSED, GONE_EXACTLY])
@pytest.mark.parametrize("body, revision", [(ORACLE["r2"][R2], "r2"), (ORACLE["r1"][R1], "r1"), ("other", "?")])
def test_a_text_where_a_refusal_is_due_is_a_missing_refusal(expect, body, revision):
    kind, observed = failure(expect, R1, text(R1, body))
    assert kind == MISSING_REFUSAL and observed.startswith(f"r1/design: answered the {revision} text")


@pytest.mark.parametrize("expect", [REFUSED, GONE_EXACTLY])
@pytest.mark.parametrize("code", [-32602, -32603, -32600])
def test_another_code_is_a_wrong_refusal_whatever_its_message(expect, code):
    kind, observed = failure(expect, R1, error(code, GONE))
    assert kind == WRONG_REFUSAL and observed.startswith(f"r1/design: answered MCPError {code}")


@pytest.mark.parametrize("message", ["Resource not found", "snapshot unavailable", ""])
def test_the_right_code_with_another_message_fails_where_the_message_is_required(message):
    kind, observed = failure(GONE_EXACTLY, R1, error(UNAVAILABLE, message))
    assert kind == WRONG_REFUSAL and observed.endswith(f"not -31001 {GONE!r}")
    assert judge_read(REFUSED, R1, error(UNAVAILABLE, message), ORACLE) is None  # any message where none is named


def test_the_right_code_and_message_pass():
    assert judge_read(GONE_EXACTLY, R1, error(UNAVAILABLE, GONE), ORACLE) is None


NOT_FOUND = {"not_found": True}
MISS = "project://atlas/r2/notes"


@pytest.mark.parametrize("era, code, data, passes", [
    ("legacy", -32002, {"uri": MISS}, True),        # the 2025-11-25 code
    ("legacy", -32602, {"uri": MISS}, True),        # the 2026-07-28 code, recognised in 2025-11-25 too
    ("2026-07-28", -32602, {"uri": MISS}, True),
    ("2026-07-28", -32002, {"uri": MISS}, False),   # retired at 2026-07-28: MUST NOT be sent
    ("legacy", -32602, None, False),                # -32602 without data.uri is any bad parameter
    ("legacy", -32002, {"uri": "project://atlas/r2/other"}, False),  # data.uri must name the URI sent
    ("2026-07-28", UNAVAILABLE, {"uri": MISS}, False),  # the snapshot's domain code is not "not found"
])
def test_a_uri_never_served_gets_the_eras_not_found(era, code, data, passes):
    answer = MCPError(code, "Resource not found", data)
    if passes:
        assert judge_read(NOT_FOUND, MISS, answer, ORACLE, era) is None
    else:
        with pytest.raises(Failed) as caught:
            judge_read(NOT_FOUND, MISS, answer, ORACLE, era)
        assert caught.value.outcome.failure == WRONG_REFUSAL


def test_a_failing_read_is_named_in_the_rows_hint():
    """The hint names the URI that was answered wrong (``{value}`` in the battery's hints)."""
    from course_lib.grading.battery import load_battery
    from course_lib.grading.scorecard import Verdict

    _, scenarios, _ = load_battery("snapshot_server")
    row = next(s for s in scenarios if s.name == "r1 pinned, r2 current")
    with pytest.raises(Failed) as caught:
        judge_read(TEXTS_R1, R1, text(R1, "another text"), ORACLE)
    found = caught.value.outcome
    assert f"The pinned URI {R1!r} names its revision" in Verdict(row, False, found.observed, found.failure, found).hint
