"""Chapter 03's exercise: ``my_retrying_candidate(active, open_candidate)``, judged by probes.

An async context manager like ``refresh.candidate`` (unavailable to it) that tries once more: it yields only a
complete catalog, closes a rejected candidate and walks exactly one new one, never runs two at once, lets the
caller's exception propagate unretried, and sends nothing on ``active``. Each row is one probe, in every era."""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Callable

import anyio

from course_lib.chapters import schema_lab, schema_oracles
from course_lib.errors import CatalogError, CheckFailed, unwrap
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario
from course_lib.grading.budget import stopped_inside, within
from course_lib.grading.candidate_opener import CandidateOpener, sent, settled
from course_lib.grading.runner import exercise, run
from course_lib.grading.scorecard import Scorecard, Verdict
from course_lib.grading.unavailable import without
from course_lib.labs import connect
from course_lib.paths import fixture
from course_lib.walker import walk

BATTERY = "candidate"
require = CheckFailed.require  # ``value=``: what the check's hint names as ``{value}``


def _catalog_of(ready: Any):
    catalog = getattr(ready, "catalog", ready)
    require(hasattr(catalog, "names") and hasattr(catalog, "page_sizes"), "candidate_complete",
            f"yielded {type(ready).__name__}, not Ready(lab, catalog) or a Catalog")
    return catalog


def _open(make, active, opener: CandidateOpener):
    """``make(active, opener)``, refused with a clear crash when it is not an async context manager."""
    manager = make(active, opener)
    if not (hasattr(manager, "__aenter__") and hasattr(manager, "__aexit__")):
        if hasattr(manager, "close") and hasattr(manager, "cr_code"):
            manager.close()  # a coroutine: an async def without @asynccontextmanager
        raise TypeError(f"my_retrying_candidate(...) returned {type(manager).__name__}, not an async context "
                        "manager (decorate it with @asynccontextmanager, or give it __aenter__/__aexit__)")
    return manager


@dataclass
class Seen:
    """What a probe saw once the student's context manager was done with its candidates."""

    opened: int                        # candidates opened
    overlapped: bool                   # two candidates ever ran at once
    closed: bool                       # every candidate is closed
    sent: int                          # frames sent on the active session since the probe began
    yielded: bool = False              # the block was entered
    reason: str | None = None          # the CatalogError's reason that ended the block
    closed_at_error: bool | None = None  # every candidate was closed when that error arrived
    propagated: bool = False           # the caller's own exception came out as itself
    came_out_as: str | None = None     # ... or as this other exception


def seen(opener: CandidateOpener, active, frames_before: int, **found) -> Seen:
    return Seen(len(opener.labs), opener.overlapped, opener.closed, sent(active) - frames_before, **found)


def judge_untouched(s: Seen) -> None:
    require(s.sent == 0, "active_untouched", "the candidate refresh sent frames on the active session",
            value=str(s.sent))


def judge_opened(s: Seen) -> None:
    require(s.opened, "candidate_opened", "no candidate was opened: open_candidate() was never entered")


def judge_candidates(s: Seen, count: int, why: str) -> None:
    require(not s.overlapped, "one_candidate_at_a_time", "a new candidate was opened while the previous one still ran")
    require(s.opened == count, "retried_once", f"opened {s.opened} candidate(s); {why}", value=str(s.opened))


def judge_caller_failure(s: Seen) -> None:
    """The caller's exception inside the block comes out as itself, after the candidate closed."""
    require(s.came_out_as is None, "caller_failure_propagates", f"the caller's CallerBug came out as {s.came_out_as}")
    require(s.propagated, "caller_failure_propagates", "caller failure was swallowed by the candidate")
    require(s.closed, "candidate_closed_after_caller_failure", "candidate process still running")
    judge_untouched(s)
    judge_candidates(s, 1, "the caller's exception is no reason to refresh again")


def judge_accepted(s: Seen, attempts: int) -> None:
    """A complete catalog was yielded after ``attempts`` candidates, each closed after the block."""
    judge_untouched(s)
    require(s.closed, "closed_after_context", "candidate process still running after the block")
    judge_candidates(s, attempts, "expected " + ("one: the first walk was complete" if attempts == 1
                                                 else "two: one rejected walk, one retry"))


def judge_rejected(s: Seen) -> None:
    """A rejected refresh never yields; its candidate is closed before its CatalogError arrives."""
    judge_untouched(s)
    judge_opened(s)
    require(not s.yielded, "candidate_never_yields", "candidate unexpectedly yielded an incomplete catalog")
    require(s.closed_at_error, "candidate_closed_before_error", "candidate process still running when its error arrived")


