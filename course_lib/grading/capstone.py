"""Chapter 10's capstone: ``MyClient(lab, allowed)`` (``refresh``, ``read``, ``bundle``), the student's servers audited.

One method per scenario on real servers in both eras, with ``walk``, ``bundles.acquire`` and ``refresh.candidate``
unavailable. Judged on the wire and the state left behind: nothing sent on the active session during a refresh,
page 1 asked of the candidate, no read outside the allowlist, chapter 05's bundle facts."""
from __future__ import annotations

import json
from contextlib import asynccontextmanager, nullcontext
from dataclasses import replace
from typing import Any, Callable
from urllib.parse import quote

from course_lib.bundles import short
from course_lib.display import Table, error_line
from course_lib.errors import CatalogError, CheckFailed
from course_lib.protocol import BOTH_ERAS
from course_lib.grading import audited_server, outcome as o
from course_lib.grading.battery import Scenario, describe_expectation, hint_in_era, load_battery, select
from course_lib.grading.budget import call_student, observe
from course_lib.grading.bundle_judge import bundle_rows
from course_lib.grading.core import judge_names
from course_lib.grading.runner import exercise, judge_rows, record
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.grading.unavailable import without
from course_lib.labs import connect
from course_lib.paths import fixture
from course_lib.walker import walk

SHARED_TARGET = "capstone-modern-catalog"  # one server's name in a response cache two clients share
URI_CHECK = "uri_allowlist"


def _lab_options(part: dict, era: str, budget: float, shared_cache: Any = None) -> dict:
    options: dict[str, Any] = dict(mode=part.get("mode"), era=era, lab_timeout=budget + 60, request_timeout=30)
    if "fixture" in part:
        options["fixture"] = fixture(*part["fixture"].split("/"))
    if part.get("shared_cache"):
        options["cache"] = shared_cache
    return options


def _schemas(lab) -> str:
    """The active session's output-schema cache, as comparable text."""
    return json.dumps(lab.session._tool_output_schemas, sort_keys=True, default=str)


async def _probe(lab, tool: str) -> str:
    """How the session validates ``tool``'s result right now, in one line."""
    try:
        result = await lab.client.call_tool(tool, {})
    except Exception as exc:  # a rejection by the client, or a refusal of the server
        return f"rejects {tool}: {error_line(exc)}"
    return f"accepts {tool} -> {json.dumps(result.structured_content)}"


def judge_refresh_refusal(expected: str | None, outcome: o.Outcome) -> tuple[bool, str, str | None]:
    """A refresh that raised: only the refusal the chapters teach passes, and only where expected."""
    observed = _answer(outcome, CatalogError)
    if isinstance(outcome.error, CatalogError):
        ok = expected == outcome.error.reason
        return ok, observed, None if ok else o.WRONG_REFUSAL
    return False, observed, o.CRASH if outcome.kind == o.REFUSED else o.failure_of(outcome)


def judge_refresh(s: Scenario, outcome: o.Outcome, hint: str, untouched_hint: str) -> Verdict:
    """The state left behind (``touched``, ``changed``, ``validated``/``now``), page 1, then the names."""
    st = outcome.state
    facts = []
    if st["touched"]:
        facts.append(f"sent {st['touched']} message(s) on the active session during the refresh")
    elif st["changed"]:
        facts.append("changed the active session's output schemas without a message")
    elif st["now"] != st["validated"]:
        facts.append(f"the active session now {st['now']} (before: {st['validated']})")
    hint = untouched_hint if facts else hint
    failure = None
    if outcome.kind != o.RETURNED:
        passed, observed, failure = judge_refresh_refusal(s.expect.get("refuses"), outcome)
    elif not st["opened"]:
        passed, observed = False, "returned without opening a candidate"
    else:
        if not st["page_1"]:
            facts.append("page 1 never reached the candidate server")
        expect = {"names": s.expect["names"]} if "names" in s.expect else {"raises": True}
        passed, observed, failure = judge_names(expect, outcome, f"refusing ({s.expect.get('refuses')})")
    ok = passed and not facts
    return Verdict(replace(s, hint=hint), ok, "; ".join(facts + [observed]),
                   None if ok else (o.WRONG_RESULT if facts else failure), outcome)


