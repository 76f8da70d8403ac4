"""In-process: the checks of tests/stdio/test_grading_checked_tools.py's subject that start no process."""

import jsonschema
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.checked_tools import judge_call
from course_lib.grading.served import Failed

pytestmark = pytest.mark.anyio
TITLE, SCENARIOS, SPEC = load_battery("checked_tools")


# -- the starter and known-wrong handlers (recorded: fixtures/grading/transcripts/checked_tools.expected.json;
# trusts_the_shape and protocol_error_for_input are graded on real stdio servers too,
# tests/stdio/test_grading_checked_tools.py) ------------------------------------------------------------

def starter(name, arguments, catalog):
    raise NotImplementedError("write your handler here")


def invalid(text):
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def problems(name, arguments, catalog):
    return list(jsonschema.Draft202012Validator(catalog.tools[name]).iter_errors(arguments))


def shape_checked(name, arguments, catalog, absent=lambda arguments: arguments is None):
    """The name and the shape of arguments checked as the chapter teaches (``absent``: what means {})."""
    if not isinstance(name, str) or name not in catalog.tools:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r}")
    arguments = {} if absent(arguments) else arguments
    if not isinstance(arguments, dict):
        raise MCPError(types.INVALID_PARAMS, "arguments must be an object")
    return arguments


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
    arguments = shape_checked(name, arguments, catalog)
    if problems(name, arguments, catalog):
        return invalid("bad input")
    return catalog.run(name, {"region": "eu-west", **arguments} if name == "provision" else arguments)


def falsy_as_absent(name, arguments, catalog):
    """Checks well, but reads any falsy arguments ([], 0, "", false) as absent: `arguments or {}`."""
    arguments = shape_checked(name, arguments, catalog, absent=lambda arguments: not arguments)
    return invalid("bad input") if problems(name, arguments, catalog) else catalog.run(name, arguments)


def runs_then_checks(name, arguments, catalog):
    """Answers each call rightly, but runs the tool before it looks at the input."""
    arguments = shape_checked(name, arguments, catalog)
    result = catalog.run(name, arguments)
    return invalid("bad input") if problems(name, arguments, catalog) else result


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
    marked = {"result": {**flagged["result"], "_meta": {"course/ran": ['resize ran with {"cpus": 2}']}}}
    assert kind_of("isError", call, marked) == o.WRONG_RESULT  # the server's record: the tool ran anyway
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




def test_a_wrong_handlers_hint_names_the_call_its_observation_shows():
    """On the recorded rows (fixtures/grading/transcripts/checked_tools.json): every row a wrong
    handler fails at one of its calls, but by crashing, has a hint that names that call as shown."""
    from course_lib.grading.checked_tools import shown
    from course_lib.tooling import transcripts as t
    from course_lib.tooling.served_judges import judge_checked_tools

    rows, named = {row["name"]: row for row in SPEC["scenarios"]}, 0
    for label in t.expected("checked_tools")["solutions"]:
        for s, outcome in t.rows("checked_tools", label):
            verdict = judge_checked_tools(s, outcome)
            if verdict.passed or verdict.failure_class == o.CRASH or "calls" not in rows[s.name]:
                continue
            (call,) = [shown(c) for c in rows[s.name]["calls"] if verdict.observed.startswith(shown(c) + ":")]
            assert verdict.hint.startswith(f"The call {call} "), verdict.hint
            named += 1
    assert named >= 10, "the wrong handlers fail at calls"
