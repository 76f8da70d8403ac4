"""The output-schema cache lab: scenarios on the ``schema`` server, what they observe, and the probes.

Every scenario starts real ``schema`` servers (``fixtures/schema/NAME.json``) and records what the
client saw (``observed``) and what each server received (its ``audit.json``) as a ``Run``; ``check``
holds the run to the two oracles written by hand before any run (:mod:`course_lib.chapters.schema_oracles`).
The probes are what the chapter's mutants (:mod:`course_lib.chapters.schema_mutants`) must fail.
"""
from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager, contextmanager

from course_lib.refresh import candidate
from course_lib.walker import Catalog, walk
from course_lib.errors import CatalogError
from course_lib.lab_state import Lab
from course_lib.labs import connect
from course_lib.chapters.negative_controls import require
from course_lib.chapters.schema_mutants import MUTANTS  # noqa: F401 (chapter 11's cells read it here)
# (fixture_table and outcome only for chapter 03's cells, which read them here)
from course_lib.chapters.schema_oracles import Run, call_content, check, fixture, fixture_table, outcome  # noqa: F401

SEED_SCENARIOS = ("in_place_integer", "in_place_no_schema", "isolated_failed_candidate",
                  "isolated_retains_validation", "accepted_candidate", "accepted_candidate_validates")
SDK2_SCENARIOS = ("pruned", "page2_before_listing", "page2_after_walk", "cache_reabsorb")
SCENARIOS = SEED_SCENARIOS + SDK2_SCENARIOS
# A generous per-request budget: the chapter runs several servers at once (and the negative
# controls run whole copies of the course), which is slow on a shared machine.
BUDGET = {"request_timeout": 30.0}


# -- small observations -----------------------------------------------------------------------

async def call_outcome(lab: Lab, name: str = "alpha") -> dict:
    """Call the tool; ``accepted`` with its structured content, or the client's schema error.

    A ``client_schema_error`` is raised by the client *after* the server answered: the tool ran.
    """
    try:
        result = await lab.client.call_tool(name, {})
    except RuntimeError as exc:
        require(str(exc).startswith(f"Invalid structured content returned by tool {name}:"),
                "client_schema_error", f"unexpected client error: {exc}")
        cause = exc.__cause__
        return {"status": "client_schema_error", "error": getattr(cause, "message", str(exc))}
    require(not result.is_error, "tool_result", "the fixture returned an unexpected tool error")
    return {"status": "accepted", "content": result.structured_content}


def snapshot(catalog: Catalog) -> list[dict]:
    return [item.model_dump(mode="json", exclude_none=True) for item in catalog.items]


def accepts(schema: dict | None, payload) -> bool:
    """Does ``schema`` (checked on its own, outside the SDK) accept ``payload``?"""
    from jsonschema import Draft202012Validator  # slow first import: only where it is needed

    return schema is None or Draft202012Validator(schema).is_valid(payload)


def tools_list_requests(lab: Lab) -> int:
    """tools/list requests on the wire so far (explicit pages and any the SDK sent itself)."""
    return len(lab.wire.requests("tools/list"))


def audit_of(lab: Lab) -> dict:
    return json.loads(lab.file("audit.json"))


async def rejected_refresh(lab: Lab) -> str:
    """Walk again on the same session; the fixture makes the refresh a rejected one."""
    try:
        await walk(lab)
    except CatalogError as exc:
        return exc.reason
    require(False, "refresh_rejected", "bad catalog accepted: the refresh repeats a tool name")


class Opener:
    """``open_candidate()`` for a context manager written in cells: ``connect(server, **options)``
    each time it is called, remembering the last lab so that a scenario can read it afterwards."""

    def __init__(self, server, **options):
        self.server, self.options, self.lab = server, options, None

    @asynccontextmanager
    async def __call__(self):
        async with connect(self.server, **self.options) as lab:
            self.lab = lab
            yield lab

    @property
    def closed(self) -> bool:
        return self.lab is None or self.lab.returncode is not None


