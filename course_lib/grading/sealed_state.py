"""Chapter 09's exercise: ``my_sealer(key) -> (seal, unseal)``, the ``request_state`` of a real server.

Served by ``grading.harness state`` as the ``modern`` server's codec at 2026-07-28. Each row drives ``provision``
by hand on a fresh server: an honest order completes at its price; the chapter's attacks, a state from another
process, one cut short and each string the server never issued are refused with -32602 before any charge."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import mcp_types as types
from mcp import MCPError

from course_lib.display import error_line
from course_lib.grading import outcome as o, served
from course_lib.grading.battery import Scenario
from course_lib.grading.runner import labs, run, student_row
from course_lib.grading.scorecard import Scorecard, Verdict
from course_lib.labs import connect
from course_lib.stateless import call_by_hand, tamper

BATTERY = "sealed_state"
STARTUP = 30.0  # seconds a request may wait while the server starts (the budget bounds the student's calls)


async def answer(key: str, params) -> types.ElicitResult:
    """The client's answers: region eu-west, and yes to the price."""
    content = {"region": "eu-west"} if key == "region" else {"ok": True}
    return types.ElicitResult(action="accept", content=content)


async def first_state(session, size: str) -> str:
    """The ``request_state`` of round 1 of an order of ``size``."""
    result = await session.call_tool("provision", {"size": size}, allow_input_required=True)
    return result.request_state


async def resend(session, size: str, state: str) -> str:
    """Round 2 of an order of ``size`` with ``state``; the text the server answers in the end."""
    second = await session.call_tool("provision", {"size": size}, allow_input_required=True,
                                     input_responses={"region": await answer("region", None)}, request_state=state)
    if isinstance(second, types.InputRequiredResult):
        return f"accepted, asks: {second.input_requests['approve'].params.message}"
    return second.content[0].text


async def attack(row: dict, lab) -> str:
    """Run the row's order or attack on ``lab``; what the server said (an ``MCPError`` propagates)."""
    kind, size = row["attack"], row.get("size", "large")
    if kind in ("none", "price"):  # price, the chapter's first attack: round 2 carries a state edited to price=0
        edit = (lambda n, state: tamper(state, price=0) if n == 1 else state) if kind == "price" else None
        result, _ = await call_by_hand(lab.session, "provision", {"size": size}, answer, edit_state=edit)
        return result.content[0].text
    if kind == "replay":  # the chapter's second attack: a small order's state on a large order
        return await resend(lab.session, size, await first_state(lab.session, "small"))
    if kind == "foreign":  # a genuine state of this order, from another process (see ``prepare``)
        state = FOREIGN[id(lab)]
        if isinstance(state, MCPError):
            raise state
        return await resend(lab.session, size, state)
    if kind == "truncated":
        return await resend(lab.session, size, (await first_state(lab.session, size))[:-1])
    if kind == "garbage":  # one string the server never issued: each is a row, judged on its own
        return f"accepted {row['token']!r}: {await resend(lab.session, size, row['token'])}"
    raise ValueError(f"unknown attack {kind!r}")


FOREIGN: dict[int, str | MCPError] = {}  # lab -> a state another process of the same server issued


async def prepare(row: dict, lab, argv: tuple) -> None:
    """Outside the budget: the server has started and answered once; a foreign state is at hand."""
    await lab.session.list_tools()
    if row["attack"] == "foreign":
        async with connect(list(argv), era=lab.era, request_timeout=STARTUP) as other:
            # the student's code failing there (an MCPError) is the row's answer, not the lab's
            FOREIGN[id(lab)] = await served.answer_of(first_state(other.session, row.get("size", "large")))


def judge(s: Scenario, outcome: o.Outcome) -> Verdict:
    """The row's expected answer: the completed order, or -32602 before anything is charged."""
    wanted, error = s.expect.get("value"), outcome.error
    if isinstance(error, MCPError):  # (always a refusal: a typed error)
        crash = served.crash_of(error)
        if crash is not None:  # the student's crash, or their call the harness stopped at the budget
            return Verdict(s, False, crash.outcome.observed, crash.outcome.failure, crash.outcome)
        if error.error.code == types.REQUEST_TIMEOUT:
            return Verdict(s, False, "the server did not answer in time: your code never returned", o.HANG,
                           o.hung(outcome.budget))
        if wanted is None and error.error.code == types.INVALID_PARAMS:
            return Verdict(s, True, f"refused: {error_line(error)}", None, outcome)
        return Verdict(s, False, f"the server answered {error_line(error)}", o.WRONG_REFUSAL, outcome)
    if outcome.kind == o.RETURNED:
        if wanted is not None and outcome.value == wanted:
            return Verdict(s, True, f"answered {outcome.value!r}", None, outcome)
        kind = o.WRONG_RESULT if wanted is not None else o.MISSING_REFUSAL
        sent = [f.message["params"].get("requestState") for f in outcome.sent if f.method == "tools/call"]
        token = next((t for t in reversed(sent) if isinstance(t, str)), None)  # the state the server accepted
        named = outcome if token is None else outcome.with_wire(
            outcome.sent, value=repr(token if len(token) <= 40 else token[:40] + "…"))
        return Verdict(s, False, f"the server answered {outcome.value!r}"[:160], kind, named)
    return Verdict(s, False, o.describe(outcome), o.failure_of(outcome), outcome)  # (None: a wrong result)


async def grade_sealed_state(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                             budget: float | None = None) -> Scorecard:
    """Grade ``my_sealer(key) -> (seal, unseal)`` as the codec of real ``modern`` servers."""
    with served.written(student, battery, "state", only, None, budget) as ex:
        argv, rows = tuple(ex.argv()), ex.rows
        ex.scenarios = [replace(s, server=argv) for s in ex.scenarios]
        try:
            return await run(ex, labs(ex, lambda s, lab: prepare(rows[s.name], lab, argv), request_timeout=STARTUP),
                             student_row(ex, lambda s, lab: attack(rows[s.name], lab), judge))
        finally:
            FOREIGN.clear()
