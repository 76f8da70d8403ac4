"""Tool input errors are results; an unknown tool and non-object arguments are protocol errors.

The catalog server's mode ``typed`` lists one tool, ``forecast``, with an input schema. The
expected answers below are written by hand from that schema and the MCP rule (2025-11-25,
kept at 2026-07-28): arguments that fail the tool's own validation come back as a
``tools/call`` result with ``isError: true`` and a readable text; an unknown tool name and
``arguments`` that are not an object are JSON-RPC errors with code -32602.
"""
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib import connect
from course_lib.protocol import BOTH_ERAS

pytestmark = pytest.mark.anyio

CALLS = {  # label -> (tool name, arguments as sent on the wire)
    "valid": ("forecast", {"city": "Paris"}),
    "wrong type": ("forecast", {"city": 42}),
    "missing": ("forecast", {}),
    "out of range": ("forecast", {"city": "Oslo", "days": 9}),
    "extra": ("forecast", {"city": "Oslo", "unit": "C"}),
    "unknown tool": ("weather", {"city": "Paris"}),
    "not an object": ("forecast", ["Paris"]),
}
EXPECTED = {
    "valid": ("result", False, "synthetic:forecast"),
    "wrong type": ("result", True, "Invalid arguments for forecast: city: 42 is not of type 'string'"),
    "missing": ("result", True, "Invalid arguments for forecast: arguments: 'city' is a required property"),
    "out of range": ("result", True, "Invalid arguments for forecast: days: 9 is greater than the maximum of 7"),
    "extra": ("result", True,
              "Invalid arguments for forecast: arguments: Additional properties are not allowed ('unit' was unexpected)"),
    "unknown tool": ("error", -32602, "Unknown tool: weather"),
    "not an object": ("error", -32602, "Invalid request parameters"),
}


@pytest.mark.parametrize("era", BOTH_ERAS)
async def test_input_errors_are_results_and_the_rest_are_protocol_errors(era):
    seen = {}
    async with connect("catalog", mode="typed", era=era) as lab:
        await lab.session.list_tools()
        for label, (name, arguments) in CALLS.items():
            # A bare Request sends exactly these params (call_tool would refuse a list).
            request = types.Request[dict[str, Any], str](method="tools/call",
                                                         params={"name": name, "arguments": arguments})
            try:
                result = await lab.session.send_request(request, types.CallToolResult)
                seen[label] = ("result", result.is_error, result.content[0].text)
            except MCPError as exc:
                seen[label] = ("error", exc.error.code, exc.error.message)
        # The wire agrees: a result frame or an error frame for each call, in order.
        replies = [lab.wire.response_to(f).kind for f in lab.wire.requests("tools/call")]
    assert seen == EXPECTED
    assert replies == [EXPECTED[label][0] for label in CALLS]
