"""Chapter 8's first exercise: ``my_call_tool(name, arguments, catalog)``, a checking ``tools/call`` handler.

Served by ``grading.harness tools`` in each era of ``checked_tools.json``. Every row's calls go through the audit's
strict session, each answer read as the audit's tool probes read it; the ``audit`` row runs those probes. Invalid
input to a listed tool is an ``isError`` result, an unknown tool or non-object arguments -32602."""
from __future__ import annotations

import json
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Callable

from course_lib.audit import answer_kind, lists, tools
from course_lib.audit.report import Line, Report
from course_lib.audit.session import Context, Target
from course_lib.grading import outcome as o, served
from course_lib.grading.audited_server import PROBE_ENDED
from course_lib.grading.harness import CRASH_LOG, ran
from course_lib.grading.outcome import Failed
from course_lib.grading.runner import record, run, verdict_of
from course_lib.grading.scorecard import Scorecard, Verdict

BATTERY = "checked_tools"
STARTUP = 30.0  # seconds for a reply while the server may still be starting (an audit probe's request timeout)
AUDITED = ("tool.unknown", "tool.arguments", "tool.invalid-input")


def shown(call: list) -> str:
    return " ".join(json.dumps(part) for part in call) if len(call) > 1 else f"{json.dumps(call[0])} (no arguments)"


def judge_call(expected: str, call: list, reply: dict) -> str:
    """What was observed in one call's answer; a failure raises ``Failed``."""
    kind, said = answer_kind(reply)
    crash = served.crash_of(reply["error"]) if isinstance(reply.get("error"), dict) else None
    if crash is not None:
        raise crash
    answered = o.Outcome(o.RETURNED, reply, state={"value": shown(call)})  # the call the hint names
    if kind != expected:  # a result where a refusal was due is a missing refusal; any other answer a wrong one
        raise Failed(o.MISSING_REFUSAL if kind == "result" else o.WRONG_REFUSAL, f"{shown(call)}: {said}", answered)
    ran_anyway = ((reply.get("result") or {}).get("_meta") or {}).get("course/ran")  # harness.tools' record
    if expected != "result" and ran_anyway:
        raise Failed(o.WRONG_RESULT, f"{shown(call)}: {said}, but catalog.run ran first ({ran_anyway[0]}): "
                                     "a call that must not run its tool ran it", answered)
    wanted = ran(call[0], call[1] if len(call) > 1 and call[1] is not None else {})
    text = ((reply.get("result") or {}).get("content") or [{}])[0].get("text")
    if expected == "result" and text != wanted:
        raise Failed(o.WRONG_RESULT, f"{shown(call)}: answered {text!r}, not {wanted!r}", answered)
    return said


def observed_when_passed(row: dict) -> str:
    return f"{len(row['calls'])} calls, each {row['answer']}"


async def ask_row(wire, row: dict) -> str:
    """Every call of the row, each answer judged (``judge_call``) as it comes."""
    for call in row["calls"]:
        params = {"name": call[0], **({"arguments": call[1]} if len(call) > 1 else {})}
        judge_call(row["answer"], call, await wire.request("tools/call", params))
    return observed_when_passed(row)


def judge_audit(lines: list[Line], crash: dict | None) -> o.Outcome:
    """Every tool line of the audit must PASS (a failing one is the student's crash if the harness logged ``crash``)."""
    lines = [line for line in lines if line.check in AUDITED or line.verdict == "FAIL"]
    bad = [line for line in lines if line.verdict != "PASS"]
    if not bad and {line.check for line in lines} >= set(AUDITED):
        return o.judged(None, f"{len(lines)} audit lines PASS")
    line = bad[0] if bad else None
    said = f"{line.check} {line.verdict}: {line.detail}" if line else "the audit's tool probes did not run"
    if crash is not None:
        return o.judged(o.CRASH, said[:200], o.crash_from(crash))
    return o.judged(o.HANG if line is not None and line.check == PROBE_ENDED else o.WRONG_REFUSAL, said[:200])


async def grade_checked_tools(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                              eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_call_tool(name, arguments, catalog)`` inside real stdio servers, in both eras."""
    with served.written(student, battery, "tools", only, eras, budget) as ex:
        argv = ex.argv(ex.config("server", ex.spec["server"]))
        audit = lambda s: ex.rows[s.name]["answer"] == "audit"  # noqa: E731
        calls = served.answered(lambda s, wire: ask_row(wire, ex.rows[s.name]))

        @asynccontextmanager
        async def open_lab(s):  # the audit's probes start sessions of their own: its lab is a crash log
            if audit(s):
                yield ex.folder / f"audit-{ex.scenarios.index(s)}.crashes.jsonl"
                return
            async with served.on_probe(Context(Target(argv), ex.budget * 10 + 60, STARTUP), ex.budget,
                                       lambda wire: wire.request("tools/list", {}))(s) as (wire, _):
                yield wire

        async def ask(s, lab) -> Verdict:
            if audit(s):
                ctx = Context(Target(argv, {CRASH_LOG: str(lab)}), ex.budget * 10 + 60, STARTUP)
                ctx.capabilities[s.era] = {"tools": {}}
                report = Report(argv, s.era)
                await lists.run(ctx, s.era, report)  # the audit's list and tool probes
                await tools.run(ctx, s.era, report)
                crash = served.logged_record(lab)  # the judge's input: the audit's lines and the crash logged
                record(s, o.returned(None).with_wire((), audit=[asdict(x) for x in report.lines], crash=crash))
                return verdict_of(s, judge_audit(report.lines, crash))
            return await calls(s, lab)

        return await run(ex, open_lab, ask, key=lambda s: (s.era, audit(s) and s.name),
                         ended=served.probe_ended(ex.budget))
