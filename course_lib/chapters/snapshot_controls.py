"""The snapshot chapter's negative controls: five known-wrong servers, each caught at its named check.

Each is a ``--fault`` of the snapshot server, run in one scenario of
:mod:`course_lib.chapters.snapshot_lab`, with the check that must catch it.

A control is **killed** only when its run fails at that check, with the control's text in the
message, and the server still exits cleanly; a run that passes **survived**.
"""
from __future__ import annotations

from dataclasses import dataclass

from course_lib.chapters.snapshot_lab import Report, run_scenario
from course_lib.display import Table


@dataclass(frozen=True)
class Control:
    """A wrong server (a ``--fault`` of the snapshot server) and where the run must catch it."""

    fault: str
    scenario: str
    check: str
    message: str  # text the failure message must contain
    why: str


CONTROLS = (
    Control("expired-resource-fallback", "expired", "expired_resource", "answered (the r2 text)",
            "an expired pinned URI silently answers with the current text"),
    Control("expired-prompt-fallback", "expired", "expired_prompt", "Review only this snapshot: r2",
            "the r1 prompt silently embeds r2 once r1 is gone"),
    Control("mixed-pinned-body", "mixed", "snapshot_oracle", "r1/design",
            "project://atlas/r1/design answers with the r2 body"),
    Control("incomplete-recovery-manifest", "expired", "manifest_membership", "r2 lists",
            "the manifest the recovery starts from omits a file"),
    Control("recovery-unavailable", "expired", "recovery", "r2 also unavailable",
            "the revision the recovery starts from is dropped right after its manifest"),
)


@dataclass(frozen=True)
class ControlOutcome:
    fault: str
    verdict: str  # "killed" | "survived" | "wrong_check" | "unclean_exit"
    check: str | None
    message: str
    returncode: int | None


def judge(control: Control, report: Report) -> ControlOutcome:
    failure = report.failure
    if failure is None:
        verdict = "survived"
    elif failure.check != control.check or control.message not in failure.message:
        verdict = "wrong_check"
    elif not report.clean_exit:
        verdict = "unclean_exit"
    else:
        verdict = "killed"
    return ControlOutcome(control.fault, verdict, failure and failure.check, failure.message if failure else "",
                          report.returncode)


async def run_control(control: Control, era: str = "legacy", **options) -> ControlOutcome:
    return judge(control, await run_scenario(control.scenario, era, fault=control.fault, **options))


def controls_table(outcomes: list[ControlOutcome]) -> Table:
    by_fault = {o.fault: o for o in outcomes}
    rows = []
    for c in CONTROLS:
        o = by_fault[c.fault]
        rows.append([c.fault, c.scenario, c.check, o.verdict, o.check or "-", o.returncode])
    return Table(["wrong server", "scenario", "must fail at", "verdict", "failed at", "exit"], rows)

