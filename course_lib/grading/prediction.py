"""Chapter 07's exercise: ``my_prediction() -> {client: {mode: cell}}``, what each real client
makes of two catalog modes the chapter's tables leave out, judged against the clients, run live.

The battery's rows are the clients, its ``eras`` the modes. Every client runs once per mode behind chapter 07's
tap; each predicted cell is compared with the cell ``peer_runs.verdict`` writes. A wrong cell is told by its kind
and a hint naming the section, never the measured cell. A function that returns no dict starts no client."""
from __future__ import annotations

import re
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path

from mcp.types import PaginatedRequestParams

from course_lib.chapters import peer_runs, peers_env, peers_lab, real_clients
from course_lib.errors import unwrap
from course_lib.grading import outcome as o
from course_lib.grading.budget import observe
from course_lib.grading.runner import exercise, run
from course_lib.grading.scorecard import Scorecard, Verdict
from course_lib.labs import connect
from course_lib.scenarios import for_each

BATTERY = "prediction"
PEERS = {p.short: p for p in peers_env.PEERS}  # each in its first era: legacy
# A cell of the tables (``peer_runs.verdict``), read into its parts: what the client did, then those of it.
CELL = re.compile(r"(?P<refused>refused) (?P<reason>[^()]+) \((?P<lists>\d+)\)|cut at (?P<cut>\d+) requests"
                  r"|no answer in (?P<silent>\d+) s"
                  r"|(?P<items>[^()]+) \((?P<listed>\d+)\)(?: \+(?P<mark>cursor|warning))?")


def parsed(cell) -> tuple | None:
    """``(what, its parts...)``: ``refused`` (reason, requests), ``cut`` (requests), ``silent``
    (seconds) or ``listed`` (items, requests, mark); None when ``cell`` is no cell of the tables."""
    found = CELL.fullmatch(cell) if isinstance(cell, str) else None
    if found is None:
        return None
    if found["refused"]:
        return "refused", found["reason"], int(found["lists"])
    if found["cut"] or found["silent"]:
        return ("cut", int(found["cut"])) if found["cut"] else ("silent", int(found["silent"]))
    return "listed", found["items"], int(found["listed"]), found["mark"]


async def plain_loop(mode: str, budget: float) -> str:
    """Section 2's plain loop of the Python SDK: ``next_cursor`` back verbatim until it is None."""
    with tempfile.TemporaryDirectory(prefix="course-loop-") as tmp:
        log, names, error, cursor = Path(tmp) / "tap.jsonl", [], None, None
        try:
            async with connect(peer_runs.tapped_argv(log, "catalog", mode), request_timeout=budget) as lab:
                while True:
                    params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
                    page = await lab.session.list_tools(params=params)
                    names += [tool.name for tool in page.tools]
                    if (cursor := page.next_cursor) is None:
                        break
        except Exception as exc:  # the server's MCPError, or the tap's cut ending the lab
            error = unwrap(exc)
        return peer_runs.tap_verdict(log, names, error)


async def measure(client: str, modes: list[str], budget: float) -> dict[str, str]:
    """One client's cell on each mode, as the chapter's tables write it."""
    if client == "fastmcp":  # one client process, one tap per mode
        runs = await real_clients.measure(modes)
        return {m: real_clients.cell(runs[m]) for m in modes}
    cells = {}
    for m in modes:
        if client == "mcp loop":
            cells[m] = await plain_loop(m, budget)
        else:
            run = (peer_runs.run(PEERS[client], "catalog", m, timeout=budget) if client in PEERS
                   else peers_lab.walker_run("catalog", m, "legacy"))  # the course's walker
            cells[m] = peer_runs.verdict(await run)
    return cells


def judge(s, predicted, measured: str) -> Verdict:
    """One cell: the student's prediction against the measured one."""
    said, cell, yours = f"you predicted {predicted!r}", parsed(measured), parsed(predicted)
    if cell is None or cell[0] == "silent":  # the client itself did not finish: not the student's
        return Verdict(s, False, f"the client gave {measured!r}", o.LAB)
    if yours == cell:
        return Verdict(s, True, said)
    if yours is None or yours[0] == "silent":
        return Verdict(s, False, f"{said}: not a cell in the form of the tables", o.WRONG_RESULT)
    raised, you_raised = cell[0] == "refused", yours[0] == "refused"
    if raised != you_raised:
        return Verdict(s, False, f"{said}, but the client {'raised' if raised else 'did not raise'}",
                       o.MISSING_REFUSAL if raised else o.WRONG_REFUSAL)
    if raised:
        return Verdict(s, False, f"{said}, but it raised with another reason or count", o.WRONG_REFUSAL)
    return Verdict(s, False, f"{said}, but it listed other items or sent another count", o.WRONG_RESULT)


def judge_all(scenarios, outcome: o.Outcome, measured: dict | None) -> list[Verdict]:
    """Every cell, from what the student's function did and what the clients did."""
    if outcome.kind != o.RETURNED:  # the starter's NotImplementedError, a bug, a hang
        return [Verdict(s, False, o.describe(outcome), o.failure_of(outcome) or o.CRASH, outcome)
                for s in scenarios]
    if not isinstance(outcome.value, dict):  # (then nothing was measured: ``measured`` is None)
        return [Verdict(s, False, f"returned {outcome.value!r:.50}, not a dict {{client: {{mode: cell}}}}",
                        o.WRONG_RESULT) for s in scenarios]
    rows = {k: v for k, v in outcome.value.items() if isinstance(v, dict)}
    return [judge(s, rows.get(s.name, {}).get(s.era), measured[s.name][s.era]) for s in scenarios]


async def grade_prediction(student, battery: str = BATTERY) -> Scorecard:
    """Grade ``my_prediction()``: called once and, when it returned a dict, every client of the battery run live."""
    ex = exercise(battery)
    clients = list(dict.fromkeys(s.name for s in ex.scenarios))

    @asynccontextmanager
    async def open_lab(s):
        async def call():
            return student()

        outcome = await observe(call, ex.budget)
        yield outcome, (await for_each(lambda c: measure(c, ex.spec["eras"], ex.budget), clients, limit=2)
                        if isinstance(outcome.value, dict) else None)

    async def row(s, lab) -> Verdict:
        return judge_all([s], *lab)[0]

    return await run(ex, open_lab, row, key=lambda s: battery, calls=1)
