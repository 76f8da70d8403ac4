"""The course's autograder: a student's function against a chapter's battery of real servers.

A battery is a fixed JSON file under ``fixtures/grading/`` (written by hand, never derived from
the reference solutions): one entry per scenario with the server mode, the eras it runs in,
the expected outcome and a hint. ``grade`` starts a real stdio server per scenario through
``connect``, calls the student's function under a time budget, and returns a ``Scorecard``:
one row per scenario and era, PASS or FAIL, and for a failure what was expected, what was
observed and a hint. A crash or a hang becomes a verdict, never a stuck kernel.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import anyio
from mcp import MCPError

from course_lib.display import Table, error_line
from course_lib.errors import CourseError
from course_lib.labs import connect
from course_lib.paths import fixture
from course_lib.scenarios import gather


@dataclass(frozen=True)
class Scenario:
    name: str
    era: str
    server: str
    mode: str | None
    expect: dict
    hint: str
    args: tuple[str, ...] = field(default=())  # extra server arguments, e.g. ("--fault", "...")


@dataclass(frozen=True)
class Verdict:
    scenario: Scenario
    passed: bool
    observed: str


class Scorecard:
    """Every scenario's verdict; displays as a table, ends with a one-line total."""

    def __init__(self, title: str, verdicts: list[Verdict]):
        self.title = title
        self.verdicts = verdicts

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

    def table(self) -> Table:
        if self.passed:  # nothing to explain: keep the card short
            return Table(["scenario", "era", "verdict"],
                         [[v.scenario.name, v.scenario.era, "PASS"] for v in self.verdicts], self.title)
        rows = []
        for v in self.verdicts:
            s = v.scenario
            rows.append([s.name, s.era, "PASS" if v.passed else "FAIL",
                         "" if v.passed else describe_expectation(s.expect),
                         "" if v.passed else v.observed, "" if v.passed else s.hint])
        return Table(["scenario", "era", "verdict", "expected", "observed", "hint"], rows, self.title)

    def total(self) -> str:
        ok = sum(v.passed for v in self.verdicts)
        total = f"{ok}/{len(self.verdicts)} scenarios pass"
        return total + " — well done." if self.passed else total

    def text(self) -> str:
        """The plain-text card (what nbval compares): the table, then the total on one line."""
        return f"{self.table().text()}\n{self.total()}"

    def html(self) -> str:
        """The card for JupyterLab and the slides: the HTML table (PASS and FAIL highlighted), the total."""
        style = "font-weight:bold; margin:4px 0; color:" + ("#137333" if self.passed else "#a50e0e")
        return (f"<div class='course-scorecard'>{self.table().html()}"
                f"<div class='course-total' style='{style}'>{html.escape(self.total(), quote=False)}</div></div>")

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text())

    def _repr_html_(self) -> str:
        return self.html()


def describe_expectation(expect: dict) -> str:
    if "text" in expect:
        return expect["text"]
    if "names" in expect:
        return f"returns {expect['names']}"
    if "raises" in expect:
        return "raises an error (no list)"
    if "value" in expect:
        return f"returns {expect['value']!r}"
    return json.dumps(expect)


def load_battery(name: str) -> tuple[str, list[Scenario], dict]:
    """Read ``fixtures/grading/NAME.json`` into scenarios (one per listed era)."""
    spec = json.loads(fixture("grading", f"{name}.json").read_text(encoding="utf-8"))
    scenarios = [Scenario(s["name"], era, s.get("server", spec.get("server", "catalog")), s.get("mode"),
                          s["expect"], s["hint"], tuple(s.get("args", ())))
                 for s in spec["scenarios"] for era in s.get("eras", spec.get("eras", ["legacy"]))]
    return spec["title"], scenarios, spec