async def _run_refresh(student: Callable, s: Scenario, row: dict, spec: dict, budget: float) -> Verdict:
    from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore

    active_part, wanted = row.get("active", spec["refresh_active"]), row["candidate"]
    shared = CacheConfig(store=InMemoryResponseCacheStore(), partition="reviewer", target_id=SHARED_TARGET)
    opened: list[tuple[Any, int]] = []  # each candidate lab, and where the student's frames start on it

    @asynccontextmanager
    async def open_candidate():
        async with connect(wanted["server"], **_lab_options(wanted, s.era, budget, shared)) as lab:
            if wanted.get("before") == "bump":
                await lab.client.call_tool("bump", {})  # the catalog moved on since the cached page 1
            opened.append((lab, len(lab.wire)))
            yield lab

    async with connect(active_part["server"], **_lab_options(active_part, s.era, budget, shared)) as active:
        if active_part["server"] == "schema":
            await walk(active)  # the active session holds a catalog, as in chapter 03
        else:
            await active.client.list_tools()  # page 1 of the current catalog, now in the shared cache
        probe = active_part.get("probe")
        validated = await _probe(active, probe) if probe else None
        schemas = _schemas(active)
        mark = len(active.wire)

        async def call():
            client = await call_student(student, active, list(spec["allowed"]))
            return await call_student(client.refresh, open_candidate)

        outcome = await observe(call, budget)
        touched, changed = len(active.wire) - mark, _schemas(active) != schemas
        now = await _probe(active, probe) if probe and not touched else validated
    page_1 = sum(1 for lab, start in opened for f in lab.wire.frames[start:]
                 if f.direction == "→" and f.method == "tools/list" and f.params.get("cursor") is None)
    record(s, outcome := outcome.with_wire((), touched=touched, changed=changed, validated=validated, now=now,
                                           opened=len(opened), page_1=page_1))  # make record's row (its facts)
    return judge_refresh(s, outcome, hint_in_era(s, row), spec["untouched_hint"])


def documents() -> dict[str, str]:
    data = json.loads(fixture("atlas", "documents.json").read_text(encoding="utf-8"))
    return {data["base"] + quote(name, safe=""): text for name, text in data["documents"].items()}


def _answer(answer: o.Outcome, taught: type = CheckFailed) -> str:
    """What a call did in one line: the refusal the chapters teach (``taught``), any other error a crash."""
    if isinstance(answer.error, taught):  # (a typed error: only ever in a REFUSED outcome)
        return f"refused: {error_line(answer.error)}"
    return o.describe(o.crashed(answer.error) if answer.kind == o.REFUSED else answer)


def judge_reads(s: Scenario, row: dict, answers: dict[str, o.Outcome], reads: list, allowed: set,
                documents: dict, hint: str) -> Verdict:
    """Each URI's answer (the server's text, or CheckFailed(uri_allowlist) unsent); the hint names the first wrong."""
    problems, failure, first, culprit = [], None, None, None
    reached = [u for u in row["uris"] if u not in allowed and u in reads]
    if reached:
        problems.append(f"{len(reached)} URI(s) outside the allowlist reached the server, e.g. {reached[0]!r}")
        culprit = reached[0]
    for uri in row["uris"]:
        answer = answers[uri]
        if answer.kind in (o.CRASHED, o.HUNG) or (answer.kind == o.REFUSED and not isinstance(answer.error,
                                                                                           CheckFailed)):
            failure, first = failure or (o.failure_of(answer) or o.CRASH), first or answer
        if uri in allowed and answer.kind == o.RETURNED:
            if answer.value != documents.get(uri):
                problems.append(f"{uri!r}: returned {answer.value!r:.40}, not the document's text")
            elif uri not in reads:
                problems.append(f"{uri!r}: returned its text, but no read reached the server")
        elif uri in allowed:
            problems.append(f"{short(uri)}: {_answer(answer)}")
        elif answer.kind == o.RETURNED:
            problems.append(f"{uri!r}: returned {answer.value!r:.40} instead of refusing")
        elif not (isinstance(answer.error, CheckFailed) and answer.error.check == URI_CHECK):
            problems.append(f"{uri!r}: {_answer(answer)}")
        culprit = culprit or (uri if problems else None)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        named = (first or o.Outcome(o.RETURNED)).with_wire((first or o.Outcome(o.RETURNED)).sent, value=repr(culprit))
        return Verdict(replace(s, hint=hint), False, problems[0] + more, o.WRONG_RESULT if reached else failure, named)
    return Verdict(s, True, f"read {len(allowed & set(row['uris']))}, refused the others unsent")


