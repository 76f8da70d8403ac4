"""The exercise of 08_stateless_wire: ``my_call_tool(name, arguments, catalog)`` as the ``tools/call``
handler of a real stdio server. The reference passes every row in both eras, the starter scores 0,
known-wrong handlers fail at their named rows (one per kind of failure), and the audit's own tool
probes agree with the rows."""
import ast
import importlib.util

import jsonschema
import mcp_types as types
import nbformat
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.checked_tools import grade_checked_tools, judge_call
from course_lib.grading.served import Failed
from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import solution_sources
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio
TITLE, SCENARIOS, SPEC = load_battery("checked_tools")
ROWS = list(dict.fromkeys(s.name for s in SCENARIOS))
AUDIT = "the audit's tool probes"


def reference(tmp_path):
    """``reference_my_call_tool`` as the chapter's hidden solution defines it, from a real file."""
    nb = nbformat.read(NOTEBOOKS / "08_stateless_wire.ipynb", as_version=4)
    tree = ast.parse("\n".join(solution_sources(nb)))
    tree.body = [node for node in tree.body if not any(isinstance(n, ast.Await) for n in ast.walk(node))]
    path = tmp_path / "chapter_reference.py"
    path.write_text(ast.unparse(tree), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("chapter_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_my_call_tool


def starter(name, arguments, catalog):
    raise NotImplementedError("write your handler here")


def invalid(text):
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def problems(name, arguments, catalog):
    return list(jsonschema.Draft202012Validator(catalog.tools[name]).iter_errors(arguments))


def trusting(name, arguments, catalog):
    """Runs whatever it is sent, as §5.4's trusting handler does."""
    return catalog.run(name, arguments)


def unknown_is_error(name, arguments, catalog):
    """Checks everything, but answers an unknown tool with an isError result instead of -32602."""
    if not isinstance(name, str) or name not in catalog.tools:
        return invalid(f"no tool {name!r}")
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise MCPError(types.INVALID_PARAMS, "arguments must be an object")
    return invalid("bad input") if problems(name, arguments, catalog) else catalog.run(name, arguments)


def trusts_the_shape(name, arguments, catalog):
    """Relies on the SDK for the shape of arguments: copying a string as a dict crashes."""
    if not isinstance(name, str) or name not in catalog.tools:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r}")
    arguments = dict(arguments or {})
    return invalid("bad input") if problems(name, arguments, catalog) else catalog.run(name, arguments)


def protocol_error_for_input(name, arguments, catalog):
    """Refuses invalid input with -32602 instead of a tool result the model can read."""
    if not isinstance(name, str) or name not in catalog.tools:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r}")
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict) or problems(name, arguments, catalog):
        raise MCPError(types.INVALID_PARAMS, "invalid arguments")
    return catalog.run(name, arguments)


def types_only(name, arguments, catalog):
    """Checks names, shapes and required keys, but neither ranges, enums nor unknown keys."""
    if not isinstance(name, str) or name not in catalog.tools:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r}")
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise MCPError(types.INVALID_PARAMS, "arguments must be an object")
    schema = catalog.tools[name]
    kinds = {"integer": int, "string": str}
    for key in schema.get("required", []):
        if key not in arguments:
            return invalid(f"{key} is required")
    for key, value in arguments.items():
        wanted = kinds.get(schema.get("properties", {}).get(key, {}).get("type"))
        if wanted and (type(value) is not wanted):
            return invalid(f"{key} has the wrong type")
    return catalog.run(name, arguments)


def runs_renamed(name, arguments, catalog):
    """Checks well, but runs the tool with arguments of its own (a default filled in)."""
    if not isinstance(name, str) or name not in catalog.tools:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r}")
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise MCPError(types.INVALID_PARAMS, "arguments must be an object")
    if problems(name, arguments, catalog):
        return invalid("bad input")
    return catalog.run(name, {"region": "eu-west", **arguments} if name == "provision" else arguments)


def forever(name, arguments, catalog):
    while True:
        pass


# -- the judge on recorded replies (no server) -----------------------------------------------------

def kind_of(expected, call, reply):
    """The failure kind ``judge_call`` finds in a recorded reply (None: it passes)."""
    try:
        judge_call(expected, call, reply)
    except Failed as failed:
        return failed.outcome.failure
    return None


