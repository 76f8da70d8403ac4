"""Chapter 5's exercise grader: a student's retrying candidate refresh, judged by the chapter's probes.

The student writes ``my_retrying_candidate(active, open_candidate)``, an async context manager
like ``course_lib.refresh.candidate`` that tries once more: ``open_candidate()`` is ``connect(...)``
for a candidate's own server process and session (the options are bound by the grader; the n-th
call may start a server with another fixture); ``active`` is the lab in use, passed only so that
the grader can see it stays untouched. Used as ``async with my_retrying_candidate(active,
open_candidate) as ready:``, it must yield only a complete catalog (``Ready(lab, catalog)`` or the
``Catalog``); when a candidate's walk is rejected, close it and walk exactly one new candidate;
let the second rejection's error out only after closing; never hold two candidates at once; let
the caller's exception propagate after closing, without retrying; and send nothing on ``active``.

Each scenario is one of the negative-control probes of ``course_lib.chapters.schema_lab``
(``probe_caller_failure``, ``probe_accepted_candidate``, and ``probe_in_place``'s question asked
of a candidate: does a rejected refresh change the active session?), rewritten to take the
student's context manager as a parameter, plus two probes of the retry (``probe_retry_recovers``,
``probe_retry_gives_up``). A row passes only if its probe passes; a failure names the probe's
check (``[candidate_never_yields] ...``).
The candidate's processes are opened by the grader's ``open_candidate``, which records every
lab, so "closed" means the process has exited; whatever the student leaves open is closed
after the row. The battery is ``fixtures/grading/candidate.json``, written by hand.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import anyio

from course_lib.chapters import schema_lab
from course_lib.chapters.negative_controls import require
from course_lib.errors import CatalogError, CheckFailed, CourseError, unwrap
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, load_battery, select
from course_lib.grading.budget import Stopped, stopped_inside, watched
from course_lib.grading.outcome import no_result
from course_lib.grading.runner import each_scenario
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.grading.unavailable import without
from course_lib.labs import connect
from course_lib.paths import fixture
from course_lib.protocol import LEGACY
from course_lib.walker import walk

BATTERY = "candidate"


def _fixture(relative: str):
    return fixture(*relative.split("/"))


class CandidateHandle:
    """What ``open_candidate()`` returns: ``async with`` it to start the candidate's server.

    The server runs in a task of the grader, so the grader can close it after the row even when
    the student's code never does.
    """

    def __init__(self, opener: "CandidateOpener"):
        self._opener = opener
        self._release = anyio.Event()
        self._done = anyio.Event()
        self._entered = False
        self.lab = None
        self.error: BaseException | None = None

    async def __aenter__(self):
        if self._entered:
            raise RuntimeError("each open_candidate() is entered once; call it again for another candidate")
        self._entered = True
        ready = anyio.Event()

        # The n-th candidate's server; a candidate still running when the next one opens is noted.
        options = dict(self._opener.options, fixture=self._opener.fixture_for(len(self._opener.labs)))
        if any(lab.returncode is None for lab in self._opener.labs):
            self._opener.overlapped = True

        async def hold() -> None:
            try:
                async with connect(**options) as lab:
                    self.lab = lab
                    self._opener.labs.append(lab)
                    ready.set()
                    await self._release.wait()
            except Exception as exc:  # kept for __aenter__; a failure after the walk is not the student's
                self.error = exc
            finally:
                ready.set()
                self._done.set()

        self._opener.task_group.start_soon(hold)
        await ready.wait()
        if self.lab is None:
            raise self.error or CourseError("the candidate could not start", reason="launch_failed")
        return self.lab

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        await self.close()
        return False

    async def close(self) -> None:
        if self._entered:
            self._release.set()
            with anyio.CancelScope(shield=True):
                await self._done.wait()


class CandidateOpener:
    """``open_candidate``: every lab it started, and whether all of them have exited."""

    def __init__(self, task_group, *, fixtures: list, **options: Any):
        self.task_group = task_group
        self.options = options
        self.fixtures = fixtures  # the n-th candidate's fixture; the last one repeats
        self.overlapped = False   # a candidate opened while an earlier one still ran
        self.labs: list = []
        self._handles: list[CandidateHandle] = []

    def fixture_for(self, index: int):
        return self.fixtures[min(index, len(self.fixtures) - 1)]

    def __call__(self) -> CandidateHandle:
        handle = CandidateHandle(self)
        self._handles.append(handle)
        return handle

    @property
    def lab(self):
        return self.labs[-1] if self.labs else None

    @property
    def closed(self) -> bool:
        return bool(self.labs) and all(lab.returncode is not None for lab in self.labs)

    async def close_all(self) -> None:
        for handle in self._handles:
            await handle.close()


def _catalog_of(ready: Any):
    catalog = getattr(ready, "catalog", ready)
    require(hasattr(catalog, "names") and hasattr(catalog, "page_sizes"), "candidate_complete",
            f"yielded {type(ready).__name__}, not Ready(lab, catalog) or a Catalog")
    return catalog


def _sent(active) -> int:
    """Frames the client sent on the active session (what can change its schema cache)."""
    return sum(1 for f in active.wire.frames if f.direction == "→")


async def _settled(active) -> None:
    """Wait for the handshake's last frame (legacy sends ``notifications/initialized`` after
    ``connect`` returns), so that a frame counted later is one the student's code sent."""
    if active.era != LEGACY:
        return
    with anyio.move_on_after(10):
        while "notifications/initialized" not in active.wire.methods():
            await anyio.sleep(0.01)