def _candidate(era: str, name: str, refresh=None):
    """(the context manager, what shows its lab and ``closed``): ``candidate`` unless ``refresh``,
    a context manager written in cells called as ``refresh(open_candidate)``, is given."""
    if refresh is None:
        made = candidate("schema", fixture=fixture(name), era=era, **BUDGET)
        return made, made
    opener = Opener("schema", fixture=fixture(name), era=era, **BUDGET)
    return refresh(opener), opener


async def refresh_must_fail(era: str, name: str, *, active: Lab | None = None, refresh=None):
    """Returns ``(reason, candidate, active_untouched)``."""
    # A candidate refresh that must be rejected: closed before the error, nothing yielded.
    frames_before = None if active is None else len(active.wire)
    manager, refresh = _candidate(era, name, refresh)
    yielded = False
    reason = None
    try:
        async with manager:
            yielded = True
    except CatalogError as exc:
        require(refresh.closed, "candidate_closed_before_error",
                "candidate process still running when its error arrived")
        reason = exc.reason
    require(not yielded, "candidate_never_yields", "candidate unexpectedly yielded an incomplete catalog")
    untouched = active is None or len(active.wire) == frames_before
    require(untouched, "active_untouched", "the candidate refresh sent frames on the active session")
    return reason, refresh, untouched


# -- the scenarios ---------------------------------------------------------------------------

async def _in_place(name: str, era: str) -> Run:
    async with connect("schema", fixture=fixture(name), era=era, **BUDGET) as lab:
        saved = await walk(lab)
        before = snapshot(saved)
        refresh = await rejected_refresh(lab)
        call = await call_outcome(lab)
        schema = saved.items[0].output_schema
        observed = {"saved_schema_type": schema["properties"]["value"]["type"],
                    "saved_snapshot_unchanged": snapshot(saved) == before,
                    "refresh": refresh, "call": call,
                    "saved_schema_accepts_payload": accepts(schema, call_content(name))}
    return Run(name, era, observed, {"server": audit_of(lab)}, {"server": lab})


async def _isolated(scenario: str, era: str, active_name: str, refresh=None) -> Run:
    async with connect("schema", fixture=fixture(active_name), era=era, **BUDGET) as active:
        saved = await walk(active)
        before = snapshot(saved)
        first = await call_outcome(active)
        reason, refresh, untouched = await refresh_must_fail(era, "candidate", active=active, refresh=refresh)
        observed = {"before_call": first, "refresh": reason,
                    "candidate_closed_before_active_call": refresh.closed,
                    "active_untouched_by_candidate": untouched}
        observed["saved_snapshot_unchanged"] = snapshot(saved) == before
        observed["after_call"] = await call_outcome(active)
    return Run(scenario, era, observed, {"active": audit_of(active), "candidate": audit_of(refresh.lab)},
               {"active": active, "candidate": refresh.lab})


async def _accepted(scenario: str, era: str, name: str, refresh=None) -> Run:
    manager, refresh = _candidate(era, name, refresh)
    async with manager as ready:
        observed = {"names": ready.catalog.names, "page_sizes": list(ready.catalog.page_sizes),
                    "call": await call_outcome(refresh.lab)}
    observed["closed_after_context"] = refresh.closed
    return Run(scenario, era, observed, {"candidate": audit_of(refresh.lab)}, {"candidate": refresh.lab})


async def _pruned(era: str) -> Run:
    async with connect("schema", fixture=fixture("pruned"), era=era, **BUDGET) as lab:
        first = await walk(lab)
        second = await walk(lab)  # complete single page without alpha: 2.3.0 prunes alpha's schema
        sent = tools_list_requests(lab)
        call = await call_outcome(lab)
        observed = {"first_walk": first.names, "second_walk": second.names, "call": call,
                    "implicit_tools_list": tools_list_requests(lab) - sent}
    return Run("pruned", era, observed, {"server": audit_of(lab)}, {"server": lab})


