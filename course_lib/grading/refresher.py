"""The refresh exercise's grader: a student's refresh against an active server and a candidate.

The student writes ``async def my_refresh(active, open_candidate)``. ``active`` is the lab
whose session is in use (its catalog already walked); ``open_candidate()`` returns a fresh
``connect(...)`` context for a separate server process. The refresh must return the
candidate's complete catalog (names, Tool objects or a ``Catalog``) and raise when the
candidate's walk fails, and it must never send anything on the active session: every
listed page, even one the caller rejects, lands in that session's output-schema cache.

The battery ``fixtures/grading/refresh.json`` is written by hand: per scenario, the schema
fixture of the candidate server and the expected outcome. Every scenario runs on real
``schema`` servers in both eras, with ``grade``'s primitives (``observe``, ``judge_names``).
The capstone (chapter 12, ``grade_capstone``) grades one client that spans chapters 1-10: a
student's class ``MyClient(lab, allowed)`` whose ``refresh(open_candidate)``, ``read(uri)`` and
``bundle()`` the hand-written battery ``fixtures/grading/capstone.json`` calls on real servers,
each scenario in both eras. It is judged on the wire and on the state left behind: nothing sent
on the active session during a refresh and its output-schema validation unchanged afterwards,
page 1 of the candidate's catalog asked of the candidate server (never a listing stitched from a
response cache), no read of a URI outside the allowlist reaching the server, and chapter 8's
manifest and ``latest/`` counts for the bundle.
"""
from __future__ import annotations

import json
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, Callable

from mcp import MCPError

from course_lib.walker import walk
from course_lib.display import Table, error_line
from course_lib.errors import CatalogError, CheckFailed, CourseError
from course_lib.bundles import short
from course_lib.grading.bundle_reader import crashed, invoke, judge_bundle, prepare_before, prompt_refused
from course_lib.grading.core import (Scenario, Scorecard, Verdict, describe_expectation, each_scenario, judge_names,
                                     load_battery, observe, select)
from course_lib.chapters.snapshot_lab import load_oracle
from course_lib.labs import connect
from course_lib.paths import fixture


def _fixture(relative: str):
    return fixture(*relative.split("/"))


def load_refresh_battery(name: str) -> tuple[str, list[Scenario], dict, dict]:
    """A refresh battery and the batteries it ``includes``: (title, scenarios, spec, candidate fixtures).

    A scenario's candidate is ``server`` started with its ``mode`` and, when it names one, its
    ``fixture`` (a path under ``fixtures/``). Included batteries (e.g. ``walk``) bring their
    scenarios unchanged; each then runs as the candidate of a refresh.
    """
    title, scenarios, spec = load_battery(name)
    fixtures = {s["name"]: _fixture(s["fixture"]) for s in spec["scenarios"] if "fixture" in s}
    included = []
    for other in spec.get("includes", []):
        _, more, _, more_fixtures = load_refresh_battery(other)
        included += more
        fixtures.update(more_fixtures)
    keys = [(s.name, s.era) for s in included + scenarios]
    if len(keys) != len(set(keys)):
        raise ValueError(f"battery {name!r} repeats a scenario name")
    return title, included + scenarios, spec, fixtures


