"""Chapter 04's exercise: ``my_prediction()``, what each real client makes of two catalogs the
chapter's tables leave out, judged against the clients themselves, run live.

``fixtures/grading/prediction.json`` lists the clients (its rows) and the catalog modes (its
``eras``: here a card's column is a mode). The student's function is called once, under the
budget, and returns ``{client: {mode: cell}}``; then every client runs once per mode behind
chapter 04's tap, two clients at a time (``measure_all``), and each predicted cell is compared
with the cell ``peers_lab.verdict`` writes for that run, as the chapter's tables do. A wrong cell
is told by its kind (the client raised, or did not, or another list or reason) and a hint
naming the section whose cell teaches it; the measured cell itself is not shown.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from mcp.types import PaginatedRequestParams

from course_lib.chapters import peers_lab, real_clients
from course_lib.errors import unwrap
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.budget import observe
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import for_each

BATTERY = "prediction"
PEERS = {p.short: p for p in peers_lab.PEERS}  # each in its first era: legacy
CELL = re.compile(r"(refused \S+ \(\d+\)|cut at \d+ requests|\S+ \(\d+\)( \+cursor| \+warning)?)")


async def plain_loop(mode: str, budget: float) -> str:
    """Section 2's plain loop of the Python SDK: ``next_cursor`` back verbatim until it is None."""
    with tempfile.TemporaryDirectory(prefix="course-loop-") as tmp:
        log, names, error, cursor = Path(tmp) / "tap.jsonl", [], None, None
        try:
            async with connect(peers_lab.tapped_argv(log, "catalog", mode), request_timeout=budget) as lab:
                while True:
                    params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
                    page = await lab.session.list_tools(params=params)
                    names += [tool.name for tool in page.tools]
                    if (cursor := page.next_cursor) is None:
                        break
        except Exception as exc:  # an MCPError, or the tap's cut ending the lab
            error = unwrap(exc)
        return peers_lab.tap_verdict(log, names, error)


async def measure(client: str, modes: list[str], budget: float) -> dict[str, str]:
    """One client's cell on each mode, in the form of the chapter's tables."""
    if client == "fastmcp":  # one client process, one tap per mode
        runs = await real_clients.measure(modes)
        return {m: real_clients.cell(runs[m]) for m in modes}
    cells = {}
    for mode in modes:
        if client in PEERS:
            run = await peers_lab.run(PEERS[client], "catalog", mode, timeout=budget)
            cells[mode] = peers_lab.verdict(run)
        elif client == "mcp loop":
            cells[mode] = await plain_loop(mode, budget)
        else:
            cells[mode] = peers_lab.verdict(await peers_lab.walker_run("catalog", mode, "legacy"))
    return cells


async def measure_all(battery: str = BATTERY) -> dict[str, dict[str, str]]:
    """Every client of the battery on every mode, live, two clients at a time."""
    _, scenarios, spec = load_battery(battery)
    clients = list(dict.fromkeys(s.name for s in scenarios))
    return await for_each(lambda c: measure(c, spec["eras"], spec["budget_seconds"]), clients, limit=2)


def judge(s, predicted, measured: str) -> Verdict:
    """One cell: the student's prediction against the measured cell."""
    said = f"you predicted {predicted!r}"
    if measured.startswith("no answer"):  # the client itself did not finish: not the student's
        return Verdict(s, False, f"the client gave {measured!r}", o.LAB)
    if predicted == measured:
        return Verdict(s, True, said)
    if not isinstance(predicted, str) or not CELL.fullmatch(predicted):
        return Verdict(s, False, f"{said}: not a cell in the tables' form", o.WRONG_RESULT)
    raised, you_raised = measured.startswith("refused"), predicted.startswith("refused")
    if raised and not you_raised:
        return Verdict(s, False, f"{said}, but the client raised", o.MISSING_REFUSAL)
    if you_raised:
        why = "it raised, with another reason or count" if raised else "it did not raise"
        return Verdict(s, False, f"{said}, but {why}", o.WRONG_REFUSAL)
    return Verdict(s, False, f"{said}, but it listed otherwise (or another count)", o.WRONG_RESULT)


def judge_all(scenarios, outcome: o.Outcome, measured: dict | None) -> list[Verdict]:
    """Every cell, from what the student's function did and what the clients did."""
    failure = o.failure_of(outcome)
    if failure is not None or outcome.kind == o.REFUSED:
        return [Verdict(s, False, o.describe(outcome), failure or o.CRASH, outcome) for s in scenarios]
    if not isinstance(outcome.value, dict) or measured is None:
        return [Verdict(s, False, f"returned {outcome.value!r:.60}, not a dict {{client: {{mode: cell}}}}",
                        o.WRONG_RESULT) for s in scenarios]
    value = outcome.value
    return [judge(s, (value.get(s.name) or {}).get(s.era) if isinstance(value.get(s.name), dict) else None,
                  measured[s.name][s.era]) for s in scenarios]


async def grade_prediction(student, battery: str = BATTERY) -> Scorecard:
    """Grade ``my_prediction() -> {client: {mode: cell}}`` against every client, run live."""
    title, scenarios, spec = load_battery(battery)
    budget = spec["budget_seconds"]

    async def call():
        return student()

    outcome = await observe(call, budget)
    answered = outcome.kind == o.RETURNED and isinstance(outcome.value, dict)
    measured = await measure_all(battery) if answered else None  # nothing to compare: no run
    return publish(Scorecard(title, judge_all(scenarios, outcome, measured), budget, battery))
