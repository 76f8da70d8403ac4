"""In-process: the checks of tests/stdio/test_grading_envelope_checker.py's subject that start no process."""
import json

import pytest

from course_lib.grading.envelope_checker import grade_envelope
from course_lib.grading.child import module_source
from course_lib.line_client import WireError, check_reply, require

pytestmark = pytest.mark.anyio


# -- the starter and known-wrong checkers (recorded: fixtures/grading/transcripts/envelope.expected.json) -----

def starter(line, request_id):
    raise NotImplementedError  # return the reply object, or raise WireError(check, message)


def with_asserts(line, request_id):
    reply = json.loads(line)
    assert isinstance(reply, dict), "response object"
    assert reply.get("jsonrpc") == "2.0", "jsonrpc version"
    assert type(reply.get("id")) is int, "id type"
    assert reply["id"] == request_id, "id match"
    assert ("result" in reply) != ("error" in reply), "result xor error"
    return reply


def checked_by_hand(line, request_id, id_is_int):
    """Every check in the chapter's order, the id's type by ``id_is_int(reply)``."""
    try:
        reply = json.loads(line)
    except ValueError:
        raise WireError("stdout_noise", "not JSON") from None
    if not isinstance(reply, dict):
        raise WireError("response_object", "not an object")
    if reply.get("jsonrpc") != "2.0":
        raise WireError("jsonrpc_version", "not 2.0")
    if not id_is_int(reply):
        raise WireError("id_type", "not an int")
    if reply["id"] != request_id:
        raise WireError("id_match", "another id")
    if ("result" in reply) == ("error" in reply):
        raise WireError("result_xor_error", "not exactly one")
    return reply


def accepts_a_boolean_id(line, request_id):
    return checked_by_hand(line, request_id, lambda reply: isinstance(reply.get("id"), int))  # True is an int too


def calls_the_library(line, request_id):
    return check_reply(line, request_id)


def crashes_on_a_notification(line, request_id):
    return checked_by_hand(line, request_id, lambda reply: type(reply["id"]) is int)  # KeyError without an id


def test_the_module_carries_what_the_checker_uses():
    source = module_source(crashes_on_a_notification)
    assert "import json as json" in source and "course_lib.line_checks" in source
    assert "def crashes_on_a_notification" in source and "def checked_by_hand" in source


def uses_the_chapters_require(line, request_id):
    import json
    reply = json.loads(line)
    require(isinstance(reply, dict), "response_object", "not an object")
    return reply


def test_a_helper_the_chapter_imports_is_rebuilt_in_the_child():
    source = module_source(uses_the_chapters_require)  # require = WireError.require, a bound method
    assert "require = _m_require.WireError.require" in source
    namespace = {}
    exec(compile(source, "student_checker.py", "exec"), namespace)
    with pytest.raises(WireError) as caught:
        namespace["uses_the_chapters_require"](b"[1]", 1)
    assert caught.value.check == "response_object"


async def test_a_checker_without_readable_source_is_told_so():
    card = await grade_envelope(len, only=["undamaged session"])
    verdict = card.verdicts[0]
    assert not verdict.passed and verdict.observed.endswith("is not a function defined with def"), card.text()
    assert "def" in verdict.scenario.hint


def test_an_assert_checker_passes_normally_undamaged_and_fails_under_O_where_its_asserts_are_gone():
    """On the recorded replays (fixtures/grading/transcripts/envelope.json): its asserts refuse in a
    normal interpreter, nothing refuses under -O, and the hint says so."""
    from course_lib.tooling.served_judges import judge_envelope
    from course_lib.tooling import transcripts as t

    verdicts = {s.name: judge_envelope(s, outcome) for s, outcome in t.rows("envelope", "with_asserts")}
    assert verdicts["undamaged session"].passed
    damaged = verdicts["jsonrpc 1.0"]
    assert damaged.observed.startswith("normal: raised AssertionError") and "-O: accepted the damaged reply" in \
        damaged.observed
    assert "python -O" in damaged.scenario.hint


def test_the_library_check_reply_is_unavailable_in_the_child():
    from course_lib.tooling.served_judges import judge_envelope
    from course_lib.tooling import transcripts as t

    verdicts = [judge_envelope(s, outcome) for s, outcome in t.rows("envelope", "calls_the_library")]
    assert verdicts and not any(v.passed for v in verdicts)
    assert all("check_reply is unavailable in this exercise" in v.observed for v in verdicts)