def judge_gives_up(s: Seen) -> None:
    """Two rejected walks: one retry, then the walk's own CatalogError (duplicate_name)."""
    if not s.yielded:
        judge_opened(s)
    require(not s.yielded, "candidate_never_yields", "candidate yielded a catalog after a second rejected walk")
    require(s.reason is not None, "candidate_rejected", "the block ended without the walk's CatalogError")
    require(s.closed_at_error, "candidate_closed_before_error", "candidate process still running when its error arrived")
    judge_untouched(s)
    judge_candidates(s, 2, "a rejected refresh is retried exactly once")
    require(s.reason == "duplicate_name", "candidate_rejected", f"candidate failed for another reason: {s.reason}",
            value=s.reason)


async def _refused_refresh(make, active, opener: CandidateOpener, frames_before: int) -> Seen:
    """Enter the student's context manager on a candidate whose walk must fail: what was seen."""
    yielded, reason, closed_at_error = False, None, None
    try:
        async with _open(make, active, opener):
            yielded = True
    except CatalogError as exc:
        closed_at_error, reason = opener.closed, exc.reason
    except Exception:
        judge_untouched(seen(opener, active, frames_before))  # whatever else went wrong, this comes first
        raise
    return seen(opener, active, frames_before, yielded=yielded, reason=reason, closed_at_error=closed_at_error)


async def probe_caller_failure(make, active, opener: CandidateOpener, era: str) -> None:
    """``schema_lab.probe_caller_failure`` on the student's context manager."""
    frames_before = sent(active)
    entered, propagated, came_out_as = False, False, None
    try:
        async with _open(make, active, opener) as ready:
            entered = True
            names = list(_catalog_of(ready).names)
            require(names == ["alpha", "beta"], "candidate_complete", f"incomplete candidate: yielded {names}",
                    value=str(names))
            raise schema_lab.CallerBug("the caller's own failure")  # as the chapter's probe raises it
    except schema_lab.CallerBug:
        propagated = True
    except CheckFailed:
        raise
    except Exception as exc:
        if not entered:
            raise  # the context manager itself failed before the block: a crash
        came_out_as = f"{type(exc).__name__}: {exc}"
    judge_caller_failure(seen(opener, active, frames_before, propagated=propagated, came_out_as=came_out_as))


async def probe_accepted_candidate(make, active, opener: CandidateOpener, era: str, oracle: str,
                                   attempts: int = 1) -> None:
    """``schema_lab.probe_accepted_candidate`` (both oracles) on the student's context manager."""
    frames_before = sent(active)
    async with _open(make, active, opener) as ready:
        catalog = _catalog_of(ready)
        judge_opened(seen(opener, active, frames_before))
        observed = {"names": list(catalog.names), "page_sizes": list(catalog.page_sizes),
                    "call": await schema_lab.call_outcome(opener.lab)}
    observed["closed_after_context"] = opener.closed
    judge_accepted(seen(opener, active, frames_before), attempts)
    schema_oracles.check(schema_oracles.Run(oracle, era, observed, {"candidate": schema_lab.audit_of(opener.lab)}))


async def probe_retry_recovers(make, active, opener: CandidateOpener, era: str, oracle: str) -> None:
    """The first candidate's walk is rejected, the second is complete: adopt the second."""
    try:
        await probe_accepted_candidate(make, active, opener, era, oracle, attempts=2)
    except CatalogError as exc:
        require(False, "retried_once", f"the walk's CatalogError ({exc.reason}) left your context manager "
                f"after {len(opener.labs)} candidate(s): the rejected refresh was not retried")


async def probe_retry_gives_up(make, active, opener: CandidateOpener, era: str) -> None:
    """Every candidate's walk but the third is rejected: refuse after exactly one retry."""
    judge_gives_up(await _refused_refresh(make, active, opener, sent(active)))


async def probe_in_place(make, active, opener: CandidateOpener, era: str, oracle: str) -> dict:
    """The rejected refresh leaves the active session as it was (no frame, the same validation): both oracles."""
    saved = await walk(active)
    before = schema_lab.snapshot(saved)
    first = await schema_lab.call_outcome(active)
    frames_before = sent(active)
    s = await _refused_refresh(make, active, opener, frames_before)
    judge_rejected(s)
    return {"before_call": first, "refresh": s.reason, "candidate_closed_before_active_call": opener.closed,
            "active_untouched_by_candidate": sent(active) == frames_before,
            "saved_snapshot_unchanged": schema_lab.snapshot(saved) == before,
            "after_call": await schema_lab.call_outcome(active)}


