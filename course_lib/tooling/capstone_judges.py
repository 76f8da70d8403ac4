"""Chapter 10's capstone judged on its recorded rows, in process: the client's refresh, read and bundle rows,
and the audit of the student's own server.

A refresh row is recorded as the facts its grader measured on the real labs (``capstone._run_refresh``: the
messages sent on the active session during the refresh, its output schemas changed, how it validates the probed
tool before and after, the candidates opened, the page-1 requests they got) with what ``refresh`` returned or
raised; a read row as each URI's answer and the reads that reached the server (``capstone._run_read``); a bundle
row as chapter 05's bundle rows are (``bundle_judge.bundle_rows``: its lab's whole wire); an audit row as the
audit's report of the server (its lines) and the crash its harness logged (``audited_server.audit_servers``)."""
from __future__ import annotations

from dataclasses import replace

from course_lib.audit.report import Line, Report
from course_lib.grading import audited_server, outcome as o
from course_lib.grading.battery import hint_in_era, read_spec, rows_of
from course_lib.grading.capstone import documents, grade_capstone, judge_reads, judge_refresh
from course_lib.grading.bundle_judge import judge_bundle, revisions
from course_lib.tooling import transcripts as t

BATTERY = "capstone"


async def grade_client(student, battery: str = BATTERY, *, only: list[str] | None = None, servers=()):
    """``grade_capstone`` as ``make record`` calls a grader: the client, then each of ``servers`` audited."""
    return await grade_capstone(student, *servers, battery=battery, only=only)


def judge_audit(s, outcome: o.Outcome):
    """An audited server's row: the audit's report of it (its lines), or what kept it from running, and the
    crash its harness logged (``make record`` keeps each as data, ``record.nested``)."""
    found, crash = outcome.state["audit"], outcome.state["crash"]
    if "lines" in found:
        found = Report([], found["era"], [Line(**x) for x in found["lines"]], expected=found["expected"])
    else:
        found = t.decode(found)
    return audited_server.judge_audit(s, found, None if crash is None else t.decode(crash))


def judge_capstone(s, outcome: o.Outcome):
    """The capstone's judge of a refresh or a bundle row, with the hint its grader gives (``grade_capstone``'s
    row: a crash that broke no rule on the wire gets the battery's ``crash_hint``)."""
    spec = read_spec(BATTERY)
    if s.name not in rows_of(spec):
        return judge_audit(s, outcome)
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
