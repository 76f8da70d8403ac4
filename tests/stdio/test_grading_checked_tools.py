"""The exercise of 08_stateless_wire: ``my_call_tool(name, arguments, catalog)`` as the ``tools/call``
handler of a real stdio server. The reference passes every row in both eras, the starter scores 0,
known-wrong handlers fail at their named rows (one per kind of failure), and the audit's own tool
probes agree with the rows."""

import jsonschema
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.checked_tools import grade_checked_tools, shown
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio
AUDIT = "the audit's tool probes"
TITLE, SCENARIOS, SPEC = load_battery("checked_tools")


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


def forever(name, arguments, catalog):
    while True:
        pass


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
    (falsy_as_absent, "non-object arguments", "unknown tool", o.MISSING_REFUSAL, '"status" []: a result (the call ran)'),
    (runs_then_checks, "wrong type", "unknown tool", o.WRONG_RESULT,
     '"resize" {"cpus": "3"}: an isError result, but catalog.run ran first (resize ran with {"cpus": "3"})'),
])
async def test_a_wrong_handler_fails_at_its_row(wrong, failing, control, kind, observed):
    card = await grade_checked_tools(wrong, only=sorted({failing, control}), eras=["2026-07-28"])
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == kind
    if kind != o.CRASH:  # the hint names the call that broke the rule, as the observation shows it
        calls = next(row["calls"] for row in SPEC["scenarios"] if row["name"] == failing)
        (named,) = [shown(c) for c in calls if verdict.observed.startswith(shown(c) + ":")]
        assert verdict.hint.startswith(f"The call {named} "), verdict.hint


async def test_the_audit_row_agrees_with_the_rows():
    """A handler the rows fail on unknown tools fails the audit's probes too; the legacy era as well."""
    card = await grade_checked_tools(unknown_is_error, only=[AUDIT, "wrong type"], eras=["legacy"])
    verdict = assert_flagged(card, AUDIT, "wrong type", "tool.unknown WARN: an isError result")
    assert verdict.failure_class == o.WRONG_REFUSAL


async def test_a_handler_that_never_returns_is_stopped():
    card = await grade_checked_tools(forever, only=["valid input runs the tool"], eras=["2026-07-28"], budget=3)
    assert card.verdicts[0].failure_class == o.HANG, card.text()