def _open(make, active, opener: CandidateOpener):
    """``make(active, opener)``, refused with a clear crash when it is not an async context manager."""
    manager = make(active, opener)
    if not (hasattr(manager, "__aenter__") and hasattr(manager, "__aexit__")):
        if hasattr(manager, "close") and hasattr(manager, "cr_code"):
            manager.close()  # a coroutine: an async def without @asynccontextmanager
        raise TypeError(f"my_retrying_candidate(...) returned {type(manager).__name__}, not an async context "
                        "manager (decorate it with @asynccontextmanager, or give it __aenter__/__aexit__)")
    return manager


def _require_untouched(active, frames_before: int) -> None:
    require(_sent(active) == frames_before, "active_untouched",
            "the candidate refresh sent frames on the active session")


def _require_opened(opener: CandidateOpener) -> None:
    require(opener.labs, "candidate_opened", "no candidate was opened: open_candidate() was never entered")


def _require_candidates(opener: CandidateOpener, count: int, why: str) -> None:
    require(not opener.overlapped, "one_candidate_at_a_time",
            "a new candidate was opened while the previous one still ran")
    require(len(opener.labs) == count, "retried_once", f"opened {len(opener.labs)} candidate(s); {why}")


async def _refused_refresh(make, active, opener: CandidateOpener, frames_before: int):
    """Enter the student's context manager on a candidate whose walk must fail: (whether it
    yielded, the CatalogError's reason, whether the candidate was closed when the error arrived)."""
    yielded, reason, closed_at_error = False, None, None
    try:
        async with _open(make, active, opener):
            yielded = True
    except CatalogError as exc:
        closed_at_error, reason = opener.closed, exc.reason
    except Exception:
        _require_untouched(active, frames_before)  # whatever else went wrong, this comes first
        raise
    return yielded, reason, closed_at_error


class CallerBug(schema_lab.CallerBug):
    """The caller's own failure inside the block (the chapter's probe raises the same class)."""


async def probe_caller_failure(make, active, opener: CandidateOpener, era: str) -> None:
    """``schema_lab.probe_caller_failure`` on the student's context manager."""
    frames_before = _sent(active)
    entered, propagated = False, False
    try:
        async with _open(make, active, opener) as ready:
            entered = True
            names = list(_catalog_of(ready).names)
            require(names == ["alpha", "beta"], "candidate_complete", f"incomplete candidate: yielded {names}")
            raise CallerBug("the caller's own failure")
    except CallerBug:
        propagated = True
    except CheckFailed:
        raise
    except Exception as exc:
        if not entered:
            raise  # the context manager itself failed before the block: a crash
        require(False, "caller_failure_propagates",
                f"the caller's CallerBug came out as {type(exc).__name__}: {exc}")
    require(propagated, "caller_failure_propagates", "caller failure was swallowed by the candidate")
    require(opener.closed, "candidate_closed_after_caller_failure", "candidate process still running")
    _require_untouched(active, frames_before)
    _require_candidates(opener, 1, "the caller's exception is no reason to refresh again")


