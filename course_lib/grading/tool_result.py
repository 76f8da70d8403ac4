"""Chapter 6's exercise: ``my_tool_result(tool, value) -> CallToolResult``, judged on the wire.

The function is copied into a module (``grading.child``) and served by
``grading.tool_result_harness`` as a real stdio server in each era of ``fixtures/grading/tool_result.json``.
Each row calls one tool with the value it "computed" and reads the reply frame: a conforming value
must arrive as ``structuredContent``, a non-conforming one as ``isError: true`` with a text and no
``structuredContent``. A function that never returns is stopped at the budget, and the lab's later
rows are not asked."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable

import mcp_types as types
from mcp import MCPError

from course_lib.errors import CourseError
from course_lib.display import error_line
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery, rows_of, select
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.outcome import CRASH, HANG, LAB, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, no_result
from course_lib.grading.paging_harness import CRASHED
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import for_each

BATTERY = "tool_result"
_ERRORS = {"NotImplementedError": NotImplementedError, "NameError": NameError}


def judge(expect: str, reply: dict, value) -> tuple[str | None, str]:
    """(failure kind or None, what was observed) for one reply frame to ``tools/call``."""
    if "error" in reply:
        error = reply["error"]
        if (error.get("data") or {}).get("crashed") if isinstance(error.get("data"), dict) else False:
            return CRASH, "your code crashed: " + error["message"][len(CRASHED):]
        return WRONG_REFUSAL, (f"answered the JSON-RPC error {error['code']} ({error['message']}): a tool's own "
                               "failure is a result with isError true, not a protocol error")
    result = reply.get("result", {})
    is_error, structured = bool(result.get("isError")), result.get("structuredContent")
    shown = f"isError={json.dumps(is_error)}, structuredContent={json.dumps(structured)}"
    texts = [c.get("text", "") for c in result.get("content", []) if c.get("type") == "text"]
    if expect == "is_error":
        if not is_error:
            return MISSING_REFUSAL, f"sent {shown}, which does not conform to the declared outputSchema"
        if structured is not None or not any(t.strip() for t in texts):
            return WRONG_RESULT, f"isError true, but {shown} and texts {texts}: no structuredContent, one text"
        return None, f"isError true: {texts[0][:60]}"
    if is_error:
        return WRONG_REFUSAL, f"refused a value that conforms: isError true ({(texts or [''])[0][:60]})"
    if expect == "structured" and structured != value:
        return WRONG_RESULT, f"sent {shown}, not the value {json.dumps(value)}"
    return None, shown


async def _call(lab, row: dict, budget: float) -> tuple[str | None, str]:
    try:
        await lab.session.call_tool(row["tool"], {"result": row["result"]})
    except MCPError as exc:
        if exc.error.code == types.REQUEST_TIMEOUT:
            return HANG, no_result(budget)
    except RuntimeError:
        pass  # the client refused structured content that does not conform: the frame says what was sent
    frame = lab.wire.requests("tools/call")[-1]
    return judge(row["expect"]["answer"], lab.wire.response_to(frame).message, row["result"])


async def grade_tool_result(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                            eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_tool_result(tool, value) -> CallToolResult`` inside real stdio servers."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 10.0)
    rows = rows_of(spec)
    with tempfile.TemporaryDirectory(prefix="course-results-") as folder:
        try:
            path = write_module(Path(folder), "student_server", student, spec.get("unavailable", ()))
        except SourceError as exc:
            failed = o.crashed(exc)
            return publish(Scorecard(title, [Verdict(s, False, o.describe(failed), CRASH, failed) for s in scenarios],
                                     budget, battery))
        config = Path(folder) / "tools.json"
        config.write_text(json.dumps({"tools": spec["tools"]}), encoding="utf-8")
        argv = child_argv("-m", "course_lib.grading.tool_result_harness", str(path), student.__name__, str(config))

        async def run_era(era: str) -> dict[str, Verdict]:
            wanted, out, stuck = [s for s in scenarios if s.era == era], {}, False
            try:
                async with connect(argv, era=era, request_timeout=budget, lab_timeout=budget * 20 + 60) as lab:
                    await lab.session.list_tools()
                    for s in wanted:
                        failure, observed = (HANG, "not asked: an earlier call got no answer") if stuck else \
                            await _call(lab, rows[s.name], budget)
                        stuck = stuck or failure == HANG
                        crash = next((e for n, e in _ERRORS.items() if failure == CRASH and n in observed), None)
                        out[s.name] = Verdict(s, failure is None, observed, failure,
                                              None if crash is None else o.crashed(crash()))
            except CourseError as exc:
                for s in wanted:
                    out.setdefault(s.name, Verdict(s, False, f"the lab could not run: {error_line(exc)}", LAB,
                                                   o.lab_failed(exc)))
            return out

        results = await for_each(run_era, list(dict.fromkeys(s.era for s in scenarios)))
    return publish(Scorecard(title, [results[s.era][s.name] for s in scenarios], budget, battery))
