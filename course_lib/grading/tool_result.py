"""Chapter 03's exercise: ``my_tool_result(tool, value) -> CallToolResult``, judged on the wire.

Served by ``grading.harness tool_result``; each row calls one tool and reads the reply frame: a
conforming value as ``structuredContent``, another as ``isError: true`` with a text; a value sent is in
a text too, as JSON."""
from __future__ import annotations

import json
from typing import Callable

from mcp import MCPError

from course_lib.grading import served
from course_lib.grading.outcome import MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.runner import run
from course_lib.grading.scorecard import Scorecard
from course_lib.grading.served import Failed

BATTERY = "tool_result"


def judge(expect: str, reply: dict, value) -> str:
    """What was observed in one reply frame to ``tools/call``; a failure raises ``Failed`` naming ``value``."""
    no = lambda kind, said: Failed(kind, said, value=json.dumps(value))  # noqa: E731
    if "error" in reply:
        error = reply["error"]
        raise served.crash_of(error) or no(WRONG_REFUSAL, (
            f"answered the JSON-RPC error {error['code']} ({error['message']}): a tool's own failure is a "
            "result with isError true, not a protocol error"))
    result = reply.get("result", {})
    is_error, structured = bool(result.get("isError")), result.get("structuredContent")
    shown = f"isError={json.dumps(is_error)}, structuredContent={json.dumps(structured)}"
    texts = [c.get("text", "") for c in result.get("content", []) if c.get("type") == "text"]
    if expect == "is_error":
        if not is_error:
            raise no(MISSING_REFUSAL, f"sent {shown}, which does not conform to the declared outputSchema")
        if structured is not None or not any(t.strip() for t in texts):
            raise no(WRONG_RESULT, f"isError true, but {shown} and texts {texts}: no structuredContent, one text")
        return f"isError true: {texts[0][:60]}"
    if is_error:
        raise no(WRONG_REFUSAL, f"refused a value that conforms: isError true ({(texts or [''])[0][:60]})")
    if expect == "structured" and structured != value:
        raise no(WRONG_RESULT, f"sent {shown}, not the value {json.dumps(value)}")
    if not any(_decodes_to(text, value) for text in texts):  # the text a client without structure reads
        raise no(WRONG_RESULT, f"sent the texts {json.dumps(texts)[:80]}: none is the value's JSON, "
                               f"{json.dumps(value)}")
    return shown


def _decodes_to(text: str, value) -> bool:
    try:
        return json.loads(text) == value
    except ValueError:
        return False


async def ask_row(asker: served.Asker, row: dict) -> str:
    """Call the row's tool; the reply frame on the wire is judged (a crash or a hang raises first)."""
    lab = asker.lab
    # refused, or the client refused structured content that does not conform: either way the frame says
    await served.answer_of(asker.ask(lambda: lab.session.call_tool(row["tool"], {"result": row["result"]})),
                           (MCPError, RuntimeError))
    frame = lab.wire.requests("tools/call")[-1]
    return judge(row["expect"]["answer"], lab.wire.response_to(frame).message, row["result"])


async def grade_tool_result(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                            eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_tool_result(tool, value) -> CallToolResult`` inside real stdio servers."""
    with served.written(student, battery, "tool_result", only, eras, budget) as ex:
        argv = ex.argv(ex.config("tools", {"tools": ex.spec["tools"]}))
        labs = served.on_lab(ex, lambda s: argv, setup=lambda lab: lab.session.list_tools())
        return await run(ex, labs, served.answered(lambda s, asker: ask_row(asker, ex.rows[s.name])),
                         key=lambda s: s.era, not_asked="not asked: an earlier call got no answer")
