"""The candidate exercise's judges (chapter 03) in-process: what a failed probe's exception makes of a
row (``classify``), a row judged on its eras (``judge_eras``), and the probes' checks of what the
candidates and the active session recorded (a ``CandidateOpener`` holding exited or running labs,
an active session's ``wire.Wire``). The probes themselves run on real servers:
``test_grading_candidate_refresh.py``."""
import json
from dataclasses import replace
from types import SimpleNamespace

import asyncio
import pytest

from course_lib.errors import CatalogError, CheckFailed
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.budget import Stopped
from course_lib.grading.candidate_opener import CandidateOpener, sent
from course_lib.grading.candidate_refresh import (Seen, _catalog_of, classify, judge_accepted, judge_candidates, judged,
                                                  judge_caller_failure, judge_eras, judge_gives_up, judge_opened,
                                                  judge_rejected, judge_untouched, seen)
from course_lib.wire import Wire

_, SCENARIOS, SPEC = load_battery("candidate")
ROW = next(s for s in SCENARIOS if s.name == "retry recovers")
HINTS = SPEC["check_hints"]


def grouped(exc):
    """As the task groups of the probe's labs raise it."""
    return BaseExceptionGroup("unhandled errors in a TaskGroup", [exc, asyncio.CancelledError()])


@pytest.mark.parametrize("exc, result", [
    (CheckFailed("retried_once", "opened 1 candidate(s)"),
     ("[retried_once] opened 1 candidate(s)", "retried_once", o.WRONG_RESULT, None)),
    (grouped(CheckFailed("active_untouched", "sent frames")),
     ("[active_untouched] sent frames", "active_untouched", o.WRONG_RESULT, None)),
    (TimeoutError("no result within 30 s"), ("no result within 30 s (stopped)", "no result", o.HANG, o.hung(30))),
    (grouped(TimeoutError()), ("no result within 30 s (stopped)", "no result", o.HANG, o.hung(30))),
])
@pytest.mark.anyio  # (an ExceptionGroup is unwrapped of the running loop's cancellations)
async def test_a_failed_check_and_a_hang_are_the_rows_wrong_result_and_hang(exc, result):
    outcome = classify(exc, 30)
    assert judged(outcome) == result[:3]
    assert outcome == result[3] if result[3] is not None else outcome.kind == o.REFUSED


@pytest.mark.anyio  # (an ExceptionGroup is unwrapped of the running loop's cancellations)
async def test_the_watchdogs_stop_behind_any_error_is_a_hang():
    try:
        try:
            raise Stopped()
        except Stopped as stop:
            raise RuntimeError("the lab saw its task stopped") from stop
    except RuntimeError as exc:
        assert judged(classify(exc, 5))[1:3] == ("no result", o.HANG)


@pytest.mark.parametrize("exc", [CatalogError("duplicate_name", "beta twice"), ValueError("mine"),
                                 TypeError("not an async context manager")])
@pytest.mark.anyio  # (an ExceptionGroup is unwrapped of the running loop's cancellations)
async def test_the_students_own_exception_is_a_crash_kept_with_its_outcome(exc):
    outcome = classify(grouped(exc), 30)
    text, key, failure = judged(outcome)
    assert (key, failure, outcome.kind, outcome.error) == ("your code crashed", o.CRASH, o.CRASHED, exc)
    assert text == f"your code crashed: {o.last_line(exc)}"


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(1), asyncio.CancelledError()])
@pytest.mark.anyio  # (an ExceptionGroup is unwrapped of the running loop's cancellations)
async def test_what_is_not_the_students_is_raised_again(exc):
    with pytest.raises(type(exc)):
        classify(exc, 30)


FAIL = o.raised(CheckFailed("retried_once", "opened 1 candidate(s)"))
CRASH = o.crashed(ValueError("x"))
SAID = {"fail": "[retried_once] opened 1 candidate(s)", "crash": "your code crashed: ValueError: x"}


def test_a_row_passes_only_when_its_probe_passes_in_every_era():
    v = judge_eras(ROW, {"legacy": None, "2026-07-28": None}, HINTS)
    assert (v.passed, v.observed) == (True, "the probe passes")
    for found in ({"legacy": FAIL, "2026-07-28": None}, {"legacy": None, "2026-07-28": FAIL}):
        v = judge_eras(ROW, found, HINTS)
        era = next(e for e, r in found.items() if r)
        assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_RESULT, f"{era}: {SAID['fail']}")
        assert v.scenario.hint == HINTS["retried_once"]


