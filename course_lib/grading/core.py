"""The course's autograder: a student's function against a chapter's battery of real servers.

A battery is a fixed JSON file under ``fixtures/grading/`` (written by hand, never derived from
the reference solutions): one entry per scenario with the server mode, the eras it runs in,
the expected outcome and a hint, and the time budget of one call (``budget_seconds``).
``run_battery`` starts a real stdio server per scenario through ``connect``, calls the
student's function under the budget, and judges the outcome and the requests it put on the
wire. The result is a ``Scorecard``: a PASS/FAIL table, then every failing scenario with what
was expected, what was observed and a hint matched to the kind of failure.

``observe`` turns every outcome into a verdict, never a stuck kernel: a call that awaits forever
is cancelled at the budget, and a call that never gives the event loop back (a CPU loop, or a
plain function that never returns) is stopped by a watchdog (``SIGALRM``, on Linux and macOS)
that raises inside it. An exception that is not a typed refusal (``CourseError``, ``MCPError``)
is a crash: it fails every scenario, "must refuse" ones included.
"""
from __future__ import annotations

import asyncio
import html
import json
import signal
import textwrap
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Awaitable, Callable

import anyio
from mcp import MCPError

from course_lib.display import WIDTH, Table, error_line
from course_lib.errors import CourseError, unwrap
from course_lib.labs import connect
from course_lib.paths import fixture
from course_lib.scenarios import gather

# The kinds of failure a scorecard tells apart; each has its own hint.
CRASH, WRONG_RESULT, MISSING_REFUSAL, WRONG_REFUSAL, HANG, LAB = (
    "crash", "wrong result", "missing refusal", "wrong refusal", "hang", "lab")
FAILURES = (CRASH, WRONG_RESULT, MISSING_REFUSAL, WRONG_REFUSAL, HANG, LAB)

CRASH_PREFIX = "your code crashed: "
ANY_ERA = "any"  # a row that needs no server (the allowlist's URI rows)
STARTER_HINT = ("This is still the starter: replace `raise NotImplementedError(...)` with your code in the "
                "exercise cell, run that cell, then run this check again.")
CRASH_HINT = ("Your function stopped with an error of its own before it answered: read the last line of "
              "the error above, fix that bug, then run the check again.")
LAB_HINT = "The lab itself failed, not your code: run the check again; if it persists, restart the kernel."


@dataclass(frozen=True)
class Scenario:
    name: str
    era: str
    server: str
    mode: str | None
    expect: dict
    hint: str
    args: tuple[str, ...] = field(default=())  # extra server arguments, e.g. ("--fault", "...")
    # Hints for one kind of failure ({"hang": ...}) or for one era ({"legacy": ...}): see ``hint_for``.
    hints: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Verdict:
    scenario: Scenario
    passed: bool
    observed: str
    failure: str | None = None  # one of FAILURES; inferred from ``observed`` when not given

    @property
    def failure_class(self) -> str | None:
        if self.passed:
            return None
        return self.failure or classify(self.scenario.expect, self.observed)

    @property
    def hint(self) -> str:
        """The hint for this failure: matched to its kind and era (see ``hint_for``)."""
        return hint_for(self.scenario, self.failure_class or WRONG_RESULT, self.observed)


def expects_refusal(expect: dict) -> bool:
    return bool(expect.get("raises"))


def classify(expect: dict, observed: str) -> str:
    """The kind of a failure, read from its observation (for verdicts built without one)."""
    if observed.startswith(CRASH_PREFIX):
        return CRASH
    if observed.startswith("no result within") or observed.startswith("not asked"):
        return HANG
    if observed.startswith("the lab could not run"):
        return LAB
    if expects_refusal(expect):
        return WRONG_REFUSAL if "raised" in observed else MISSING_REFUSAL
    return WRONG_REFUSAL if observed.startswith("raised") else WRONG_RESULT


