"""The walker exercises (chapters 1 and 2) and what the notebooks import from the engine.

The engine: ``outcome``, ``budget``, ``battery``, ``runner`` (the one runner), ``scorecard``, ``child`` and
``unavailable``. The walker's judges are pure functions of the scenario row and the outcome."""
from __future__ import annotations

from typing import Any, Callable

from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, describe_refusal, expects_refusal, load_battery, requests_text
from course_lib.grading.budget import observe
from course_lib.grading.outcome import CRASH, FAILURES, HANG, LAB, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, Outcome
from course_lib.grading.runner import exercise, labs, run, student_row
from course_lib.grading.scorecard import STARTER_HINT, Scorecard, Verdict, hint_for
from course_lib.grading.unavailable import without


def names_of(result: Any) -> list[str] | None:
    """Accept what a walker may reasonably return: names, Tool-like objects, or a Catalog."""
    if hasattr(result, "names") and not callable(result.names):
        return list(result.names)
    if isinstance(result, tuple) and result and isinstance(result[0], (list, tuple)):
        result = result[0]  # (items, page_sizes), the seed's shape
    if isinstance(result, (list, tuple)):
        return [x if isinstance(x, str) else getattr(x, "name", repr(x)) for x in result]
    return None


def is_refusal(expect: dict, exc: BaseException) -> bool:
    """Whether ``exc`` is the refusal the scenario teaches (``expect["refusal"]``; any typed one if unset)."""
    refusal = expect.get("refusal")  # (only a typed refusal is ever asked: ``judge_names``)
    return not refusal or not (
        (refusal.get("type") and refusal["type"] not in {c.__name__ for c in type(exc).__mro__})
        or ("reason" in refusal and getattr(exc, "reason", None) != refusal["reason"])
        or ("code" in refusal and getattr(getattr(exc, "error", None), "code", None) != refusal["code"]))


def judge_names(expect: dict, outcome: Outcome, instead: str = "raising") -> tuple[bool, str, str | None]:
    """(passed, observed, failure kind) of a walker-like outcome (``instead``: what a partial catalog replaced)."""
    if outcome.kind not in (o.RETURNED, o.REFUSED):
        return False, o.describe(outcome), o.failure_of(outcome)
    if outcome.kind == o.RETURNED:
        names = names_of(outcome.value)
        if names is None:
            return False, f"returned {type(outcome.value).__name__}, not a list of names", WRONG_RESULT
        if expects_refusal(expect):
            return False, f"returned a partial catalog {names} instead of {instead}", MISSING_REFUSAL
        ok = names == expect["names"]
        return ok, f"returned {names}", None if ok else WRONG_RESULT
    observed = o.describe(outcome)
    if not expects_refusal(expect):
        return False, f"{observed} instead of returning", WRONG_REFUSAL
    if is_refusal(expect, outcome.error):
        return True, observed, None
    return False, f"{observed}, not {describe_refusal(expect['refusal'])}", WRONG_REFUSAL


def judge_on_wire(s: Scenario, outcome: Outcome) -> Verdict:
    """The outcome, then exactly ``expect["requests"]`` requests of its method on the wire: a refusal comes at
    the page where the problem shows and nothing is sent after it."""
    passed, observed, failure = judge_names(s.expect, outcome)
    wanted, method = s.expect["requests"], s.expect.get("method", "tools/list")  # every row states its count
    n = sum(1 for f in outcome.sent if f.method == method)
    if passed and n != wanted:
        passed = False
        failure = WRONG_REFUSAL if outcome.kind == o.REFUSED else WRONG_RESULT
        observed = f"{observed} after {requests_text(n, method)} (expected {wanted})"
    repeated = None if passed else repeated_cursor(outcome)
    return Verdict(s, passed, observed, failure, outcome if repeated is None else outcome.with_wire(
        outcome.sent, value=repr(repeated)))


def repeated_cursor(outcome: Outcome) -> str | None:
    """The first next cursor the server handed back a second time, in the call's own replies."""
    wire, seen = outcome.state.get("wire"), set()
    for frame in outcome.sent if wire is not None else ():
        reply = wire.response_to(frame)
        cursor = ((getattr(reply, "message", None) or {}).get("result") or {}).get("nextCursor") if reply else None
        if cursor is not None and cursor in seen:
            return cursor
        seen.add(cursor)
    return None


async def grade_walker(student: Callable, battery: str = "walk", *, only: list[str] | None = None,
                       eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(session) -> names`` on the battery's catalog servers, its ``unavailable`` withheld."""
    ex = exercise(battery, only, eras, budget)
    student = without(student, ex.spec.get("unavailable", ()))
    return await run(ex, labs(ex), student_row(ex, lambda s, lab: student(lab.session), judge_on_wire))