async def probe_accepted_candidate(make, active, opener: CandidateOpener, era: str, oracle: str,
                                   attempts: int = 1) -> None:
    """``schema_lab.probe_accepted_candidate`` (both oracles) on the student's context manager."""
    frames_before = _sent(active)
    async with _open(make, active, opener) as ready:
        catalog = _catalog_of(ready)
        _require_opened(opener)
        observed = {"names": list(catalog.names), "page_sizes": list(catalog.page_sizes),
                    "call": await schema_lab.call_outcome(opener.lab)}
    observed["closed_after_context"] = opener.closed
    _require_untouched(active, frames_before)
    require(opener.closed, "closed_after_context", "candidate process still running after the block")
    _require_candidates(opener, attempts, "expected " + ("one: the first walk was complete" if attempts == 1
                                                         else "two: one rejected walk, one retry"))
    schema_lab.check(schema_lab.Run(oracle, era, observed, {"candidate": schema_lab.audit_of(opener.lab)}))


async def probe_retry_recovers(make, active, opener: CandidateOpener, era: str, oracle: str) -> None:
    """The first candidate's walk is rejected, the second is complete: adopt the second."""
    try:
        await probe_accepted_candidate(make, active, opener, era, oracle, attempts=2)
    except CatalogError as exc:
        require(False, "retried_once", f"the walk's CatalogError ({exc.reason}) left your context manager "
                f"after {len(opener.labs)} candidate(s): the rejected refresh was not retried")


async def probe_retry_gives_up(make, active, opener: CandidateOpener, era: str) -> None:
    """Every candidate's walk but the third is rejected: refuse after exactly one retry."""
    frames_before = _sent(active)
    yielded, reason, closed_at_error = await _refused_refresh(make, active, opener, frames_before)
    if not yielded:
        _require_opened(opener)
    require(not yielded, "candidate_never_yields", "candidate yielded a catalog after a second rejected walk")
    require(reason is not None, "candidate_rejected", "the block ended without the walk's CatalogError")
    require(closed_at_error, "candidate_closed_before_error", "candidate process still running when its error arrived")
    _require_untouched(active, frames_before)
    _require_candidates(opener, 2, "a rejected refresh is retried exactly once")
    require(reason == "duplicate_name", "candidate_rejected", f"candidate failed for another reason: {reason}")


async def probe_in_place(make, active, opener: CandidateOpener, era: str, oracle: str) -> dict:
    """``probe_in_place``'s question of a candidate: the rejected refresh leaves the active session
    as it was (no frame, the same validation), checked against both oracles."""
    saved = await walk(active)
    before = schema_lab.snapshot(saved)
    first = await schema_lab.call_outcome(active)
    frames_before = _sent(active)
    yielded, reason, closed_at_error = await _refused_refresh(make, active, opener, frames_before)
    untouched = _sent(active) == frames_before
    require(untouched, "active_untouched", "the candidate refresh sent frames on the active session")
    _require_opened(opener)
    require(not yielded, "candidate_never_yields", "candidate unexpectedly yielded an incomplete catalog")
    require(closed_at_error, "candidate_closed_before_error", "candidate process still running when its error arrived")
    observed = {"before_call": first, "refresh": reason, "candidate_closed_before_active_call": opener.closed,
                "active_untouched_by_candidate": untouched,
                "saved_snapshot_unchanged": schema_lab.snapshot(saved) == before,
                "after_call": await schema_lab.call_outcome(active)}
    return observed


PROBES = {"probe_caller_failure": probe_caller_failure,
          "probe_accepted_candidate": probe_accepted_candidate, "probe_in_place": probe_in_place,
          "probe_retry_recovers": probe_retry_recovers, "probe_retry_gives_up": probe_retry_gives_up}