def hint_for(s: Scenario, failure: str, observed: str = "") -> str:
    """The hint a scorecard prints for scenario ``s`` failing with ``failure`` in ``s.era``.

    The battery's hints win: ``hints[era][failure]``, ``hints[failure]``, then the scenario's own
    hint for that era (``hints[era]`` as a string) or overall (``hint``). A crash or a hang has a
    hint of its own, followed by the scenario's; a lab failure is never the student's.
    """
    by_era = s.hints.get(s.era)
    if isinstance(by_era, dict) and failure in by_era:
        return by_era[failure]
    if failure in s.hints:
        return s.hints[failure]
    base = by_era if isinstance(by_era, str) else s.hint
    if failure == LAB:
        return LAB_HINT
    if failure == CRASH:
        if "NotImplementedError" in observed:
            return STARTER_HINT
        refusal = s.expect.get("refusal")
        if refusal:
            return (f"Refuse with {describe_refusal(refusal)} here: any other exception counts as a crash. "
                    "If you did not mean to raise, read the last line of the error and fix that bug.")
        return f"{CRASH_HINT} {base}"
    if failure == HANG:
        return f"Your function never finished and was stopped: every loop needs a bound. {base}"
    return base


def describe_refusal(refusal: dict) -> str:
    if "reason" in refusal:
        return f"{refusal.get('type', 'CatalogError')}({refusal['reason']})"
    if "code" in refusal:
        return f"MCPError {refusal['code']}"
    return refusal.get("type", "a typed error")


def _requests(n: int, method: str = "tools/list") -> str:
    return f"{n} {method} request{'' if n == 1 else 's'}"


def describe_expectation(expect: dict) -> str:
    if "text" in expect:
        return expect["text"]
    tail = ""
    if "requests" in expect:
        tail = f", after exactly {_requests(expect['requests'], expect.get('method', 'tools/list'))}"
    if "names" in expect:
        return f"returns {expect['names']}{tail}"
    if expects_refusal(expect):
        refusal = expect.get("refusal")
        what = f"raises {describe_refusal(refusal)}" if refusal else "raises an error (no list)"
        return f"{what}{tail}" + (", then sends nothing" if tail else "")
    if "value" in expect:
        return f"returns {expect['value']!r}"
    return json.dumps(expect)


