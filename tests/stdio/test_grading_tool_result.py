"""The exercise of 03_schema_cache: the reference passes every row in both eras, the starter scores
0, and one known-wrong result function per failure kind fails at its named row, judged on the
reply frames of real stdio servers."""
import time

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.chapters import schema_lab
from course_lib.grading.outcome import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.tool_result import grade_tool_result
from scorecard_checks import assert_flagged

from test_grading_tool_result_unit import text

pytestmark = pytest.mark.anyio
LEGACY = ["legacy"]


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


def hangs(tool, value):
    time.sleep(600)


def with_the_chapters_check(tool, value):
    if tool.output_schema is None or schema_lab.accepts(tool.output_schema, value):
        return unchanged(tool, value)
    return always_refused(tool, value)


@pytest.mark.parametrize("wrong, failing, control, kind, observed", [
    (unchanged, "integer where string declared", "string, as declared", MISSING_REFUSAL, "sent isError=false"),
    (always_refused, "string, as declared", "integer where string declared", WRONG_REFUSAL, "refused a value"),
    (protocol_error, "required key missing", "integer, as declared", WRONG_REFUSAL, "answered the JSON-RPC error"),
    (refused_with_content, "string where integer declared", "integer, as declared", WRONG_RESULT, "isError true, but"),
    (rounded, "string, as declared", "no declared schema", WRONG_RESULT, "sent isError=false"),
    (python_text, "integer, as declared", "integer where string declared", WRONG_RESULT,
     'sent the texts ["{\'value\': 7}"]: none is the value\'s JSON, {"value": 7}'),
    (crashes, "string, as declared", "string, as declared", CRASH, "your code crashed: KeyError"),
    (with_the_chapters_check, "string, as declared", "string, as declared", CRASH,
     "your code crashed: Unavailable: course_lib.chapters.schema_lab.accepts is unavailable"),
])
async def test_a_known_wrong_function_fails_at_its_row(wrong, failing, control, kind, observed):
    card = await grade_tool_result(wrong, eras=LEGACY)
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == kind and not card.passed


async def test_a_function_that_never_returns_is_stopped_and_the_rest_not_asked():
    card = await grade_tool_result(hangs, eras=LEGACY, budget=2)
    first, *rest = card.verdicts
    assert first.failure_class == HANG and first.observed.startswith("no result within 2 s")
    assert rest and all(v.failure_class == HANG and v.observed.startswith("not asked") for v in rest)
