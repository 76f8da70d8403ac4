"""In-process: the checks of tests/stdio/test_grading_tool_result.py's subject that start no process."""
import json

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.chapters import schema_lab
from course_lib.grading.outcome import CRASH, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.served import Failed
from course_lib.grading.tool_result import judge

pytestmark = pytest.mark.anyio


def text(value):
    return [types.TextContent(type="text", text=json.dumps(value))]


# -- the starter and known-wrong result functions (recorded: fixtures/grading/transcripts/tool_result.expected.json;
# protocol_error and crashes are graded on real stdio servers too, tests/stdio/test_grading_tool_result.py) ------

def starter(tool, value):
    raise NotImplementedError("your result here")


def unchanged(tool, value):
    """The chapter's own server: whatever the tool computed goes out as structured content."""
    return types.CallToolResult(content=text(value), structured_content=value)


def always_refused(tool, value):
    return types.CallToolResult(content=[types.TextContent(type="text", text="no")], is_error=True)


def protocol_error(tool, value):
    """Refuses a non-conforming value with a JSON-RPC error instead of an isError result."""
    import jsonschema
    try:
        jsonschema.validate(value, tool.output_schema or {})
    except jsonschema.ValidationError as exc:
        raise MCPError(types.INVALID_PARAMS, exc.message)
    return types.CallToolResult(content=text(value), structured_content=value)


def refused_with_content(tool, value):
    """isError true, but the non-conforming value is still sent as structured content."""
    import jsonschema
    try:
        jsonschema.validate(value, tool.output_schema or {})
    except jsonschema.ValidationError:
        return types.CallToolResult(content=text(value), structured_content=value, is_error=True)
    return types.CallToolResult(content=text(value), structured_content=value)


def rounded(tool, value):
    """Sends a structured value of its own, not the one the tool computed (its text is right)."""
    return types.CallToolResult(content=text(value), structured_content={"value": "new"})


def python_text(tool, value):
    """Refuses rightly, but the text of a value it sends is Python's spelling, not JSON."""
    import jsonschema
    try:
        jsonschema.validate(value, tool.output_schema or {})
    except jsonschema.ValidationError:
        return always_refused(tool, value)
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(value))], structured_content=value)


def crashes(tool, value):
    return {"value": value}["missing"]


def with_the_chapters_check(tool, value):
    if tool.output_schema is None or schema_lab.accepts(tool.output_schema, value):
        return unchanged(tool, value)
    return always_refused(tool, value)


def judged(expect, reply, value):
    """(failure kind or None, observed) of ``judge`` on a recorded reply frame."""
    try:
        return None, judge(expect, reply, value)
    except Failed as failed:
        return failed.outcome.failure, failed.outcome.observed


def test_the_judge_reads_the_reply_frame():
    ok = {"result": {"content": [{"type": "text", "text": '{"value": 7}'}], "structuredContent": {"value": 7}}}
    refused = {"result": {"content": [{"type": "text", "text": "why"}], "isError": True}}
    assert judged("structured", ok, {"value": 7}) == (None, "isError=false, structuredContent={\"value\": 7}")
    assert judged("structured", ok, {"value": 8})[0] == WRONG_RESULT
    assert judged("is_error", refused, {"value": 7})[0] is None
    assert judged("is_error", ok, {"value": 7})[0] == MISSING_REFUSAL
    assert judged("plain", refused, {"value": 7})[0] == WRONG_REFUSAL
    crashed = {"error": {"code": -32603, "message": "crashed: KeyError: 'x'", "data": {"crashed": "KeyError", "message": "'x'"}}}
    assert judged("plain", crashed, None) == (CRASH, "your code crashed: KeyError: 'x'")
    assert judged("plain", {"error": {"code": -32603, "message": "Internal error"}}, None)[0] == WRONG_REFUSAL
    # isError true must come with one text and no structuredContent
    both = {"result": {"content": [{"type": "text", "text": "why"}], "isError": True, "structuredContent": {}}}
    assert judged("is_error", both, {"value": 7})[0] == WRONG_RESULT
    for content in ([], [{"type": "text", "text": "  "}], [{"type": "image", "data": "", "mimeType": "image/png"}]):
        assert judged("is_error", {"result": {"content": content, "isError": True}}, None)[0] == WRONG_RESULT
    # the text is read too: the value's JSON, for a client that reads no structuredContent
    assert judged("plain", ok, {"value": 7})[0] is None
    assert judged("plain", ok, {"value": 8}) == (WRONG_RESULT, 'sent the texts ["{\\"value\\": 7}"]: none is the '
                                                              'value\'s JSON, {"value": 8}')
    for texts in ([], [{"type": "text", "text": "{'value': 7}"}], [{"type": "text", "text": "7"}]):
        assert judged("structured", {"result": {"content": texts, "structuredContent": {"value": 7}}},
                      {"value": 7})[0] == WRONG_RESULT
    # a refusal of a conforming value is told with its text, or without one
    assert judged("plain", refused, {"value": 7}) == (WRONG_REFUSAL, "refused a value that conforms: isError true (why)")
    bare = {"result": {"content": [], "isError": True}}
    assert judged("plain", bare, {"value": 7}) == (WRONG_REFUSAL, "refused a value that conforms: isError true ()")


def test_a_failing_reply_is_named_in_the_rows_hint():
    """The hint names the value the row sent (``{value}`` in the battery's hints)."""
    from course_lib.grading.battery import load_battery
    from course_lib.grading.scorecard import Verdict

    _, scenarios, _ = load_battery("tool_result")
    row = next(s for s in scenarios if s.name == "integer where string declared")
    with pytest.raises(Failed) as caught:
        judge("is_error", {"result": {"content": [{"type": "text", "text": "7"}], "structuredContent": {"value": 7}}},
              {"value": 7})
    found = caught.value.outcome
    assert "the value {\"value\": 7} against" in Verdict(row, False, found.observed, found.failure, found).hint