PROBES = {p.__name__: p for p in (probe_caller_failure, probe_accepted_candidate, probe_in_place,
                                  probe_retry_recovers, probe_retry_gives_up)}


def classify(group: BaseException, budget: float) -> o.Outcome:
    """A failed probe's outcome: a named check's ``REFUSED``, ``HUNG``, the student's ``CRASHED``; else re-raised."""
    exc = unwrap(group) if isinstance(group, BaseExceptionGroup) else group
    if isinstance(exc, CheckFailed):
        return o.raised(exc)
    if isinstance(exc, TimeoutError) or stopped_inside(exc):
        return o.hung(budget)
    if isinstance(exc, Exception):  # the student's own bug is a verdict, not a crash of the grader
        return o.crashed(exc)
    raise group


def judged(outcome: o.Outcome) -> tuple[str, str, str]:
    """(what happened, its hint key, failure kind) of a failed probe's outcome."""
    if outcome.kind == o.REFUSED:
        return str(outcome.error), outcome.error.check, o.WRONG_RESULT
    return o.describe(outcome), *((("no result", o.HANG) if outcome.kind == o.HUNG else ("your code crashed", o.CRASH)))


def judge_eras(s: Scenario, found: dict, hints: dict) -> Verdict:
    """One row: the probe's outcome in every era (None: it passed); it passes only if it passes in all."""
    failures = {era: judged(outcome) for era, outcome in found.items() if outcome is not None}
    if not failures:
        return Verdict(s, True, "the probe passes")
    observed = [result[0] for result in failures.values()]
    _, key, failure = next(iter(failures.values()))
    seen = next(outcome for outcome in found.values() if outcome is not None)
    if isinstance(seen.error, CheckFailed) and "value" in seen.error.details:  # the value the check's hint names
        seen = seen.with_wire(seen.sent, value=seen.error.details["value"])
    same = len(failures) == len(found) and len(set(observed)) == 1
    text = observed[0] if same else "; ".join(f"{era}: {result[0]}" for era, result in failures.items())
    return Verdict(replace(s, hint=hints.get(key, s.hint)), False, text, failure, seen)


async def grade_candidate(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                          eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_retrying_candidate(active, open_candidate)`` (an async context manager)."""
    ex = exercise(battery, only, budget=budget, default=30.0)
    spec, budget, entries = ex.spec, ex.budget, ex.rows
    era_list = [era for era in spec["era_list"] if eras is None or era in eras]
    if len(era_list) == 1:  # a card restricted to one era says so in its era column
        ex.scenarios = [replace(s, era=era_list[0]) for s in ex.scenarios]
    student = without(student, spec.get("unavailable", ()))

    async def outcome(s: Scenario, era: str) -> o.Outcome | None:
        """None when the probe passes in ``era``; otherwise what ``classify`` makes of its exception."""
        entry, named = entries[s.name], entries[s.name]["candidate_fixture"]
        oracle = (entry["oracle"],) if "oracle" in entry else ()
        try:
            fixtures = [fixture(*n.split("/")) for n in ([named] if isinstance(named, str) else named)]
            async with anyio.create_task_group() as tg:
                opener = CandidateOpener(tg, fixtures=fixtures, server=s.server, era=era,
                                         lab_timeout=budget + 60, **schema_lab.BUDGET)
                try:
                    active_fixture = fixture(*entry.get("active_fixture", spec["active_fixture"]).split("/"))
                    async with connect("schema", fixture=active_fixture, era=era, lab_timeout=budget + 60,
                                       **schema_lab.BUDGET) as active:
                        await settled(active)
                        with within(budget) as bound:  # (a context manager that spins is stopped too)
                            observed = await PROBES[entry["probe"]](student, active, opener, era, *oracle)
                finally:
                    await opener.close_all()
            if bound.expired:
                return o.hung(budget)
            if entry["probe"] == "probe_in_place":  # the oracles need both servers' finished audits
                schema_oracles.check(schema_oracles.Run(entry["oracle"], era, observed,
                                                        {"active": schema_lab.audit_of(active),
                                                         "candidate": schema_lab.audit_of(opener.lab)}))
        except BaseException as group:
            return classify(group, budget)

    async def row(s: Scenario, lab: None) -> Verdict:
        # One era after the other: a context manager that spins holds the event loop; the watchdog stops one task.
        return judge_eras(s, {era: await outcome(s, era) for era in era_list}, spec["check_hints"])

    # A row opens its own labs, one an era (``outcome``).
    return await run(ex, lambda s: nullcontext(), row, calls=len(ex.scenarios) * len(era_list))
