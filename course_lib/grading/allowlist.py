"""Chapter 6's exercise: ``my_is_allowed(uri) -> bool`` (plain or ``async``).

``fixtures/grading/uris.json`` has URI rows (era ``any``: the answer must be the hand-written
``True`` or ``False``; a call that hangs is stopped, and the rows after it are not asked) and
server rows on a real atlas server per era: every URI ``resources/list`` returns must be allowed,
and every URI allowed must read OK (allowing nothing fails too). A check that raises has crashed."""
from __future__ import annotations

from typing import Callable

from course_lib.errors import CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import ANY_ERA, load_battery, rows_of, select
from course_lib.grading.budget import call_student, observe
from course_lib.grading.runner import lab_verdict
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.grading.unavailable import without
from course_lib.labs import connect
from course_lib.uris import read

NOT_ASKED = "not asked: an earlier call was stopped"


async def _answers(student: Callable, uris: list[str], budget: float,
                   earlier: dict | None = None) -> dict[str, o.Outcome]:
    """Ask about each URI in turn; after one call hangs the rest are not asked (one budget, not many).

    A plain function runs right here, on the event loop's thread: if it never returns, the
    watchdog of ``observe`` stops it inside its loop."""
    answers: dict[str, o.Outcome] = {}
    hung = any(a.kind == o.HUNG for a in (earlier or {}).values())
    for uri in uris:
        if hung:
            answers[uri] = o.hung(budget, NOT_ASKED)
            continue
        answers[uri] = await observe(lambda uri=uri: call_student(student, uri), budget)
        hung = answers[uri].kind == o.HUNG
    return answers


def allowed(answer: o.Outcome) -> bool:
    return answer.kind == o.RETURNED and answer.value is True


def judge_row(expected: bool, answer: o.Outcome, server_said: str | None) -> tuple[bool, str, str | None]:
    """One URI row: (passed, observed, failure kind); only ``True`` or ``False`` is an answer."""
    if answer.kind != o.RETURNED:
        return False, o.describe(answer), o.failure_of(answer) or o.WRONG_RESULT
    value = answer.value
    if not isinstance(value, bool):
        return False, f"returned {value!r}, not True or False", o.WRONG_RESULT
    said = f" (the server answers {server_said})" if value and not expected and server_said else ""
    return value == expected, f"returned {value}{said}", None if value == expected else o.WRONG_RESULT


def judge_served(served: list[str], answers: dict[str, o.Outcome]) -> tuple:
    """Every URI the server lists must be allowed: (passed, observed, failure kind, the failed call)."""
    refused = [u for u in served if not allowed(answers[u])]
    failed = [answers[u] for u in refused if answers[u].kind != o.RETURNED]
    if failed:
        return False, o.describe(failed[0]), o.failure_of(failed[0]) or o.WRONG_RESULT, failed[0]
    if refused:
        return False, f"refused served {refused}", o.WRONG_RESULT, None
    return True, f"allowed all {len(served)} served URIs", None, None


def judge_reads(outcomes: dict) -> tuple:
    """Every URI the student allows must read OK; allowing nothing reads nothing, and fails."""
    unreadable = [u for u, r in outcomes.items() if not r.ok]
    if not outcomes:
        return False, "allowed no URI at all, so nothing could be read", o.WRONG_RESULT, None
    if unreadable:
        return (False, f"allowed {len(unreadable)} URIs the server refuses, e.g. {unreadable[0]!r}", o.WRONG_RESULT,
                None)
    return True, f"all {len(outcomes)} allowed URIs read OK", None, None


async def grade_allowlist(student: Callable, battery: str = "uris", *, only: list[str] | None = None,
                          eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_is_allowed(uri) -> bool`` on the battery's URI rows and on real atlas servers.

    ``only`` restricts the battery to some scenario names, ``eras`` to some eras (the URI
    rows have the era ``any`` and are kept whenever ``eras`` is given).
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None if eras is None else [*eras, ANY_ERA])
    budget = budget or spec.get("budget_seconds", 5.0)
    student = without(student, spec.get("unavailable", ()))
    rows = rows_of(spec)
    battery_uris = [s["uri"] for s in spec["scenarios"] if "uri" in s]
    if all(s.era == ANY_ERA for s in scenarios):  # no server check: ask only about the selected rows
        battery_uris = [rows[s.name]["uri"] for s in scenarios]

    answers = await _answers(student, battery_uris, budget)
    reads: dict[str, str] = {}  # URI -> what the first real server answered, for allowed URIs
    verdicts: dict[tuple[str, str], Verdict] = {}

    for era in dict.fromkeys(s.era for s in scenarios if s.era != ANY_ERA):
        wanted = [s for s in scenarios if s.era == era]
        try:
            async with connect(spec.get("server", "atlas"), era=era, lab_timeout=budget * 40 + 60) as lab:
                served = [r.uri for r in (await lab.session.list_resources()).resources]
                answers.update(await _answers(student, [u for u in served if u not in answers], budget, answers))
                outcomes = {u: await read(lab.session, u) for u in dict.fromkeys(battery_uris + served)
                            if allowed(answers[u])}
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            for s in wanted:
                verdicts[s.name, s.era] = lab_verdict(s, o.lab_failed(exc))
            continue
        for u, r in outcomes.items():
            reads.setdefault(u, "ok" if r.ok else ("not-found" if r.not_found else f"error {r.code}"))
        for s in wanted:
            judged = judge_served(served, answers) if rows[s.name]["check"] == "served" else judge_reads(outcomes)
            verdicts[s.name, s.era] = Verdict(s, *judged)

    for s in scenarios:
        if s.era == ANY_ERA:
            uri = rows[s.name]["uri"]
            verdicts[s.name, s.era] = Verdict(s, *judge_row(s.expect["value"], answers[uri], reads.get(uri)),
                                              answers[uri])
    return publish(Scorecard(title, [verdicts[s.name, s.era] for s in scenarios], budget, battery))