def test_the_judge_reads_each_answer_as_the_audit_does():
    call = ["resize", {"cpus": 2}]
    ran = {"result": {"content": [{"type": "text", "text": 'resize ran with {"cpus": 2}'}]}}
    assert kind_of("result", call, ran) is None
    other = {"result": {"content": [{"type": "text", "text": 'resize ran with {"cpus": 3}'}]}}
    assert kind_of("result", call, other) == o.WRONG_RESULT
    flagged = {"result": {"isError": True, "content": [{"type": "text", "text": "no"}]}}
    assert kind_of("isError", call, flagged) is None
    assert kind_of("isError", call, ran) == o.MISSING_REFUSAL
    assert kind_of("-32602", call, flagged) == o.WRONG_REFUSAL
    for bare in (["resize"], ["resize", None]):  # no arguments: the business logic ran with {}
        said = {"result": {"content": [{"type": "text", "text": "resize ran with {}"}]}}
        assert kind_of("result", bare, said) is None
    refused = {"error": {"code": -32602, "message": "Unknown tool"}}
    assert kind_of("-32602", call, refused) is None
    assert kind_of("isError", call, refused) == o.WRONG_REFUSAL
    crash = {"error": {"code": -32603, "message": "crashed: NotImplementedError: x",
                       "data": {"crashed": "NotImplementedError", "message": "x"}}}
    with pytest.raises(Failed) as failed:
        judge_call("result", call, crash)
    assert failed.value.outcome.failure == o.CRASH and failed.value.outcome.observed == "your code crashed: NotImplementedError: x"
    assert isinstance(failed.value.outcome.error, NotImplementedError)


def test_every_rule_has_negative_rows_across_its_domain():
    rows = {s["name"]: s for s in SPEC["scenarios"]}
    assert {r["answer"] for r in rows.values()} == {"result", "isError", "-32602", "audit"}
    tools = SPEC["server"]["tools"]
    for row in rows.values():
        for call in row.get("calls", ()):
            if row["answer"] in ("result", "isError") and len(call) > 1:
                errors = list(jsonschema.Draft202012Validator(tools[call[0]]).iter_errors(call[1] or {}))
                assert bool(errors) == (row["answer"] == "isError"), call  # the hand-written rows agree
    assert len(rows["unknown tool"]["calls"]) >= 4 and len(rows["non-object arguments"]["calls"]) >= 4


# -- real servers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("wrong, failing, control, kind, observed", [
    (trusting, "wrong type", "valid input runs the tool", o.MISSING_REFUSAL,
     '"resize" {"cpus": "3"}: a result (the call ran)'),
    (unknown_is_error, "unknown tool", "wrong type", o.WRONG_REFUSAL, '"resize_all" {"cpus": 2}: an isError result'),
    (trusts_the_shape, "non-object arguments", "unknown tool", o.CRASH, "your code crashed: ValueError"),
    (protocol_error_for_input, "missing required", "unknown tool", o.WRONG_REFUSAL,
     '"resize" {}: error -32602 invalid arguments'),
    (types_only, "out of range", "missing required", o.MISSING_REFUSAL, '"resize" {"cpus": 0}: a result (the call ran)'),
    (runs_renamed, "valid input runs the tool", "unknown keys", o.WRONG_RESULT,
     '"provision" {"size": "small"}: answered'),
])
async def test_a_wrong_handler_fails_at_its_row(wrong, failing, control, kind, observed):
    card = await grade_checked_tools(wrong, only=sorted({failing, control}), eras=["2026-07-28"])
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == kind


async def test_the_audit_row_agrees_with_the_rows():
    """A handler the rows fail on unknown tools fails the audit's probes too; the legacy era as well."""
    card = await grade_checked_tools(unknown_is_error, only=[AUDIT, "wrong type"], eras=["legacy"])
    verdict = assert_flagged(card, AUDIT, "wrong type", "tool.unknown WARN: an isError result")
    assert verdict.failure_class == o.WRONG_REFUSAL


async def test_a_handler_that_never_returns_is_stopped():
    card = await grade_checked_tools(forever, only=["valid input runs the tool"], eras=["2026-07-28"], budget=3)
    assert card.verdicts[0].failure_class == o.HANG, card.text()
