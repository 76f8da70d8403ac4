"""Chapter 5's exercise: ``my_call_tool(name, arguments, catalog)``, a checking ``tools/call`` handler.

The function is copied into a module (``grading.child``) and served by ``grading.tool_harness``
as a real stdio server in each era of ``fixtures/grading/checked_tools.json``. Every row sends its
calls through the audit's strict session (``audit.session.probe``) and reads each answer as the
audit's tool probes do (``audit.tools``: a result, an ``isError`` result, -32602 or another error);
the last row runs those probes themselves on the same server, so the course's check and the audit
agree. Invalid input to a listed tool must be an ``isError`` result, an unknown tool or
non-object arguments -32602, and valid input must reach ``catalog.run``."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable

import anyio

from course_lib.audit import lists, tools
from course_lib.audit.report import Report
from course_lib.audit.session import Context, ProbeFailed, Target, error_of, probe
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, load_battery, rows_of, select
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.paging_harness import CRASHED
from course_lib.grading.sealed_state import STARTERS
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.grading.tool_harness import ran
from course_lib.scenarios import for_each

BATTERY = "checked_tools"
STARTUP = 30.0  # seconds for a reply while the server may still be starting (an audit probe's request timeout)
AUDITED = ("tool.unknown", "tool.arguments", "tool.invalid-input")
# expected answer -> answer the audit reads -> failure kind
KIND_OF = {"result": {"isError": o.WRONG_REFUSAL, "-32602": o.WRONG_REFUSAL, "error": o.WRONG_REFUSAL},
           "isError": {"result": o.MISSING_REFUSAL, "-32602": o.WRONG_REFUSAL, "error": o.WRONG_REFUSAL},
           "-32602": {"result": o.MISSING_REFUSAL, "isError": o.WRONG_REFUSAL, "error": o.WRONG_REFUSAL}}


def shown(call: list) -> str:
    return " ".join(json.dumps(part) for part in call) if len(call) > 1 else f"{json.dumps(call[0])} (no arguments)"


def judge_call(expected: str, call: list, reply: dict) -> tuple[str | None, str, o.Outcome | None]:
    """One call's answer: (failure kind or None, what was observed, the outcome of a crash)."""
    kind, said = tools._answer(reply)
    error = error_of(reply) or {}
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    if data.get("crashed"):
        starter = STARTERS.get(data["crashed"])
        return o.CRASH, f"your code crashed: {error['message'][len(CRASHED):]}", \
            o.crashed(starter()) if starter else None
    if kind == expected:
        wanted = ran(call[0], call[1] if len(call) > 1 and call[1] is not None else {})
        text = ((reply.get("result") or {}).get("content") or [{}])[0].get("text")
        if expected == "result" and text != wanted:
            return o.WRONG_RESULT, f"{shown(call)}: answered {text!r}, not {wanted!r}", None
        return None, said, None
    return KIND_OF[expected][kind], f"{shown(call)}: {said}", None


async def run_rows(ctx: Context, era: str, rows: list[dict], budget: float) -> dict[str, tuple]:
    """The calls of every row on one server process; (failure, observed, outcome) per row.

    The server's start-up is waited for first (a ``tools/list``, under the probe's own timeout);
    then each call has ``budget`` seconds, and after a call that gets no answer nothing is asked."""
    out: dict[str, tuple] = {}
    try:
        async with probe(ctx, era) as wire:
            await wire.request("tools/list", {})
            for row in rows:
                verdict = (None, f"{len(row['calls'])} calls, each {row['answer']}", None)
                for call in row["calls"]:
                    params = {"name": call[0], **({"arguments": call[1]} if len(call) > 1 else {})}
                    with anyio.move_on_after(budget) as scope:
                        reply = await wire.request("tools/call", params)
                    if scope.cancelled_caught:
                        stopped = (o.HANG, f"{shown(call)}: {o.no_result(budget)}", o.hung(budget))
                        out.update({r["name"]: stopped for r in rows if r["name"] not in out})
                        return out
                    found = judge_call(row["answer"], call, reply)
                    if found[0] is not None:
                        verdict = found
                        break
                out[row["name"]] = verdict
    except ProbeFailed as exc:
        for row in rows:
            out.setdefault(row["name"], (o.LAB, f"the lab could not run: {exc.check}: {exc.message}"[:200],
                                         None))
    return out


async def run_audit(ctx: Context, era: str) -> tuple:
    """The audit's list and tool probes on the student's server; every tool line must PASS."""
    ctx.capabilities[era] = {"tools": {}}
    report = Report(ctx.target.argv, era)
    await lists.run(ctx, era, report)
    await tools.run(ctx, era, report)
    lines = [line for line in report.lines if line.check in AUDITED or line.verdict == "FAIL"]
    bad = [line for line in lines if line.verdict != "PASS"]
    if not bad and {line.check for line in lines} >= set(AUDITED):
        return None, f"{len(lines)} audit lines PASS", None
    line = bad[0] if bad else None
    said = f"{line.check} {line.verdict}: {line.detail}" if line else "the audit's tool probes did not run"
    crashed = next((name for name in STARTERS if f"{CRASHED}{name}" in said), None)
    failure = o.CRASH if CRASHED in said else o.HANG if "budget" in said else o.WRONG_REFUSAL
    return failure, said[:200], o.crashed(STARTERS[crashed]()) if crashed else None


async def grade_checked_tools(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                              eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_call_tool(name, arguments, catalog)`` inside real stdio servers, in both eras."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 10.0)
    rows = rows_of(spec)
    with tempfile.TemporaryDirectory(prefix="course-tools-") as folder:
        try:
            path = write_module(Path(folder), "student_tools", student, spec.get("unavailable", ()))
        except SourceError as exc:
            failed = o.crashed(exc)
            return publish(Scorecard(title, [Verdict(s, False, o.describe(failed), o.CRASH, failed)
                                             for s in scenarios], budget, battery))
        config = Path(folder) / "server.json"
        config.write_text(json.dumps(spec["server"]), encoding="utf-8")
        argv = child_argv("-m", "course_lib.grading.tool_harness", str(path), student.__name__, str(config))

        async def run_era(era: str) -> dict[str, tuple]:
            wanted = [rows[s.name] for s in scenarios if s.era == era]
            ctx = Context(Target(argv), budget * 10 + 60, STARTUP)
            calls = [row for row in wanted if row["answer"] != "audit"]
            found = await run_rows(ctx, era, calls, budget) if calls else {}
            if any(row["answer"] == "audit" for row in wanted):
                found["audit"] = await run_audit(ctx, era)
            return found

        results = await for_each(run_era, list(dict.fromkeys(s.era for s in scenarios)))

    def verdict(s: Scenario) -> Verdict:
        key = "audit" if rows[s.name]["answer"] == "audit" else s.name
        failure, observed, outcome = results[s.era][key]
        return Verdict(s, failure is None, observed, failure, outcome)

    return publish(Scorecard(title, [verdict(s) for s in scenarios], budget, battery))
