"""The grader for chapter 6's exercise: a URI allowlist check, against hand-written rows and a real server.

The student writes ``my_is_allowed(uri) -> bool`` (plain or ``async``). The battery
``fixtures/grading/uris.json`` has two kinds of scenarios:

* URI rows (era ``any``): the student's answer for one URI must equal the hand-written value.
  Each call runs under the time budget: a check that never returns (a loop, plain or ``async``)
  is stopped and becomes a verdict, and the rows after it are not asked.
* server rows, one real atlas server over stdio per era: every URI ``resources/list`` returns
  must be allowed ("served URIs are allowed"), and every URI the student allows, among the
  battery's and the served ones, must read successfully ("allowed URIs read OK"); allowing
  nothing at all fails it too (nothing read is not "read OK").

A check that raises has crashed: every row it was asked about fails, whatever the row expects.

A URI row the student gets wrong by allowing it also says what the real server answered for it.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.grading.core import LAB, Scorecard, Verdict, load_battery, observe, select
from course_lib.labs import connect
from course_lib.uris import read


async def _ask(student: Callable, uri: str) -> Any:
    """One answer from the student's check.

    A plain function runs right here, on the event loop's thread: if it never returns, the
    watchdog of ``observe`` stops it inside its loop (a worker thread could only be abandoned,
    still running).
    """
    value = student(uri)
    if inspect.isawaitable(value):
        value = await value
    return value


async def _answers(student: Callable, uris: list[str], budget: float,
                   earlier: dict | None = None) -> dict[str, tuple[str, str, Any]]:
    """Ask about each URI in turn; after one call hangs the rest are not asked (one budget, not many)."""
    answers: dict[str, tuple[str, str, Any]] = {}
    hung = any(kind == "hung" for kind, _, _ in (earlier or {}).values())
    for uri in uris:
        if hung:
            answers[uri] = ("hung", "not asked: an earlier call was stopped", None)
            continue
        answers[uri] = await observe(lambda uri=uri: _ask(student, uri), budget)
        hung = answers[uri][0] == "hung"
    return answers


def _judge_row(expected: bool, answer: tuple[str, str, Any], server_said: str | None) -> tuple[bool, str]:
    kind, observed, value = answer
    if kind != "returned":
        return False, observed
    if not isinstance(value, bool):
        return False, f"returned {value!r}, not True or False"
    said = f" (the server answers {server_said})" if value and not expected and server_said else ""
    return value == expected, f"returned {value}{said}"


async def grade_allowlist(student: Callable, battery: str = "uris", *, only: list[str] | None = None,
                          eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_is_allowed(uri) -> bool`` on the battery's URI rows and on real atlas servers.

    ``only`` restricts the battery to some scenario names, ``eras`` to some eras (the URI
    rows have the era ``any`` and are kept whenever ``eras`` is given).
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None if eras is None else [*eras, "any"])
    budget = budget or spec.get("budget_seconds", 5.0)
    rows = {s["name"]: s for s in spec["scenarios"]}
    battery_uris = [s["uri"] for s in spec["scenarios"] if "uri" in s]
    if all(s.era == "any" for s in scenarios):  # no server check: ask only about the selected rows
        battery_uris = [rows[s.name]["uri"] for s in scenarios]

    answers = await _answers(student, battery_uris, budget)
    reads: dict[str, str] = {}  # URI -> what the first real server answered, for allowed URIs
    verdicts: dict[tuple[str, str], Verdict] = {}

    for era in dict.fromkeys(s.era for s in scenarios if s.era != "any"):
        wanted = [s for s in scenarios if s.era == era]
        try:
            async with connect(spec.get("server", "atlas"), era=era, lab_timeout=budget * 40 + 60) as lab:
                served = [r.uri for r in (await lab.session.list_resources()).resources]
                answers.update(await _answers(student, [u for u in served if u not in answers], budget, answers))
                allowed = [u for u in dict.fromkeys(battery_uris + served)
                           if answers[u][0] == "returned" and answers[u][2] is True]
                outcomes = {u: await read(lab.session, u) for u in allowed}
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            for s in wanted:
                verdicts[s.name, s.era] = Verdict(s, False, f"the lab could not run: {error_line(exc)}", LAB)
            continue
        for u, o in outcomes.items():
            reads.setdefault(u, "ok" if o.ok else ("not-found" if o.not_found else f"error {o.code}"))
        for s in wanted:
            if rows[s.name]["check"] == "served":
                refused = [u for u in served if not (answers[u][0] == "returned" and answers[u][2] is True)]
                failed = [answers[u][1] for u in refused if answers[u][0] != "returned"]
                observed = (failed[0] if failed else f"refused served {refused}" if refused
                            else f"allowed all {len(served)} served URIs")
                verdicts[s.name, s.era] = Verdict(s, not refused, observed)
            else:
                unreadable = [u for u, o in outcomes.items() if not o.ok]
                if not allowed:  # nothing allowed, nothing read: not a pass
                    observed = "allowed no URI at all, so nothing could be read"
                elif unreadable:
                    observed = f"allowed {len(unreadable)} URIs the server refuses, e.g. {unreadable[0]!r}"
                else:
                    observed = f"all {len(allowed)} allowed URIs read OK"
                verdicts[s.name, s.era] = Verdict(s, bool(allowed) and not unreadable, observed)

    for s in scenarios:
        if s.era == "any":
            uri = rows[s.name]["uri"]
            passed, observed = _judge_row(s.expect["value"], answers[uri], reads.get(uri))
            verdicts[s.name, s.era] = Verdict(s, passed, observed)
    return Scorecard(title, [verdicts[s.name, s.era] for s in scenarios], budget)