async def _run_read(student: Callable, s: Scenario, row: dict, spec: dict, budget: float) -> Verdict:
    answers: dict[str, o.Outcome] = {}
    async with connect("atlas", era=s.era, lab_timeout=budget * len(row["uris"]) + 60, request_timeout=30) as lab:
        mark = len(lab.wire)
        built = await observe(lambda: call_student(student, lab, list(spec["allowed"])), budget)
        for uri in row["uris"]:
            if built.kind != o.RETURNED:  # the client could not be built, or an earlier read hung: not asked
                answers[uri] = built
                continue
            answers[uri] = await observe(lambda uri=uri: call_student(built.value.read, uri), budget)
            if answers[uri].kind == o.HUNG:
                built = o.hung(budget, "not asked: an earlier read did not return")
    reads = [f.params.get("uri") for f in lab.wire.frames[mark:] if f.direction == "→" and f.method == "resources/read"]
    record(s, o.returned(None).with_wire((), answers=answers, reads=reads))  # make record's row: each URI's answer
    return judge_reads(s, row, answers, reads, set(spec["allowed"]), documents(), hint_in_era(s, row))


class CapstoneCard(Scorecard):
    """The scorecard, with each audited server's failing MUST lines above the total (``audits``: the cards)."""

    def __init__(self, title: str, verdicts: list[Verdict], battery: str, spec: dict, audits: dict):
        super().__init__(title, verdicts, battery=battery)
        self.spec, self.audits = spec, audits

    def failure_lines(self) -> list[str]:
        failures, audits = super().failure_lines(), audited_server.card_lines(self.spec, self.audits)
        return failures + [""] + audits if failures and audits else failures or audits


def describe_capstone(battery: str = "capstone") -> Table:
    """What the capstone's check runs: each scenario, the method it calls, the expected outcome, the budget."""
    title, scenarios, spec = load_battery(battery)
    eras = sorted({s.era for s in scenarios}, key=list(BOTH_ERAS).index)
    rows = [[row["task"], row["name"], describe_expectation(row["expect"])] for row in spec["scenarios"]]
    rows += [["audit", e["name"], audited_server.EXPECTED] for e in spec.get("servers", ())]
    return Table(["method", "scenario", "expected"], rows, f"{len(rows)} scenarios in the {' and '.join(eras)} eras; "
                 f"each call is stopped after {spec['budget_seconds']:g} s")


async def grade_capstone(student: Callable, *servers: Callable, battery: str = "capstone",
                         only: list[str] | None = None, eras: list[str] | None = None,
                         budget: float | None = None) -> Scorecard:
    """Grade the capstone: the client class on each scenario's own lab, then each of ``servers`` under the audit."""
    ex = exercise(battery, budget=budget)
    scenarios, rows, spec = select(ex.scenarios + audited_server.scenarios_of(ex.spec), only, eras), ex.rows, ex.spec
    student = without(student, spec.get("unavailable", ()))
    ex.scenarios = [s for s in scenarios if s.name in rows]

    async def bundle_call(s: Scenario, lab):
        client = await call_student(student, lab, list(spec["allowed"]))
        return await call_student(client.bundle)

    snapshot, bundle = bundle_rows(ex, bundle_call)  # a bundle row: chapter 05's snapshot lab, bundle() judged

    async def row(s: Scenario, lab) -> Verdict:
        task = rows[s.name]["task"]
        run_task = {"refresh": _run_refresh, "read": _run_read}.get(task)
        verdict = await (run_task(student, s, rows[s.name], spec, ex.budget) if run_task else bundle(s, lab))
        if verdict.failure == o.CRASH and verdict.scenario.hint == hint_in_era(s, rows[s.name]):
            # no rule broken on the wire: the crash is the failure
            return replace(verdict, scenario=replace(verdict.scenario, hint=spec["crash_hint"]))
        return verdict

    verdicts = await judge_rows(ex, lambda s: snapshot(s) if rows[s.name]["task"] == "bundle" else nullcontext(), row)
    audited = [s for s in scenarios if s.name not in rows]
    audits, crashes = await audited_server.audit_servers(spec, servers, {s.name for s in audited})
    for s, f in ((s, audited_server.function_of(spec, s)) for s in audited):  # make record's row: its card, its crash
        record(s, o.returned(None).with_wire((), audit=audits[f], crash=crashes.get(f)))
        verdicts.append(audited_server.judge_audit(s, audits[f], crashes.get(f)))
    return publish(CapstoneCard(ex.title, verdicts, battery, spec, audits))