class Scorecard:
    """Every scenario's verdict: a PASS/FAIL table, the failures explained under it, a total.

    ``budget`` (seconds a call) is printed under the title; it comes from the battery.
    """

    def __init__(self, title: str, verdicts: list[Verdict], budget: float | None = None):
        self.title = title
        self.verdicts = verdicts
        self.budget = budget

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def verdict_of(self, name: str, era: str | None = None) -> Verdict:
        for v in self.verdicts:
            if v.scenario.name == name and (era is None or v.scenario.era == era):
                return v
        raise KeyError(name)

    def header(self) -> str:
        if self.budget is None:
            return self.title
        return f"{self.title}\nTime budget: {self.budget:g} s a call; a call still running then is stopped."

    def table(self) -> Table:
        """The PASS/FAIL table: one row per scenario, one verdict column per era (``-``: not run in
        that era), so a battery in both eras takes half the lines."""
        eras = list(dict.fromkeys(v.scenario.era for v in self.verdicts))
        rows: dict[str, dict[str, str]] = {}
        for v in self.verdicts:
            rows.setdefault(v.scenario.name, {})[v.scenario.era] = "PASS" if v.passed else "FAIL"
        return Table(["scenario", *("verdict" if era == ANY_ERA else era for era in eras)],
                     [[name, *(by_era.get(era, "-") for era in eras)] for name, by_era in rows.items()],
                     self.header())

    def entries(self) -> list[dict]:
        """One entry per failing scenario: its eras, what was expected, observed, and the hints."""
        grouped: dict[str, list[Verdict]] = {}
        for v in self.failures():
            grouped.setdefault(v.scenario.name, []).append(v)
        out = []
        for name, vs in grouped.items():
            observed = list(dict.fromkeys(v.observed for v in vs))
            hints = list(dict.fromkeys(v.hint for v in vs))
            out.append({
                "scenario": name,
                "eras": [v.scenario.era for v in vs],
                "expected": list(dict.fromkeys(describe_expectation(v.scenario.expect) for v in vs)),
                "observed": [(None if len(observed) == 1 else v.scenario.era, v.observed)
                             for v in vs if len(observed) > 1 or v is vs[0]],
                "hints": [(None if len(hints) == 1 else v.scenario.era, v.hint)
                          for v in vs if len(hints) > 1 or v is vs[0]],
                "classes": list(dict.fromkeys(v.failure_class for v in vs)),
            })
        return out

    def failure_lines(self) -> list[str]:
        lines: list[str] = []
        entries = self.entries()
        if not entries:
            return lines
        lines.append(f"What failed ({len(entries)} scenario{'' if len(entries) == 1 else 's'}):")

        def field_lines(label: str, text: str) -> list[str]:
            return textwrap.wrap(text, WIDTH, initial_indent=f"   {label:<10}", subsequent_indent=" " * 13,
                                 break_on_hyphens=False) or [f"   {label}"]

        previous = None
        for n, e in enumerate(entries, 1):
            eras = [era for era in e["eras"] if era != ANY_ERA]  # a row of every era names none
            heading = f"{n}. {e['scenario']} — failed" + (f" in {', '.join(eras)}" if eras else "")
            same = (e["observed"], e["hints"]) == previous
            previous = (e["observed"], e["hints"])
            if same:  # the same failure as the entry above: one line says so
                lines += textwrap.wrap(f"{heading}: expected {'; '.join(e['expected'])}; the same observation "
                                       "and hint as above", WIDTH, subsequent_indent="   ", break_on_hyphens=False)
                continue
            lines += textwrap.wrap(heading, WIDTH, subsequent_indent="   ")
            for text in e["expected"]:
                lines += field_lines("expected", text)
            for era, text in e["observed"]:
                lines += field_lines("observed" if era is None else f"({era})", text)
            for era, text in e["hints"]:
                lines += field_lines("hint" if era is None else f"hint {era}", text)
        return lines

    def total(self) -> str:
        ok = sum(v.passed for v in self.verdicts)
        total = f"{ok}/{len(self.verdicts)} scenarios pass"
        return total + " — well done." if self.passed else total

    def text(self) -> str:
        """The plain-text card (what nbval compares): the table, the failures, the total."""
        failures = self.failure_lines()
        return "\n".join([self.table().text(), *([""] + failures if failures else []), self.total()])

    def html(self) -> str:
        """The card for JupyterLab and the slides: the HTML table, the failures, the total."""
        style = "font-weight:bold; margin:4px 0; color:" + ("#137333" if self.passed else "#a50e0e")
        failures = self.failure_lines()
        block = (f"<div class='course-failures' style='white-space:pre-wrap; font-family:monospace; margin:4px 0'>"
                 f"{html.escape(chr(10).join(failures), quote=False)}</div>" if failures else "")
        return (f"<div class='course-scorecard'>{self.table().html()}{block}"
                f"<div class='course-total' style='{style}'>{html.escape(self.total(), quote=False)}</div></div>")

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text())

    def _repr_html_(self) -> str:
        return self.html()


def load_battery(name: str) -> tuple[str, list[Scenario], dict]:
    """Read ``fixtures/grading/NAME.json`` into scenarios (one per listed era)."""
    spec = json.loads(fixture("grading", f"{name}.json").read_text(encoding="utf-8"))
    scenarios = [Scenario(s["name"], era, s.get("server", spec.get("server", "catalog")), s.get("mode"),
                          s["expect"], s["hint"], tuple(s.get("args", ())), dict(s.get("hints", {})))
                 for s in spec["scenarios"] for era in s.get("eras", spec.get("eras", ["legacy"]))]
    return spec["title"], scenarios, spec


def budget_of(battery: str) -> float:
    """The time budget of one call in ``fixtures/grading/BATTERY.json``: what a task cell prints."""
    return load_battery(battery)[2]["budget_seconds"]


def _names(result: Any) -> list[str] | None:
    """Accept what a walker may reasonably return: names, Tool-like objects, or a Catalog."""
    if hasattr(result, "names") and not callable(result.names):
        return list(result.names)
    if isinstance(result, tuple) and result and isinstance(result[0], (list, tuple)):
        result = result[0]  # (items, page_sizes), the seed's shape
    if isinstance(result, (list, tuple)):
        return [x if isinstance(x, str) else getattr(x, "name", repr(x)) for x in result]
    return None


