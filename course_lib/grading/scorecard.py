"""Verdicts and the scorecard: where prose is made, when a card is rendered.

A ``Verdict`` is a scenario, whether it passed, the failure kind, the judge's one-line observation and
the student's ``Outcome``. The hint is chosen from the failure kind and the outcome's type, never by
reading the observation's words. ``publish`` is the one exit of every finished card (hooks may record it)."""
from __future__ import annotations

import html
import linecache
import re
import sys
import textwrap
import traceback
from dataclasses import dataclass
from typing import Callable

from course_lib.display import WIDTH, Shown, Table
from course_lib.paths import ROOT
from course_lib.grading.battery import ANY_ERA, Scenario, describe_expectation, describe_refusal, read_spec
from course_lib.grading.outcome import CRASH, HANG, LAB, WRONG_RESULT, Outcome, last_line
from course_lib.grading.unavailable import Unavailable

STARTER_HINT = ("This is still the starter: replace `raise NotImplementedError(...)` with your code in the "
                "exercise cell, run that cell, then run this check again.")
CRASH_HINT = ("Your function stopped with an error of its own before it answered: read the last line of "
              "the error above, fix that bug, then run the check again.")
LAB_HINT = "The lab itself failed, not your code: run the check again; if it persists, restart the kernel."


@dataclass(frozen=True)
class Verdict:
    scenario: Scenario
    passed: bool
    observed: str
    failure: str | None = None  # one of outcome.FAILURES; a failing verdict without one is a wrong result
    outcome: Outcome | None = None

    @property
    def failure_class(self) -> str | None:
        return None if self.passed else (self.failure or WRONG_RESULT)

    @property
    def hint(self) -> str:
        """The hint, ``{value}`` in it the value that broke the rule (the judge's ``outcome.state["value"]``)."""
        value = self.outcome.state.get("value") if self.outcome is not None else None
        hint = hint_for(self.scenario, self.failure_class or WRONG_RESULT, self.outcome)
        return re.sub(r",? ?\{value\},?", "", hint) if value is None else hint.replace("{value}", value)


def hint_for(s: Scenario, failure: str, outcome: Outcome | None = None) -> str:
    """The hint for ``s`` failing with ``failure`` in ``s.era``: the battery's by failure win, then a crash's, a hang's
    or a lab failure's own, then the scenario's for that era (``hints[era]`` as a string) or overall (``hint``)."""
    by_era = s.hints.get(s.era)
    if isinstance(by_era, dict) and failure in by_era:
        return by_era[failure]
    if failure in s.hints:
        return s.hints[failure]
    base = by_era if isinstance(by_era, str) else s.hint
    if failure == LAB:
        return LAB_HINT
    if failure == CRASH:
        error = outcome.error if outcome is not None else None
        if isinstance(error, NotImplementedError):
            return STARTER_HINT
        if isinstance(error, Unavailable):
            return (f"This check runs your code without {error.dotted}: the exercise is to write that part "
                    "yourself, as the cells above show.")
        if isinstance(error, NameError):
            return (f"`{getattr(error, 'name', None) or 'a name'}` is not defined where your function runs: "
                    "if the chapter defines it, run the cells above first (top to bottom); otherwise define or "
                    "import it yourself.")
        refusal = s.expect.get("refusal")
        if refusal:
            return (f"Refuse with {describe_refusal(refusal)} here: any other exception counts as a crash. "
                    "If you did not mean to raise, read the last line of the error and fix that bug.")
        return f"{CRASH_HINT} {base}"
    if failure == HANG:
        return f"Your function never finished and was stopped: every loop needs a bound. {base}"
    return base


_NOT_STUDENTS = tuple({str(ROOT / "course_lib"), sys.prefix, sys.base_prefix, sys.exec_prefix})


def raised_at(error: BaseException | None) -> str | None:
    """``line N: <that line>`` of the deepest frame of ``error`` outside the course and the interpreter's libraries."""
    tb = getattr(error, "__traceback__", None)
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(_NOT_STUDENTS)] if tb else []
    if not frames:
        return None
    frame = frames[-1]
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    return f"line {frame.lineno}: {line}" if line else f"line {frame.lineno}"


def _crash_key(vs: list[Verdict]) -> tuple | None:
    """What a failing scenario's crash was (its exception's type and message), if every era crashed alike."""
    errors = [v.outcome.error for v in vs if v.failure_class == CRASH and v.outcome is not None]
    keys = {(type(e).__name__, last_line(e)) for e in errors if e is not None}
    return keys.pop() if len(errors) == len(vs) and len(keys) == 1 else None