def test_a_failure_of_every_era_is_said_once_and_different_ones_each_with_its_era():
    v = judge_eras(ROW, {"legacy": FAIL, "2026-07-28": FAIL}, HINTS)
    assert v.observed == SAID["fail"]
    assert judge_eras(ROW, {"legacy": FAIL}, HINTS).observed == SAID["fail"], "a card of one era"
    v = judge_eras(ROW, {"legacy": CRASH, "2026-07-28": FAIL}, HINTS)
    assert v.observed == f"legacy: {SAID['crash']}; 2026-07-28: {SAID['fail']}"
    assert (v.failure_class, v.outcome) == (o.CRASH, CRASH)
    assert v.scenario.hint.endswith(HINTS["your code crashed"])
    v = judge_eras(ROW, {"legacy": o.raised(CheckFailed("not a hint", "y")), "2026-07-28": None}, HINTS)
    assert v.scenario.hint == ROW.hint, "a check without a hint of its own keeps the row's"


# -- the probes' checks of what was recorded ----------------------------------------------------

def opener(*returncodes, overlapped=False):
    """The grader's opener after the student's code ran: one lab per candidate (None: still running)."""
    held = CandidateOpener(None, fixtures=[])
    held.labs = [SimpleNamespace(returncode=code) for code in returncodes]
    held.overlapped = overlapped
    return held


def active(*methods):
    wire = Wire()
    for n, method in enumerate(methods):
        wire.record("→", json.dumps({"jsonrpc": "2.0", "id": n, "method": method}))
        wire.record("←", json.dumps({"jsonrpc": "2.0", "id": n, "result": {}}))
    return SimpleNamespace(wire=wire)


def failed_check(call):
    with pytest.raises(CheckFailed) as caught:
        call()
    return caught.value.check


def test_what_is_seen_is_read_off_the_opener_and_the_active_sessions_wire():
    session = active("initialize", "notifications/initialized", "tools/list")
    before = sent(session)
    assert before == 3, "only the client's frames count"
    assert seen(opener(0, None, overlapped=True), session, before, yielded=True) == Seen(2, True, False, 0, yielded=True)
    session.wire.record("→", json.dumps({"jsonrpc": "2.0", "method": "ping"}))
    assert seen(opener(0, 0), session, before) == Seen(2, False, True, 1)
    assert (opener(0, 0).closed, opener(0, None).closed, opener().closed) == (True, False, False)


def test_the_candidates_opened_one_at_a_time_and_exactly_as_many_as_the_probe_wants():
    judge_candidates(Seen(2, False, True, 0), 2, "")
    judge_candidates(Seen(1, False, True, 0), 1, "")
    for opened, count in ((1, 2), (3, 2), (2, 1), (0, 1)):
        assert failed_check(lambda: judge_candidates(Seen(opened, False, True, 0), count, "")) == "retried_once"
    assert failed_check(lambda: judge_candidates(Seen(2, True, True, 0), 2, "")) == "one_candidate_at_a_time"
    judge_opened(Seen(1, False, False, 0))
    assert failed_check(lambda: judge_opened(Seen(0, False, True, 0))) == "candidate_opened"


@pytest.mark.parametrize("sent", [1, 2, -1])
def test_any_frame_the_student_sent_on_the_active_session_fails_the_untouched_check(sent):
    judge_untouched(Seen(1, False, True, 0))
    assert failed_check(lambda: judge_untouched(Seen(1, False, True, sent))) == "active_untouched"


CLEAN = Seen(1, False, True, 0)  # one candidate, closed, nothing sent on the active session


def test_the_callers_failure_must_come_out_as_itself_after_the_candidate_closed():
    judge_caller_failure(Seen(1, False, True, 0, propagated=True))
    for wrong, check in ((dict(propagated=False), "caller_failure_propagates"),
                         (dict(came_out_as="RuntimeError: boom"), "caller_failure_propagates"),
                         (dict(came_out_as="CatalogError: x", propagated=True), "caller_failure_propagates"),
                         (dict(propagated=True, closed=False), "candidate_closed_after_caller_failure"),
                         (dict(propagated=True, sent=1), "active_untouched"),
                         (dict(propagated=True, opened=2), "retried_once"),
                         (dict(propagated=True, opened=2, overlapped=True), "one_candidate_at_a_time")):
        assert failed_check(lambda: judge_caller_failure(replace(CLEAN, **wrong))) == check, wrong