def is_refusal(expect: dict, exc: Any) -> bool:
    """Whether ``exc`` is the refusal the scenario teaches (``expect["refusal"]``; any typed one if unset)."""
    refusal = expect.get("refusal")
    if not isinstance(exc, (CourseError, MCPError)):
        return False
    if not refusal:
        return True
    if refusal.get("type") and type(exc).__name__ != refusal["type"] \
            and refusal["type"] not in {c.__name__ for c in type(exc).__mro__}:
        return False
    if "reason" in refusal and getattr(exc, "reason", None) != refusal["reason"]:
        return False
    if "code" in refusal and getattr(getattr(exc, "error", None), "code", None) != refusal["code"]:
        return False
    return True


def judge_outcome(expect: dict, kind: str, observed: str, value: Any) -> tuple[bool, str, str | None]:
    """(passed, observed, failure kind) of a walker-like outcome against the expectation.

    ``kind`` is ``observe``'s: ``returned``, ``raised`` (a typed refusal), ``crashed`` or ``hung``.
    """
    if kind == "hung":
        return False, observed, HANG
    if kind == "crashed":
        return False, observed, CRASH
    if kind == "returned":
        names = _names(value)
        if names is None:
            return False, f"returned {type(value).__name__}, not a list of names", WRONG_RESULT
        if expects_refusal(expect):
            return False, f"returned a partial catalog {names} instead of raising", MISSING_REFUSAL
        ok = names == expect["names"]
        return ok, f"returned {names}", None if ok else WRONG_RESULT
    # a typed refusal
    if not expects_refusal(expect):
        return False, f"{observed} instead of returning", WRONG_REFUSAL
    if is_refusal(expect, value):
        return True, observed, None
    return False, f"{observed}, not {describe_refusal(expect['refusal'])}", WRONG_REFUSAL


def judge_names(expect: dict, kind: str, observed: str, value: Any) -> tuple[bool, str]:
    """Compare a walker's outcome (``returned`` / ``raised`` / ``crashed`` / ``hung``) with the expectation."""
    passed, observed, _ = judge_outcome(expect, kind, observed, value)
    return passed, observed


# -- running the student's code under a budget ---------------------------------------------------

class Stopped(BaseException):
    """Raised by the watchdog inside a call that ran past its budget without giving the loop back.

    A ``BaseException``, so that ``except Exception`` in the student's loop does not swallow it.
    """


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


def _watchdog_available() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _on_tick(signum, frame) -> None:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread right now
        return
    watch = _watches.get(id(task)) if task is not None else None
    if watch is not None and watch.active and time.monotonic() > watch.deadline + GRACE:
        raise Stopped()


@contextmanager
def watched(budget: float):
    """Register the current task with the watchdog for ``budget`` seconds (SIGALRM every TICK)."""
    global _saved
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    if task is None or not _watchdog_available():
        yield None  # another loop or thread: only the budget's cancellation applies
        return
    now = time.monotonic()
    watch = _Watch(task, now, now + budget)
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


def no_result(budget: float) -> str:
    return f"no result within {budget:g} s (stopped)"


async def observe(call: Callable[[], Awaitable[Any]], budget: float) -> tuple[str, str, Any]:
    """Run the student's call under the budget: (kind, one-line description, value).

    ``kind`` is ``returned`` (value: what it returned), ``raised`` (a typed refusal:
    ``CourseError`` or ``MCPError``; value: the exception), ``crashed`` (any other exception;
    observed: ``your code crashed: <its last line>``) or ``hung`` (stopped at the budget, whether
    it awaited forever or never gave the event loop back).
    """
    with watched(budget) as watch:
        try:
            with anyio.fail_after(budget) as scope:
                if watch is not None:
                    watch.scope = scope
                value = await call()
                if watch is not None:
                    watch.active = False
            return "returned", "", value
        except TimeoutError:
            return "hung", no_result(budget), None
        except Stopped:
            if watch is not None:
                watch.active = False
                _give_time_back(watch)
            return "hung", no_result(budget), None
        except Exception as exc:  # the student's refusal or bug is a verdict, not a crash of the grader
            exc = unwrap(exc)
            if isinstance(exc, (CourseError, MCPError)):
                return "raised", f"raised {error_line(exc)}", exc
            return "crashed", CRASH_PREFIX + _last_line(exc), exc


