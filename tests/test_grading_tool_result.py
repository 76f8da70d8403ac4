"""The exercise of 03_schema_cache: the reference passes every row in both eras, the starter scores
0, and one known-wrong result function per failure kind fails at its named row, judged on the
reply frames of real stdio servers."""
import ast
import importlib.util
import json
import time

import mcp_types as types
import nbformat
import pytest
from mcp import MCPError

from course_lib.chapters import schema_lab
from course_lib.grading.outcome import CRASH, HANG, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.served import Failed
from course_lib.grading.tool_result import grade_tool_result, judge
from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import solution_sources
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio
LEGACY = ["legacy"]


def reference(tmp_path):
    """``reference_my_tool_result`` exactly as the chapter's hidden solution defines it, from a file."""
    nb = nbformat.read(NOTEBOOKS / "03_schema_cache.ipynb", as_version=4)
    tree = ast.parse("\n".join(solution_sources(nb)))
    tree.body = [node for node in tree.body if not any(isinstance(n, ast.Await) for n in ast.walk(node))]
    path = tmp_path / "chapter_reference.py"
    path.write_text(ast.unparse(tree), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("chapter_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_my_tool_result


def starter(tool, value):
    raise NotImplementedError("your result here")


def text(value):
    return [types.TextContent(type="text", text=json.dumps(value))]


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
    """Sends a value of its own, not the one the tool computed."""
    return types.CallToolResult(content=text({"value": "new"}), structured_content={"value": "new"})


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


def judged(expect, reply, value):
    """(failure kind or None, observed) of ``judge`` on a recorded reply frame."""
    try:
        return None, judge(expect, reply, value)
    except Failed as failed:
        return failed.outcome.failure, failed.outcome.observed


def test_the_judge_reads_the_reply_frame():
    ok = {"result": {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"value": 7}}}
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
    # a tool without an outputSchema: any result that is no error passes, whatever it carries
    assert judged("plain", ok, {"value": 8})[0] is None
    # a refusal of a conforming value is told with its text, or without one
    assert judged("plain", refused, {"value": 7}) == (WRONG_REFUSAL, "refused a value that conforms: isError true (why)")
    bare = {"result": {"content": [], "isError": True}}
    assert judged("plain", bare, {"value": 7}) == (WRONG_REFUSAL, "refused a value that conforms: isError true ()")