async def grade_refresh(student: Callable, battery: str = "refresh", *, only: list[str] | None = None,
                        eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(active, open_candidate)`` on the battery's servers.

    A scenario fails when the refresh sends anything on the active session (whatever it
    returns), returns without ever opening a candidate, or its outcome differs from the
    battery's expectation (complete names, or an error instead of a partial catalog).
    """
    title, scenarios, spec, candidates = load_refresh_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 8.0)
    active_fixture = _fixture(spec["active_fixture"])

    async def run(s: Scenario) -> Verdict:
        opened = 0

        def open_candidate():
            nonlocal opened
            opened += 1
            return connect(s.server, mode=s.mode, fixture=candidates.get(s.name), era=s.era,
                           lab_timeout=budget + 60)

        try:
            async with connect("schema", fixture=active_fixture, era=s.era, lab_timeout=budget + 60) as active:
                await walk(active)  # the active session holds a catalog, as in chapters 4 and 5
                before = len(active.wire)
                kind, observed, value = await observe(lambda: student(active, open_candidate), budget)
                touched = len(active.wire) - before
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return Verdict(s, False, f"the lab could not run: {error_line(exc)}")
        if touched:
            # Whatever it returned, the active session's cache may have changed: that is the failure.
            return Verdict(replace(s, hint=spec["untouched_hint"]), False,
                           f"sent {touched} message(s) on the active session, which must stay untouched")
        if kind == "returned" and not opened:
            return Verdict(s, False, "returned without opening a candidate")
        passed, observed = judge_names(s.expect, kind, observed, value)
        return Verdict(s, passed, observed)

    return Scorecard(title, await each_scenario(run, scenarios))


# -- the capstone: one client against chapters 1-10 ------------------------------------------------

SHARED_TARGET = "capstone-modern-catalog"  # one server's name in a response cache two clients share
URI_CHECK = "uri_allowlist"


def _lab_options(part: dict, era: str, budget: float, shared_cache: Any = None) -> dict:
    options: dict[str, Any] = dict(mode=part.get("mode"), era=era, lab_timeout=budget + 60, request_timeout=30)
    if "fixture" in part:
        options["fixture"] = _fixture(part["fixture"])
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


def _hint(s: Scenario, row: dict) -> str:
    return row.get("legacy_hint", s.hint) if s.era == "legacy" else s.hint


def _refusal(expected: str | None, kind: str, observed: str, value: Any) -> tuple[bool, str]:
    """A raised outcome of a refresh: only the refusal the chapters teach passes, and only where expected."""
    if kind == "hung":
        return False, observed
    if isinstance(value, CatalogError):
        return expected == value.reason, f"refused: {error_line(value)}"
    if isinstance(value, MCPError) and expected == f"MCPError {value.error.code}":
        return True, f"the server's refusal propagated: {error_line(value)}"
    return False, crashed(value)


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
            await walk(active)  # the active session holds a catalog, as in chapters 4 and 5
        else:
            await active.client.list_tools()  # page 1 of the current catalog, now in the shared cache
        probe = active_part.get("probe")
        validated = await _probe(active, probe) if probe else None
        schemas = _schemas(active)
        mark = len(active.wire)

        async def call():
            client = await invoke(student, active, list(spec["allowed"]))
            return await invoke(client.refresh, open_candidate)

        kind, observed, value = await observe(call, budget)
        touched = len(active.wire) - mark
        changed = _schemas(active) != schemas
        now = await _probe(active, probe) if probe and not touched else validated

    facts, hint = [], _hint(s, row)
    if touched:
        facts.append(f"sent {touched} message(s) on the active session during the refresh")
    elif changed:
        facts.append("changed the active session's output schemas without a message")
    elif now != validated:
        facts.append(f"the active session now {now} (before: {validated})")
    if facts:
        hint = spec["untouched_hint"]
    if kind != "returned":
        passed, observed = _refusal(s.expect.get("refuses"), kind, observed, value)
    elif not opened:
        passed, observed = False, "returned without opening a candidate"
    else:
        page_1 = sum(1 for lab, start in opened for f in lab.wire.frames[start:]
                     if f.direction == "→" and f.method == "tools/list" and f.params.get("cursor") is None)
        if not page_1:
            facts.append("page 1 never reached the candidate server")
        expect = {"names": s.expect["names"]} if "names" in s.expect else {"raises": True}
        passed, observed = judge_names(expect, kind, observed, value)
        if "refuses" in s.expect and observed.endswith("instead of raising"):
            observed = observed.replace("instead of raising", f"instead of refusing ({s.expect['refuses']})")
    return Verdict(replace(s, hint=hint), passed and not facts, "; ".join(facts + [observed]))


def _documents() -> dict[str, str]:
    from urllib.parse import quote

    data = json.loads(fixture("atlas", "documents.json").read_text(encoding="utf-8"))
    return {data["base"] + quote(name, safe=""): text for name, text in data["documents"].items()}


def _answer(kind: str, observed: str, value: Any) -> str:
    if kind == "hung":
        return observed
    return f"refused: {error_line(value)}" if isinstance(value, CheckFailed) else crashed(value)


async def _run_read(student: Callable, s: Scenario, row: dict, spec: dict, budget: float) -> Verdict:
    documents, allowed = _documents(), set(spec["allowed"])
    answers: dict[str, tuple[str, str, Any]] = {}
    async with connect("atlas", era=s.era, lab_timeout=budget * len(row["uris"]) + 60, request_timeout=30) as lab:
        mark = len(lab.wire)
        kind, observed, client = await observe(lambda: invoke(student, lab, list(spec["allowed"])), budget)
        for uri in row["uris"]:
            if kind != "returned":  # the client could not be built, or an earlier read hung: not asked
                answers[uri] = (kind, observed, client)
                continue
            answers[uri] = await observe(lambda uri=uri: invoke(client.read, uri), budget)
            if answers[uri][0] == "hung":
                kind, observed = "hung", "not asked: an earlier read did not return"
    reads = [f.params.get("uri") for f in lab.wire.frames[mark:] if f.direction == "→" and f.method == "resources/read"]

    problems = []
    reached = [u for u in row["uris"] if u not in allowed and u in reads]
    if reached:
        problems.append(f"{len(reached)} URI(s) outside the allowlist reached the server, e.g. {reached[0]!r}")
    for uri in row["uris"]:
        kind, observed, value = answers[uri]
        if uri in allowed and kind == "returned":
            if value != documents.get(uri):
                problems.append(f"{uri!r}: returned {value!r:.40}, not the document's text")
            elif uri not in reads:
                problems.append(f"{uri!r}: returned its text, but no read reached the server")
        elif uri in allowed:
            problems.append(f"{short(uri)}: {_answer(kind, observed, value)}")
        elif kind == "returned":
            problems.append(f"{uri!r}: returned {value!r:.40} instead of refusing")
        elif not (isinstance(value, CheckFailed) and value.check == URI_CHECK):
            problems.append(f"{uri!r}: {_answer(kind, observed, value)}")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Verdict(replace(s, hint=_hint(s, row)), False, problems[0] + more)
    return Verdict(s, True, f"read {len(allowed & set(row['uris']))}, refused the others unsent")


async def _run_bundle(student: Callable, s: Scenario, row: dict, spec: dict, budget: float) -> Verdict:
    full = load_oracle()
    oracle = {rev: full[rev] for rev in ("r1", "r2")}
    async with connect("snapshot", mode=s.mode, args=s.args, era=s.era, lab_timeout=budget + 60,
                       request_timeout=30) as lab:
        await prepare_before(lab, row.get("before"), oracle)
        before = len(lab.wire.requests())

        async def call():
            client = await invoke(student, lab, list(spec["allowed"]))
            return await invoke(client.bundle)

        kind, observed, value = await observe(call, budget)
    sent = lab.wire.requests()[before:]
    return judge_bundle(replace(s, hint=_hint(s, row)), kind, observed, value, sent, oracle=oracle,
                        latest_hint=spec["latest_hint"], refused_prompt=prompt_refused(sent, lab.wire))


RUNS = {"refresh": _run_refresh, "read": _run_read, "bundle": _run_bundle}


def describe_capstone(battery: str = "capstone") -> Table:
    """What the capstone's check runs: each scenario, the method it calls, the expected outcome, the budget."""
    title, scenarios, spec = load_battery(battery)
    eras = sorted({s.era for s in scenarios}, key=["legacy", "2026-07-28"].index)
    rows = [[row["task"], row["name"], describe_expectation(row["expect"])] for row in spec["scenarios"]]
    return Table(["method", "scenario", "expected"], rows,
                 f"{len(rows)} scenarios in the {' and '.join(eras)} eras; each call is stopped after "
                 f"{spec['budget_seconds']:g} s")


async def grade_capstone(student: Callable, battery: str = "capstone", *, only: list[str] | None = None,
                         eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade the capstone client: ``student(lab, allowed)`` and its ``refresh``, ``read`` and ``bundle``.

    ``student`` is the class (or any callable that builds the client). Each scenario builds a
    client on its own active lab and calls one method; ``only`` and ``eras`` select scenarios.
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    rows = {row["name"]: row for row in spec["scenarios"]}
    budget = budget or spec.get("budget_seconds", 8.0)

    async def run(s: Scenario) -> Verdict:
        row = rows[s.name]
        try:
            verdict = await RUNS[row["task"]](student, s, row, spec, budget)
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return Verdict(s, False, f"the lab could not run: {error_line(exc)}")
        if not verdict.passed and "your code crashed:" in verdict.observed \
                and verdict.scenario.hint == _hint(s, row):  # no rule broken on the wire: the crash is the failure
            return Verdict(replace(verdict.scenario, hint=spec["crash_hint"]), False, verdict.observed)
        return verdict

    return Scorecard(title, await each_scenario(run, scenarios))