async def grade_candidate(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                          eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_retrying_candidate(active, open_candidate)`` (an async context manager)."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None)
    era_list = [era for era in spec["era_list"] if eras is None or era in eras]
    if len(era_list) == 1:  # a card restricted to one era says so in its era column
        scenarios = [replace(s, era=era_list[0]) for s in scenarios]
    budget = budget or spec.get("budget_seconds", 30.0)
    entries = {entry["name"]: entry for entry in spec["scenarios"]}
    hints = spec["check_hints"]
    student = without(student, spec.get("unavailable", ()))

    async def attempt(s: Scenario, entry: dict, era: str) -> None:
        probe = PROBES[entry["probe"]]
        oracle = (entry["oracle"],) if "oracle" in entry else ()
        async with anyio.create_task_group() as tg:
            named = entry["candidate_fixture"]
            fixtures = [_fixture(n) for n in ([named] if isinstance(named, str) else named)]
            opener = CandidateOpener(tg, fixtures=fixtures, server=s.server, era=era,
                                     lab_timeout=budget + 60, **schema_lab.BUDGET)
            try:
                active_fixture = _fixture(entry.get("active_fixture", spec["active_fixture"]))
                async with connect("schema", fixture=active_fixture, era=era, lab_timeout=budget + 60,
                                   **schema_lab.BUDGET) as active:
                    await _settled(active)
                    # A cancel scope, not fail_after: connect would report a TimeoutError as its own.
                    # The watchdog stops a context manager that never gives the event loop back.
                    with watched(budget) as watch, anyio.move_on_after(budget) as scope:
                        if watch is not None:
                            watch.scope = scope
                        try:
                            observed = await probe(student, active, opener, era, *oracle)
                        except Stopped:
                            raise TimeoutError(no_result(budget)) from None
                        finally:
                            if watch is not None:
                                watch.active = False
            finally:
                await opener.close_all()
        if scope.cancelled_caught:
            raise TimeoutError(f"no result within {budget:g} s")
        if entry["probe"] == "probe_in_place":  # the oracles need both servers' finished audits
            schema_lab.check(schema_lab.Run(entry["oracle"], era, observed,
                                            {"active": schema_lab.audit_of(active),
                                             "candidate": schema_lab.audit_of(opener.lab)}))

    async def outcome(s: Scenario, era: str) -> tuple[str, str, str, o.Outcome | None] | None:
        """None when the probe passes in ``era``; otherwise (what happened, its hint key, failure, outcome)."""
        try:
            await attempt(s, entries[s.name], era)
        except BaseException as group:
            exc = unwrap(group) if isinstance(group, BaseExceptionGroup) else group
            if isinstance(exc, CheckFailed):
                return str(exc), exc.check, o.WRONG_RESULT, None
            if isinstance(exc, TimeoutError) or stopped_inside(exc):
                return no_result(budget), "no result", o.HANG, o.hung(budget)
            if isinstance(exc, Exception):  # the student's own bug is a verdict, not a crash of the grader
                return o.describe(o.crashed(exc)), "your code crashed", o.CRASH, o.crashed(exc)
            raise
        return None

    async def run(s: Scenario) -> Verdict:
        """One row: the probe in every era of the battery; it passes only if it passes in all."""
        # One era after the other: a context manager that spins holds the whole event loop, and
        # the watchdog can only stop the task it watches.
        found = {era: await outcome(s, era) for era in era_list}
        failures = {era: result for era, result in found.items() if result is not None}
        if not failures:
            return Verdict(s, True, "the probe passes")
        observed = [result[0] for result in failures.values()]
        _, key, failure, seen = next(iter(failures.values()))
        if len(failures) == len(era_list) and len(set(observed)) == 1:
            text = observed[0]
        else:
            text = "; ".join(f"{era}: {result[0]}" for era, result in failures.items())
        hint = hints.get(key, s.hint)
        return Verdict(replace(s, hint=hint), False, text, failure, seen)

    return publish(Scorecard(f"{title} (each stopped after {budget:g} s)", await each_scenario(run, scenarios),
                             battery=battery))
