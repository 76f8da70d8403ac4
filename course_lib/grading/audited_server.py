"""The student's own servers under the audit, as the capstone grades them.

Each entry of a battery's ``servers`` names a chapter's server function and the ``grading.harness`` kind
that serves it (written by ``grading.child``); ``course_lib.audit`` writes its report card. One verdict per
era: no MUST of that era fails (the process's own lines count in every era). A function's own exception,
logged by the harness as data (``harness.CRASH_LOG``), is a crash; a probe whose session ended early a hang."""
from __future__ import annotations

import json
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Callable, Sequence

from course_lib.audit import audit
from course_lib.audit.report import Report
from course_lib.display import WIDTH
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.harness import CRASH_LOG
from course_lib.grading.runner import HARNESS
from course_lib.grading.served import logged_record
from course_lib.grading.scorecard import Verdict

PROBE_ENDED = "probe.ended"  # the audit's line for a probe whose session ended early (no answer in time)
PROCESS_CHECKS = ("stdout.before-input", "launch.answer", "launch.late", "exit.eof")
# What the SDK's own stdio loop answers, not the student's handlers: not held against the student.
FRAMEWORK_CHECKS = ("frame.malformed",)
EXPECTED = "no MUST fails on the audit's card"
# A classroom machine is shared: each reply (the first one waits for the interpreter to start) gets
# 30 s, each probe 60 s, the exit after stdin EOF 15 s (the command line's defaults: 10, 30 and 5 s).
REQUEST_TIMEOUT, PROBE_BUDGET, EXIT_BUDGET = 30.0, 60.0, 15.0


def scenarios_of(spec: dict) -> list[Scenario]:
    """One scenario per server entry and era, named as the card's rows are."""
    return [Scenario(entry["name"], era, "audit", None, {"text": EXPECTED}, entry["hint"],
                     hints={o.CRASH: entry["crash_hint"]} if "crash_hint" in entry else {})
            for entry in spec.get("servers", ()) for era in spec["eras"]]


def function_of(spec: dict, s: Scenario) -> str:
    return next(e["function"] for e in spec["servers"] if e["name"] == s.name)


def _given(spec: dict, entry: dict, functions: Sequence[Callable]) -> Callable | None:
    """The function given for ``entry``: by its name (or ``reference_`` name), else by its place."""
    wanted = (entry["function"], f"reference_{entry['function']}")
    named = next((f for f in functions if getattr(f, "__name__", None) in wanted), None)
    place = spec["servers"].index(entry)
    return named or (functions[place] if place < len(functions) else None)


async def audit_servers(spec: dict, functions: Sequence[Callable], names: set[str]) -> tuple[dict, dict]:
    """``{function: Report, or the Outcome that kept it from running}`` of ``names``, and their first crashes."""
    found: dict[str, Any] = {}
    crashes: dict[str, o.Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="course-capstone-") as folder:
        for n, entry in enumerate(e for e in spec.get("servers", ()) if e["name"] in names):
            function = _given(spec, entry, functions)
            if function is None:
                found[entry["function"]] = o.crashed(NameError(f"no {entry['function']} was given to the check: "
                                                           f"pass it after your client", name=entry["function"]))
                continue
            try:
                module = write_module(Path(folder), f"server_{n}", function)
            except SourceError as exc:
                found[entry["function"]] = o.crashed(exc)
                continue
            config = Path(folder) / f"server_{n}.json"
            config.write_text(json.dumps(entry["config"]), encoding="utf-8")
            argv = child_argv("-m", HARNESS, entry["harness"], str(module), function.__name__, str(config))
            log = Path(folder) / f"server_{n}.crashes.jsonl"
            found[entry["function"]] = await audit(argv, {CRASH_LOG: str(log)}, era="all", budget=PROBE_BUDGET,
                                                   request_timeout=REQUEST_TIMEOUT, exit_budget=EXIT_BUDGET)
            if (crash := logged_record(log)) is not None:
                crashes[entry["function"]] = o.crash_from(crash)
    return found, crashes


def held_to(report: Report) -> list:
    """The MUST lines that fail on the student's account (not the SDK's frame reading)."""
    return [line for line in report.failed if line.check not in FRAMEWORK_CHECKS]


def judge_audit(s: Scenario, found: Any, crash: o.Outcome | None = None) -> Verdict:
    """No MUST line of ``s.era`` fails; a failing card is the student's ``crash`` when their code crashed."""
    if isinstance(found, o.Outcome):
        return Verdict(s, False, o.describe(found), o.CRASH, found)
    failed = [line for line in held_to(found)  # those of its era; the process's own lines fail in every era
              if line.era in (s.era, "all", "auto") or line.check in PROCESS_CHECKS]
    if not failed:
        return Verdict(s, True, "no MUST fails")
    first = failed[0]
    subject = f"[{first.subject}]" if first.subject else ""
    observed = f"{first.check}{subject} FAIL: {first.detail}" + (f" (and {len(failed) - 1} more)"
                                                                  if len(failed) > 1 else "")
    if crash is not None:
        return Verdict(s, False, observed, o.CRASH, crash)
    if first.check == PROBE_ENDED:
        return Verdict(s, False, observed, o.HANG, o.hung(0.0))
    return Verdict(s, False, observed, o.WRONG_RESULT)


def card_lines(spec: dict, audits: dict[str, Any]) -> list[str]:
    """Under the scorecard: each audited server's MUST lines that fail (its whole card: ``audits``)."""
    out = []
    for entry in spec.get("servers", ()):
        report = audits.get(entry["function"])
        if isinstance(report, Report):
            failed = held_to(report)
            failing = f"{len(failed)} MUST line(s) fail" if failed else "no MUST line fails"
            out += textwrap.wrap(f"Audit of your {entry['function']} (chapter {entry['chapter'][:2]}): {failing}; "
                                 f"the card: .audits[{entry['function']!r}]", WIDTH, subsequent_indent="  ")
            for line in failed:
                head = f"  FAIL {line.check}{f'[{line.subject}]' if line.subject else ''} ({line.era}): "
                out += textwrap.wrap(head + line.detail, WIDTH, subsequent_indent=" " * 7, break_on_hyphens=False)
    return out