def _names(result: Any) -> list[str] | None:
    """Accept what a walker may reasonably return: names, Tool-like objects, or a Catalog."""
    if hasattr(result, "names") and not callable(result.names):
        return list(result.names)
    if isinstance(result, tuple) and result and isinstance(result[0], (list, tuple)):
        result = result[0]  # (items, page_sizes), the seed's shape
    if isinstance(result, (list, tuple)):
        return [x if isinstance(x, str) else getattr(x, "name", repr(x)) for x in result]
    return None


def judge_names(expect: dict, kind: str, observed: str, value: Any) -> tuple[bool, str]:
    """Compare a walker's outcome (``returned`` / ``raised`` / ``hung``) with the expectation."""
    if kind == "returned":
        names = _names(value)
        if names is None:
            return False, f"returned {type(value).__name__}, not a list of names"
        if "raises" in expect:
            return False, f"returned a partial catalog {names} instead of raising"
        return names == expect["names"], f"returned {names}"
    if kind == "raised" and "raises" in expect:
        return True, observed
    return False, observed  # a hang never passes, and neither does an unexpected error


async def observe(call: Callable[[], Awaitable[Any]], budget: float) -> tuple[str, str, Any]:
    """Run the student's call under the budget: (kind, one-line description, value)."""
    try:
        with anyio.fail_after(budget):
            value = await call()
        return "returned", "", value
    except TimeoutError:
        return "hung", f"no result within {budget:g} s (a loop that never ends?)", None
    except (CourseError, MCPError) as exc:
        return "raised", f"raised {error_line(exc)}", exc
    except Exception as exc:  # the student's own bug is a verdict, not a crash of the grader
        return "raised", f"raised {type(exc).__name__}: {exc}", exc


def select(scenarios: list[Scenario], only: list[str] | None, eras: list[str] | None) -> list[Scenario]:
    if only is not None:
        unknown = set(only) - {s.name for s in scenarios}
        if unknown:
            raise ValueError(f"no scenario named {sorted(unknown)}")
        scenarios = [s for s in scenarios if s.name in only]
    if eras is not None:
        scenarios = [s for s in scenarios if s.era in eras]
    return scenarios


async def grade_walker(student: Callable, battery: str = "walk", *, only: list[str] | None = None,
                       eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(session) -> names`` on the battery's catalog servers.

    ``only`` restricts the battery to some scenario names, ``eras`` to some eras.
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 8.0)
    return await run_battery(title, scenarios, budget, lambda s, lab: student(lab.session))


def _judge_walk(s: Scenario, kind: str, observed: str, value: Any, sent: list) -> Verdict:
    return Verdict(s, *judge_names(s.expect, kind, observed, value))


async def run_battery(title: str, scenarios: list[Scenario], budget: float,
                      call: Callable[[Scenario, Any], Awaitable[Any]], *,
                      prepare: Callable[[Scenario, Any], Awaitable[None]] | None = None,
                      judge: Callable[[Scenario, str, str, Any, list], Verdict] = _judge_walk,
                      **connect_options) -> Scorecard:
    """One real lab per scenario: ``prepare`` it (outside the budget), ``call`` the student's
    code under the budget, ``judge`` the outcome (by default: the names it returned against the
    scenario's expectation). The judge also gets ``sent``, the requests the call put on the wire."""

    async def run(s: Scenario) -> Verdict:
        try:
            async with connect(s.server, mode=s.mode, era=s.era, args=s.args, lab_timeout=budget + 60,
                               **connect_options) as lab:
                if prepare is not None:
                    await prepare(s, lab)
                before = len(lab.wire.requests())
                kind, observed, value = await observe(lambda: call(s, lab), budget)
        except CourseError as exc:  # the lab itself failed: say so rather than blame the student
            return Verdict(s, False, f"the lab could not run: {error_line(exc)}")
        return judge(s, kind, observed, value, lab.wire.requests()[before:])

    verdicts = await gather({i: (lambda s=s: run(s)) for i, s in enumerate(scenarios)})
    return Scorecard(title, list(verdicts.values()))