class Scorecard(Shown):
    """Every scenario's verdict: a PASS/FAIL table (``budget`` a call under the title), the failures told, a total."""

    def __init__(self, title: str, verdicts: list[Verdict], budget: float | None = None, battery: str = ""):
        self.title, self.verdicts, self.budget, self.battery = title, verdicts, budget, battery
        self.left_running = 0  # server processes the student's code left open (the check stopped them)

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts) and not self.left_running

    @property
    def chapter(self) -> str:
        """The notebook whose exercise this card grades (the battery's ``chapter``), or ``""``."""
        return read_spec(self.battery).get("chapter", "") if self.battery else ""

    @property
    def score(self) -> int:
        return sum(v.passed for v in self.verdicts)

    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def verdict_of(self, name: str, era: str | None = None) -> Verdict:
        for v in self.verdicts:
            if v.scenario.name == name and (era is None or v.scenario.era == era):
                return v
        raise KeyError(name)

    def table(self) -> Table:
        """One row per scenario, one verdict column per era (``-``: not run in that era)."""
        eras = list(dict.fromkeys(v.scenario.era for v in self.verdicts))
        rows: dict[str, dict[str, str]] = {}
        for v in self.verdicts:
            rows.setdefault(v.scenario.name, {})[v.scenario.era] = "PASS" if v.passed else "FAIL"
        return Table(["scenario", *("verdict" if era == ANY_ERA else era for era in eras)],
                     [[name, *(by_era.get(era, "-") for era in eras)] for name, by_era in rows.items()],
                     self.title if self.budget is None else
                     f"{self.title}\nTime budget: {self.budget:g} s a call; a call still running then is stopped.")

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
                "scenario": name, "eras": [v.scenario.era for v in vs],
                "expected": list(dict.fromkeys(describe_expectation(v.scenario.expect) for v in vs)),
                "observed": [(None if len(observed) == 1 else v.scenario.era, v.observed)
                             for v in vs if len(observed) > 1 or v is vs[0]],
                "hints": [(None if len(hints) == 1 else v.scenario.era, v.hint)
                          for v in vs if len(hints) > 1 or v is vs[0]],
                "classes": list(dict.fromkeys(v.failure_class for v in vs)),
                "crash": _crash_key(vs),
                "where": next((w for v in vs if v.outcome is not None and v.failure_class == CRASH
                               for w in [raised_at(v.outcome.error)] if w), None),
            })
        return out

    def failure_lines(self) -> list[str]:
        entries = self.entries()
        if not entries:
            return []
        lines = [f"What failed ({len(entries)} scenario{'' if len(entries) == 1 else 's'}):"]

        def field_lines(label: str, text: str) -> list[str]:
            return textwrap.wrap(text, WIDTH, initial_indent=f"   {label:<10}", subsequent_indent=" " * 13,
                                 break_on_hyphens=False) or [f"   {label}"]

        previous = None
        crashes: dict[tuple, int] = {}  # a crash is told once: the entry number that told it
        for n, e in enumerate(entries, 1):
            eras = [era for era in e["eras"] if era != ANY_ERA]  # a row of every era names none
            heading = f"{n}. {e['scenario']} — failed" + (f" in {', '.join(eras)}" if eras else "")
            same = (e["observed"], e["hints"]) == previous
            previous = (e["observed"], e["hints"])
            # the same crash as an entry above, or the same failure as the entry above: one line says so
            told = f"your code crashed the same way as in {crashes[e['crash']]}" if e["crash"] in crashes else None
            if told is None and e["crash"] is not None:
                crashes[e["crash"]] = n
            told = told or ("the same observation and hint as above" if same else None)
            if told:
                lines += textwrap.wrap(f"{heading}: expected {'; '.join(e['expected'])}; {told}",
                                       WIDTH, subsequent_indent="   ", break_on_hyphens=False)
                continue
            lines += textwrap.wrap(heading, WIDTH, subsequent_indent="   ")
            for text in e["expected"]:
                lines += field_lines("expected", text)
            for era, text in e["observed"]:
                lines += field_lines("observed" if era is None else f"({era})", text)
            if e["where"]:
                lines += field_lines("raised at", e["where"])
            for era, text in e["hints"]:
                lines += field_lines("hint" if era is None else f"hint {era}", text)
        return lines

    def total(self) -> str:
        total = f"{self.score}/{len(self.verdicts)} scenarios pass"
        if self.left_running:
            total = (f"Your code left {self.left_running} server process(es) running; the check stopped them: "
                     f"close what you open (async with).\n{total}")
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


# HOOKS are called with every card a grader hands out (``chapter``, ``battery``, ``score``, ``verdicts``).
def record_progress(card: Scorecard) -> None:
    """The student's progress (``course_lib.progress``): recorded only in a student copy."""
    if card.chapter and card.verdicts:
        from course_lib import progress  # noqa: PLC0415 (only a finished check needs it)

        progress.record(card.chapter, card.battery, card.score, len(card.verdicts))


HOOKS: list[Callable[[Scorecard], None]] = [record_progress]


def publish(card: Scorecard) -> Scorecard:
    """The one exit of every grader: run the hooks on the finished card, then return it."""
    for hook in HOOKS:
        hook(card)
    return card