async def _page2(scenario: str, era: str, walk_first: bool) -> Run:
    async with connect("schema", fixture=fixture("page2"), era=era, **BUDGET) as lab:
        observed = {}
        if walk_first:
            observed["names"] = (await walk(lab)).names
        sent = tools_list_requests(lab)
        observed["call"] = await call_outcome(lab)
        observed["implicit_tools_list"] = tools_list_requests(lab) - sent
    return Run(scenario, era, observed, {"server": audit_of(lab)}, {"server": lab})


async def _cache_reabsorb(era: str) -> Run:
    async with connect("schema", fixture=fixture("cache_reabsorb"), era=era, **BUDGET) as lab:
        await lab.client.list_tools()   # page 1 via the Client: may be kept in its response cache
        await lab.session.list_tools()  # the session sees alpha become an integer
        await lab.client.list_tools()   # a cache hit re-absorbs the old listing into the session
        observed = {"wire_tools_list": tools_list_requests(lab), "call": await call_outcome(lab)}
    return Run("cache_reabsorb", era, observed, {"server": audit_of(lab)}, {"server": lab})


async def run(scenario: str, era: str = "legacy", refresh=None) -> Run:
    """Run one scenario in one era on real servers (nothing is compared yet).

    ``refresh``: a candidate context manager written in cells, called as ``refresh(open_candidate)``;
    the candidate scenarios use it instead of ``course_lib.refresh.candidate``.
    """
    if scenario in ("in_place_integer", "in_place_no_schema"):
        return await _in_place(scenario, era)
    if scenario == "isolated_failed_candidate":
        return await _isolated(scenario, era, "active", refresh)
    if scenario == "isolated_retains_validation":
        return await _isolated(scenario, era, "active_invalid", refresh)
    if scenario == "accepted_candidate":
        return await _accepted(scenario, era, "candidate_success", refresh)
    if scenario == "accepted_candidate_validates":
        return await _accepted(scenario, era, "candidate_success_invalid", refresh)
    if scenario == "pruned":
        return await _pruned(era)
    if scenario in ("page2_before_listing", "page2_after_walk"):
        return await _page2(scenario, era, walk_first=scenario == "page2_after_walk")
    if scenario == "cache_reabsorb":
        return await _cache_reabsorb(era)
    raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")


async def run_and_check(scenario: str, era: str = "legacy") -> Run:
    result = await run(scenario, era)
    check(result)
    return result

@contextmanager
def sdk_log():
    """The SDK client's log lines (its logger ``client``) while the block runs, kept in a list
    instead of reaching the kernel's stderr."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger, handler = logging.getLogger("client"), Keep(logging.WARNING)
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# -- probes (negative controls; the mutants they must catch are schema_mutants.MUTANTS) ------

async def probe_in_place() -> None:
    await run_and_check("in_place_integer")


async def probe_failed_candidate() -> str:
    """Returns the reason the candidate was refused (``duplicate_name`` or this raises)."""
    reason, _, _ = await refresh_must_fail("legacy", "candidate")
    require(reason == "duplicate_name", "candidate_rejected", f"candidate failed for another reason: {reason}")
    return reason


class CallerBug(Exception):
    """What a caller's own mistake inside a candidate block looks like in the probe."""


async def probe_caller_failure():
    """Returns the closed candidate."""
    refresh = candidate("schema", fixture=fixture("candidate_success"), era="legacy", **BUDGET)
    propagated = False
    try:
        async with refresh as ready:
            require(ready.catalog.names == ["alpha", "beta"], "candidate_complete", "incomplete candidate")
            raise CallerBug("the caller's own failure")
    except CallerBug:
        propagated = True
    require(propagated, "caller_failure_propagates", "caller failure was swallowed by the candidate")
    require(refresh.closed, "candidate_closed_after_caller_failure", "candidate process still running")
    return refresh


async def probe_accepted_candidate() -> None:
    await run_and_check("accepted_candidate")


def probe_asserts_run() -> None:
    """The control of a ``python -O`` run: an ``assert`` is compiled away there, a ``require`` is not."""
    ran = []
    assert ran.append(True) is None
    require(ran, "asserts_run", "assert statements were compiled away (python -O)")

