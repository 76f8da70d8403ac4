"""Chapter 10's capstone judged on its recorded rows, in process: the client's refresh, read and bundle rows.

A refresh row is recorded as the facts its grader measured on the real labs (``capstone._run_refresh``: the
messages sent on the active session during the refresh, its output schemas changed, how it validates the probed
tool before and after, the candidates opened, the page-1 requests they got) with what ``refresh`` returned or
raised; a read row as each URI's answer and the reads that reached the server (``capstone._run_read``); a bundle
row as chapter 05's bundle rows are (``bundle_judge.bundle_rows``: its lab's whole wire). The audit of the
student's own page function is not recorded: it is judged on the audit's card of a real server
(tests/stdio/test_grading_capstone.py)."""
from __future__ import annotations

from dataclasses import replace

from course_lib.grading import outcome as o
from course_lib.grading.battery import hint_in_era, read_spec, rows_of
from course_lib.grading.capstone import documents, grade_capstone, judge_reads, judge_refresh
from course_lib.grading.bundle_judge import judge_bundle, revisions
from course_lib.tooling import transcripts as t

BATTERY = "capstone"


async def grade_client(student, battery: str = BATTERY, *, only: list[str] | None = None):
    """``grade_capstone`` of the client alone, as ``make record`` calls a grader (no server is audited)."""
    return await grade_capstone(student, battery=battery, only=only)


def judge_capstone(s, outcome: o.Outcome):
    """The capstone's judge of a refresh or a bundle row, with the hint its grader gives (``grade_capstone``'s
    row: a crash that broke no rule on the wire gets the battery's ``crash_hint``)."""
    spec = read_spec(BATTERY)
    row = rows_of(spec)[s.name]
    hint = hint_in_era(s, row)
    if row["task"] == "refresh":
        verdict = judge_refresh(s, outcome, hint, spec["untouched_hint"])
    elif row["task"] == "bundle":
        verdict = judge_bundle(replace(s, hint=hint), outcome, oracle=revisions(), latest_hint=spec["latest_hint"])
    else:  # a read row: each URI's answer (``make record`` encodes them, ``record.nested``) and the reads sent
        answers = {uri: t.decode(data) for uri, data in outcome.state["answers"].items()}
        verdict = judge_reads(s, row, answers, outcome.state["reads"], set(spec["allowed"]), documents(), hint)
    if verdict.failure == o.CRASH and verdict.scenario.hint == hint:
        return replace(verdict, scenario=replace(verdict.scenario, hint=spec["crash_hint"]))
    return verdict