@pytest.mark.parametrize("attempts", [1, 2])
def test_an_accepted_candidate_is_closed_after_the_block_and_opened_as_often_as_the_walks_need(attempts):
    judge_accepted(replace(CLEAN, opened=attempts, yielded=True), attempts)
    for wrong, check in ((dict(closed=False), "closed_after_context"), (dict(sent=1), "active_untouched"),
                         (dict(opened=attempts + 1), "retried_once"), (dict(overlapped=True), "one_candidate_at_a_time")):
        done = replace(CLEAN, opened=attempts, yielded=True)
        assert failed_check(lambda: judge_accepted(replace(done, **wrong), attempts)) == check, wrong


REJECTED = Seen(1, False, True, 0, reason="duplicate_name", closed_at_error=True)


def test_a_rejected_refresh_never_yields_and_closes_before_its_error():
    judge_rejected(REJECTED)
    for wrong, check in ((dict(yielded=True), "candidate_never_yields"), (dict(closed_at_error=False),
                         "candidate_closed_before_error"), (dict(closed_at_error=None), "candidate_closed_before_error"),
                         (dict(opened=0), "candidate_opened"), (dict(sent=2), "active_untouched")):
        assert failed_check(lambda: judge_rejected(replace(REJECTED, **wrong))) == check, wrong


def test_giving_up_is_one_retry_then_the_walks_own_error():
    twice = replace(REJECTED, opened=2)
    judge_gives_up(twice)
    for wrong, check in ((dict(yielded=True), "candidate_never_yields"), (dict(opened=0), "candidate_opened"),
                         (dict(reason=None), "candidate_rejected"), (dict(reason="cursor_repeated"), "candidate_rejected"),
                         (dict(reason="page_budget"), "candidate_rejected"),
                         (dict(closed_at_error=False), "candidate_closed_before_error"),
                         (dict(sent=1), "active_untouched"), (dict(opened=1), "retried_once"),
                         (dict(opened=3), "retried_once"), (dict(overlapped=True), "one_candidate_at_a_time")):
        assert failed_check(lambda: judge_gives_up(replace(twice, **wrong))) == check, wrong
    with pytest.raises(CheckFailed, match="ended without the walk's CatalogError"):  # not "another reason: None"
        judge_gives_up(replace(twice, reason=None))
    # a block that yielded without opening says it yielded, not that nothing was opened
    assert failed_check(lambda: judge_gives_up(replace(twice, yielded=True, opened=0))) == "candidate_never_yields"


def test_only_a_catalog_or_what_holds_one_is_yielded():
    catalog = SimpleNamespace(names=["alpha"], page_sizes=[1])
    assert _catalog_of(catalog) is catalog and _catalog_of(SimpleNamespace(catalog=catalog)) is catalog
    for wrong in (["alpha"], SimpleNamespace(names=["alpha"]), SimpleNamespace(page_sizes=[1]), None):
        assert failed_check(lambda: _catalog_of(wrong)) == "candidate_complete"


@pytest.mark.parametrize("check, seen_, named", [
    (judge_gives_up, Seen(2, False, True, 0, reason="page_budget", closed_at_error=True), "The reason page_budget is"),
    (judge_untouched, Seen(1, False, True, 3), "It sent 3 frame(s) on active"),
    (lambda s: judge_candidates(s, 2, "x"), Seen(3, False, True, 0), "It opened 3 candidate(s) here"),
])
def test_a_failed_check_names_its_value_in_the_hint(check, seen_, named):
    """``{value}`` in a check's hint is the value that broke it (the reason, the frames, the candidates)."""
    with pytest.raises(CheckFailed) as caught:
        check(seen_)
    v = judge_eras(ROW, {"legacy": o.raised(caught.value)}, HINTS)
    assert named in v.hint, v.hint
    assert "{value}" not in judge_eras(ROW, {"legacy": FAIL}, HINTS).hint, "a check without its value drops it"
