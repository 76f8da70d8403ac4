"""Calling the student's code under its budget: whatever it does becomes an ``Outcome``.

The one bound of the student's time in a process: ``within``. A call that awaits forever is cancelled at the
budget; one that never gives the event loop back is stopped by a watchdog (``SIGALRM``) raising ``Stopped`` inside
it. ``observe`` runs an awaited call so, ``observe_now`` a plain one. Past half its budget the check says so once."""
from __future__ import annotations

import asyncio
import inspect
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import anyio

from course_lib.errors import unwrap
from course_lib.grading import outcome as o


class Stopped(BaseException):
    """Raised by the watchdog inside a call past its budget (``except Exception`` in the student's loop misses it)."""


@dataclass
class _Watch:
    task: Any
    started: float
    deadline: float
    scope: Any = None
    active: bool = True


TICK = 0.1    # how often the watchdog looks
GRACE = 0.25  # past the deadline, the budget's own cancellation has had its chance
_watches: dict[int, _Watch] = {}
_saved: tuple | None = None  # the signal handler and timer in place before the first watch


def _current():
    """The running task, or None outside an event loop (a plain call: the thread's only one)."""
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread right now
        return None


def _on_tick(signum, frame) -> None:
    watch = _watches.get(id(_current()))
    if watch is not None and watch.active and time.monotonic() > watch.deadline + GRACE:
        raise Stopped()


@contextmanager
def watched(budget: float):
    """Register the current task (or plain call) with the watchdog for ``budget`` seconds (SIGALRM every TICK)."""
    global _saved
    task, now = _current(), time.monotonic()
    watch = _Watch(task, now, now + budget)
    if not (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()):
        yield watch  # another thread: a watch no watchdog looks at, only the budget's cancellation applies
        return
    if not _watches:
        previous = signal.signal(signal.SIGALRM, _on_tick)
        _saved = (previous, signal.setitimer(signal.ITIMER_REAL, TICK, TICK), now)
    _watches[id(task)] = watch
    try:
        yield watch
    finally:
        watch.active = False
        _watches.pop(id(task), None)
        if not _watches and _saved is not None:
            previous, (remaining, interval), since = _saved
            _saved = None
            if remaining > 0:  # a timer someone else set keeps running, minus the time that passed
                remaining = max(remaining - (time.monotonic() - since), 0.001)
            signal.setitimer(signal.ITIMER_REAL, remaining, interval)
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)


def _give_time_back(stopped: _Watch) -> None:
    """A stopped call held the event loop: the other calls waited too, so their budgets move on."""
    stalled = time.monotonic() - stopped.started
    for other in _watches.values():
        if other is not stopped and other.active:
            other.deadline += stalled
            if other.scope is not None:
                other.scope.deadline += stalled


# -- "still running": one line while a long call waits ---------------------------------------

_running: dict[int, tuple[float, float]] = {}  # call id -> (started, budget)
_ahead: list[float] = []  # the budgets of the calls a check announced (``ahead``) and has not started yet
_noticed = False
_lock = threading.Lock()


@contextmanager
def ahead(budgets: list[float]):
    """Inside: the calls a check will make (their budgets), so that the notice tells the whole wait."""
    with _lock:
        _ahead.extend(budgets)
    try:
        yield
    finally:
        with _lock:
            _ahead.clear()


def _monitor() -> None:
    """A thread (the event loop may be held by the student's loop): says it once, while needed."""
    global _noticed
    while True:
        time.sleep(TICK)
        with _lock:
            if not _running:
                _noticed = False
                return
            late = [b for started, b in _running.values() if time.monotonic() - started > b / 2]
            if late and not _noticed:
                _noticed = True
                left = [b for _, b in _running.values()] + _ahead  # the calls not finished, running ones too
                print(f"still running — the budget is {max(late):g} s a call; a call still running then is stopped; "
                      f"{len(left)} call{'s' if len(left) > 1 else ''} not finished: up to {sum(left):g} s in all",
                      file=sys.stdout, flush=True)


@contextmanager
def _timed(budget: float):
    key = object()
    with _lock:
        first = not _running
        _running[id(key)] = (time.monotonic(), budget)
        if _ahead:
            _ahead.pop()
    if first:
        threading.Thread(target=_monitor, name="grading-notice", daemon=True).start()
    try:
        yield
    finally:
        with _lock:
            _running.pop(id(key), None)


async def call_student(function: Callable, *args: Any) -> Any:
    """``function(*args)``, written ``async`` or not; an awaitable it returns is awaited."""
    value = function(*args)
    return await value if inspect.isawaitable(value) else value


class Bound:
    expired = False  # the call was cancelled at the budget, or stopped by the watchdog


@contextmanager
def within(budget: float):
    """The student's code inside, cancelled at ``budget`` seconds (a cancel scope: the labs around it see no
    ``TimeoutError``) or stopped by the watchdog; ``expired`` after."""
    bound = Bound()
    with watched(budget) as watch, anyio.move_on_after(budget) as scope:
        watch.scope = scope
        try:
            yield bound
        except Stopped:
            bound.expired = True
            watch.active = False
            _give_time_back(watch)
        finally:
            watch.active = False
    bound.expired = bound.expired or scope.cancelled_caught


async def observe(call: Callable[[], Awaitable[Any]], budget: float) -> o.Outcome:
    """Run the student's call under the budget and return what it did (never raises for it)."""
    with _timed(budget):
        try:
            with within(budget) as bound:
                value = await call()
        except TimeoutError:
            return o.hung(budget)
        except Exception as exc:  # the student's refusal or bug is a verdict, not a crash of the grader
            exc = unwrap(exc)
            if isinstance(exc, BaseExceptionGroup) and stopped_inside(exc):
                return o.hung(budget)
            return o.raised(exc)
    return o.hung(budget) if bound.expired else o.returned(value)


def observe_now(call: Callable[[], Any], budget: float) -> o.Outcome:
    """``observe`` for a plain call that never awaits; only the watchdog can stop it."""
    with watched(budget) as watch:
        try:
            return o.returned(call())
        except Stopped:
            return o.hung(budget)
        except Exception as exc:
            return o.raised(exc)
        finally:
            watch.active = False


def stopped_inside(exc: BaseException | None) -> bool:
    """Whether the watchdog's stop is behind ``exc`` (a lab the student opened reports it as its own)."""
    stack, seen = [exc], set()
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Stopped):
            return True
        stack += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return False
