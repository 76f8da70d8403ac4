"""What a student's call did, as data: the typed outcome every judge reads.

``Outcome.kind`` is ``RETURNED`` (``value``), ``REFUSED`` (a typed refusal: ``CourseError`` or ``MCPError``),
``CRASHED`` (any other exception), ``HUNG`` (stopped at ``budget``) or ``LAB_FAILED``. Nothing is prose until
``describe``. An exception raised in another process travels as data (``crash_record``, ``crash_from``)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from mcp import MCPError

from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.grading.unavailable import Unavailable

RETURNED, REFUSED, CRASHED, HUNG, LAB_FAILED = "returned", "refused", "crashed", "hung", "lab failed"
KINDS = (RETURNED, REFUSED, CRASHED, HUNG, LAB_FAILED)

# The kinds of failure a scorecard tells apart; each has its own hint.
CRASH, WRONG_RESULT, MISSING_REFUSAL, WRONG_REFUSAL, HANG, LAB = (
    "crash", "wrong result", "missing refusal", "wrong refusal", "hang", "lab")
FAILURES = (CRASH, WRONG_RESULT, MISSING_REFUSAL, WRONG_REFUSAL, HANG, LAB)


@dataclass(frozen=True)
class Outcome:
    kind: str
    value: Any = None
    error: BaseException | None = None
    budget: float = 0.0
    sent: tuple = ()
    state: dict = field(default_factory=dict, compare=False)
    not_asked: str | None = None  # HUNG without being run: why it was not asked
    # A judge's reading of the row (``judged``): its failure kind (None: it passed) and its one line.
    failure: str | None = None
    observed: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown outcome kind {self.kind!r}")

    def with_wire(self, sent, **state) -> "Outcome":
        return replace(self, sent=tuple(sent), state={**self.state, **state})


class Failed(Exception):
    """Raised by a judge that rejects a row, with its ``judged`` outcome (``value``: what the hint names)."""

    def __init__(self, failure: str, observed: str, outcome: Outcome | None = None, value: str | None = None):
        super().__init__(observed)
        outcome = outcome or Outcome(RETURNED)
        self.outcome = judged(failure, observed, outcome if value is None else replace(
            outcome, state={**outcome.state, "value": value}))


def judged(failure: str | None, observed: str, outcome: Outcome | None = None) -> Outcome:
    """A row as its judge read it: the failure kind (None: it passed) and what was observed, on ``outcome``."""
    return replace(outcome or Outcome(RETURNED), failure=failure, observed=observed)


def returned(value: Any) -> Outcome:
    return Outcome(RETURNED, value)


def raised(exc: BaseException) -> Outcome:
    """A refusal when ``exc`` is typed (``CourseError``, ``MCPError``), else a crash."""
    return Outcome(REFUSED if isinstance(exc, (CourseError, MCPError)) else CRASHED, error=exc)


def crashed(exc: BaseException) -> Outcome:
    return Outcome(CRASHED, error=exc)


def hung(budget: float, not_asked: str | None = None) -> Outcome:
    return Outcome(HUNG, budget=budget, not_asked=not_asked)


def lab_failed(exc: BaseException) -> Outcome:
    return Outcome(LAB_FAILED, error=exc)


# The exceptions rebuilt as themselves from another process (a scorecard's hint reads their type);
# any other is rebuilt as an ``Exception`` of the same name.
REBUILT = {"NotImplementedError": NotImplementedError, "NameError": NameError, "AssertionError": AssertionError}


def crash_record(exc: BaseException) -> dict:
    """The student's exception as data another process can read (``crash_from``)."""
    record = {"crashed": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, Unavailable):
        record["unavailable"] = exc.dotted
    return record


def crash_from(record: dict) -> Outcome:
    """The ``CRASHED`` outcome of a ``crash_record``."""
    name, message = str(record["crashed"]), str(record.get("message", ""))
    if record.get("unavailable"):
        return crashed(Unavailable(record["unavailable"]))
    return crashed((REBUILT.get(name) or type(name, (Exception,), {"__module__": "student"}))(message))


def failure_of(outcome: Outcome) -> str | None:
    """The failure kind an outcome is by itself (a crash, a hang, a lab failure), else None."""
    return {CRASHED: CRASH, HUNG: HANG, LAB_FAILED: LAB}.get(outcome.kind)


def last_line(exc: BaseException) -> str:
    """The last line of the traceback Python would print: ``Type: message`` on one line (or ``Type`` alone)."""
    return " ".join(error_line(exc).split()) if str(exc).strip() else error_line(exc).split(":")[0]


def no_result(budget: float) -> str:
    return f"no result within {budget:g} s (stopped)"


def describe(outcome: Outcome) -> str:
    """One line of what happened, for the scorecard (a ``RETURNED`` outcome is the judge's to say)."""
    if outcome.kind == RETURNED:
        return f"returned {outcome.value!r}"[:120]
    if outcome.kind == REFUSED:
        return f"raised {error_line(outcome.error)}"
    if outcome.kind == CRASHED:
        return f"your code crashed: {last_line(outcome.error)}"
    if outcome.kind == HUNG:
        return outcome.not_asked or no_result(outcome.budget)
    return f"the lab could not run: {error_line(outcome.error)}"