def _last_line(exc: BaseException) -> str:
    """The last line of the traceback Python would print: ``Type: message``, on one line."""
    line = error_line(exc)
    return " ".join(line.split()) if "\n" in line else line


def select(scenarios: list[Scenario], only: list[str] | None, eras: list[str] | None) -> list[Scenario]:
    if only is not None:
        unknown = set(only) - {s.name for s in scenarios}
        if unknown:
            raise ValueError(f"no scenario named {sorted(unknown)}")
        scenarios = [s for s in scenarios if s.name in only]
    if eras is not None:
        scenarios = [s for s in scenarios if s.era in eras]
    return scenarios


# -- the walker exercise (chapters 1 and 2) ------------------------------------------------------

async def grade_walker(student: Callable, battery: str = "walk", *, only: list[str] | None = None,
                       eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(session) -> names`` on the battery's catalog servers.

    ``only`` restricts the battery to some scenario names, ``eras`` to some eras.
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 8.0)
    return await run_battery(title, scenarios, budget, lambda s, lab: student(lab.session))


def judge_on_wire(s: Scenario, kind: str, observed: str, value: Any, sent: list) -> Verdict:
    """The outcome, then the requests it put on the wire: ``expect["requests"]`` of
    ``expect["method"]`` (``tools/list`` by default), exactly — a refusal comes at the page
    where the problem shows and nothing is sent after it."""
    passed, observed, failure = judge_outcome(s.expect, kind, observed, value)
    wanted = s.expect.get("requests")
    if passed and wanted is not None:
        method = s.expect.get("method", "tools/list")
        n = sum(1 for f in sent if f.method == method)
        if n != wanted:
            passed = False
            failure = WRONG_REFUSAL if kind == "raised" else WRONG_RESULT
            observed = f"{observed} after {_requests(n, method)} (expected {wanted})"
    return Verdict(s, passed, observed, failure)


async def run_battery(title: str, scenarios: list[Scenario], budget: float,
                      call: Callable[[Scenario, Any], Awaitable[Any]], *,
                      prepare: Callable[[Scenario, Any], Awaitable[None]] | None = None,
                      judge: Callable[[Scenario, str, str, Any, list], Verdict] = judge_on_wire,
                      **connect_options) -> Scorecard:
    """One real lab per scenario: ``prepare`` it (outside the budget), ``call`` the student's
    code under the budget, ``judge`` the outcome (by default: the names it returned or the
    refusal it raised, and the requests it sent). The judge also gets ``sent``, the requests
    the call put on the wire."""
    # A call stopped by the watchdog held the event loop: requests of other labs waited with it.
    connect_options.setdefault("request_timeout", budget + 30)

    async def run(s: Scenario) -> Verdict:
        try:
            async with connect(s.server, mode=s.mode, era=s.era, args=s.args, lab_timeout=budget * 2 + 60,
                               **connect_options) as lab:
                if prepare is not None:
                    await prepare(s, lab)
                before = len(lab.wire.requests())
                kind, observed, value = await observe(lambda: call(s, lab), budget)
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return Verdict(s, False, f"the lab could not run: {error_line(exc)}", LAB)
        return judge(s, kind, observed, value, lab.wire.requests()[before:])

    return Scorecard(title, await each_scenario(run, scenarios), budget)


async def each_scenario(run: Callable[[Scenario], Awaitable[Verdict]], scenarios: list[Scenario]) -> list[Verdict]:
    """``run`` on every scenario, side by side (a few labs at once), the verdicts in battery order."""
    verdicts = await gather({i: partial(run, s) for i, s in enumerate(scenarios)})
    return list(verdicts.values())
