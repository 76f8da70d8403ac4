"""The audit: a robustness report card for any stdio MCP server, built from the course's own rules.

``report = await audit(["python", "-m", "my_server"])`` starts the command as a real stdio server,
once per probe that needs a fresh process (each its own process group, its own budget, gone when
the probe ends; the cursor, URI and tool probes of an era share one process), and
returns a ``Report``: lines of PASS / WARN / FAIL / INFO, each naming the rule it rests on.
``python -m course_lib.audit -- CMD ARGS…`` prints the same card (``--json`` for machines); its
exit status is non-zero when a MUST fails. The probes, in order:

- ``launch``: stdout before any input, the handshake's lines, stderr (information), the exit on
  stdin EOF (a forced stop is its own verdict); a first reply later than the request budget is
  ``launch.late`` (a MUST of the course), and the era lines it cut short say "not checked";
- ``eras``: the 2025-11-25 handshake, ``server/discover`` with the 2026-07-28 envelope, ``auto``;
  an era asked for by name (``--era``) that the server does not speak fails its line;
- ``dying``: the client dies with a request in flight (both pipes close at once); the server and
  what it started must be gone within the exit budget;
- per era: ``lists`` (every advertised list walked with the walker's rules), ``cursors`` (cursor
  hygiene, well-formed edits of a cursor the audit can read), ``resources`` (URIs), ``tools``
  (protocol errors, invalid input, an unknown method), ``frames`` (malformed frames);
- then what all probes saw: stdout noise, oversized frames, the envelope of every reply, the
  messages the server sent on its own, and any process still running after the server's own exit
  (listed before any kill) or left for a stop to sweep.

``course_lib.audit.ci`` reads a file of expected findings and writes the card as JUnit XML. The
course's graders ask the same questions one at a time on a session they hold: ``answer_kind`` (how
a ``tools/call`` reply reads), ``read_canonical``, ``read_spellings`` and ``read_missing`` (the URI probes).
"""
from __future__ import annotations

import time
from typing import Sequence

import anyio

from course_lib.audit import cursors, dying, eras, frames, launch, lists, resources, tools
from course_lib.audit.report import Line, Report
from course_lib.audit.resources import read_canonical, read_missing, read_spellings
from course_lib.audit.session import Context, Target, in_sessions
from course_lib.audit.tools import answer_kind
from course_lib.protocol import AUTO, LEGACY, MODERN_VERSION

ERA_CHOICES = (LEGACY, MODERN_VERSION, AUTO, "all")
BUDGET = 30.0  # seconds per probe
PARALLEL = 3  # probes (server processes) at a time: a 2-core machine, servers that start in a second
ENVELOPE = "MUST (JSON-RPC 2.0: response objects)"
# Every check the audit has, in card order; those that can FAIL (each a MUST); those that report one
# fact by design (always INFO, or a line that exists only when its probe failed).
ALL_CHECKS = ("stdout.before-input", "launch.answer", "launch.late", "stderr", "exit.eof", "era.handshake",
              "era.envelope", "era.auto", "list.walk", "cursor.replay", "cursor.forged", "cursor.tampered",
              "cursor.non-string", "cursor.empty", "cursor.foreign", "cursor.unpaged", "uri.canonical",
              "uri.spelling", "uri.template", "uri.missing", "method.unknown", "tool.unknown", "tool.arguments",
              "tool.invalid-input", "frame.malformed", "exit.client-died", "probe.ended", "stdout.noise", "stdout.frames", "envelope.strict",
              "envelope.received", "exit.leftovers")
CAN_FAIL = ("stdout.before-input", "launch.answer", "launch.late", "era.handshake", "era.envelope", "era.auto",
            "list.walk", "cursor.tampered", "method.unknown", "tool.unknown", "tool.arguments", "tool.invalid-input",
            "frame.malformed", "exit.client-died", "probe.ended", "stdout.noise", "envelope.strict", "exit.leftovers")
REPORT_ONLY = ("stderr", "cursor.unpaged", "uri.template", "envelope.received", "launch.answer", "launch.late",
               "probe.ended")
RECEIVED = "MAY (spec: notifications and server requests at any time)"


async def audit(argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None,
                era: str = "all", budget: float = BUDGET, request_timeout: float | None = None,
                exit_budget: float = 5.0) -> Report:
    """Audit the stdio server ``argv``; ``era`` is ``legacy``, ``2026-07-28``, ``auto`` or ``all``.

    ``budget`` bounds each probe (seconds); ``request_timeout`` each reply (default: the budget,
    at most 10 s); ``exit_budget`` how long the server may take to exit after stdin EOF.
    """
    argv = [str(part) for part in argv]
    if not argv:
        raise ValueError("the command to audit is empty")
    if era not in ERA_CHOICES:
        raise ValueError(f"era must be one of {ERA_CHOICES}, got {era!r}")
    started = time.monotonic()
    ctx = Context(Target(argv, dict(env) if env else None, str(cwd) if cwd else None), budget,
                  request_timeout or min(budget, 10.0), exit_budget=exit_budget)
    report = Report(argv, era)
    want_legacy, want_modern = era in (LEGACY, AUTO, "all"), era in (MODERN_VERSION, AUTO, "all")
    found = await _together(report, [(launch.run, (ctx,)), *([(eras.legacy, (ctx,))] if want_legacy else []),
                                     *([(eras.modern, (ctx,))] if want_modern else []), (dying.run, (ctx,))])
    launch.not_checked(ctx, report)  # a late first reply: the eras' timeouts say what was not checked
    legacy_ok = found[1] if want_legacy else None
    modern_ok = found[-2] if want_modern else False
    report.eras = {LEGACY: _support(legacy_ok), MODERN_VERSION: _support(modern_ok if era != LEGACY else None)}
    if era in (LEGACY, MODERN_VERSION):
        run = [era] if (legacy_ok if era == LEGACY else modern_ok) else []
        if not run:
            eras.asked_for(report, era)
    else:
        landed = eras.auto(ctx, report, legacy_ok, modern_ok)
        report.eras[AUTO] = "none" if landed is None else landed
        run = [landed] if era == AUTO and landed else [e for e, ok in ((LEGACY, legacy_ok), (MODERN_VERSION, modern_ok))
                                                       if ok]
    # The list probes first (the others start from what they listed), then the rest; each era's lines
    # stay together and in this order however the probes interleave.
    phases = [[(lists.run, (ctx, e)) for e in run],
              [(_probes, (ctx, e)) for e in run] + [(frames.run, (ctx, e)) for e in run]]
    buffers = {e: Report(argv, era) for e in run}
    for phase in phases:
        await _together(None, phase, buffers)
    for e in run:
        report.lines.extend(buffers[e].lines)
    _summary(ctx, report, found[-1])
    report.processes, report.leftovers = ctx.processes, list(ctx.leftovers)
    report.elapsed = time.monotonic() - started
    return report


async def _probes(ctx: Context, era: str, report: Report) -> None:
    """The cursor, URI and tool probes of ``era`` on one server process (none needs a fresh one; a
    probe that ends its process leaves the next a fresh one)."""
    await in_sessions(ctx, era, report, [probe.work(ctx, era) for probe in (cursors, resources, tools)])


async def _together(report: Report | None, jobs: list, buffers: dict | None = None) -> list:
    """Run ``jobs`` (``(function, args)``) side by side, at most ``PARALLEL`` processes at a time;
    their lines go to ``report`` (or to the era's buffer) in the order of ``jobs``; returns their results."""
    outputs = [Report([], "all") for _ in jobs]
    results: list = [None] * len(jobs)
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def one(i: int, function, args) -> None:
        async with limiter:
            results[i] = await function(*args, outputs[i])

    async with anyio.create_task_group() as group:
        for i, (function, args) in enumerate(jobs):
            group.start_soon(one, i, function, args)
    for (function, args), out in zip(jobs, outputs):
        target = report if report is not None else buffers[args[1]]
        target.lines.extend(out.lines)
    return results


def _support(ok: bool | None) -> str:
    return "not probed" if ok is None else "supported" if ok else "not supported"


def _summary(ctx: Context, report: Report, died: tuple[str, str]) -> None:
    launch.stdout_lines(ctx, report)
    if ctx.envelope_faults:
        era, check, message = ctx.envelope_faults[0]
        report.add("envelope.strict", "FAIL", ENVELOPE, era, f"[{check}] {message}")
    else:
        report.add("envelope.strict", "PASS", ENVELOPE, "all", f"{ctx.replies} replies passed the strict checks")
    notes = [m for _, m in ctx.received if "id" not in m]
    asks = [m for _, m in ctx.received if "id" in m]
    methods = sorted({str(m.get("method")) for _, m in ctx.received})
    report.add("envelope.received", "INFO", RECEIVED, "all",
               f"{len(notes)} notification(s), {len(asks)} server request(s), none taken for a reply"
               + (f": {', '.join(methods)[:50]}" if methods else ""))
    report.add("exit.client-died", *died[:1], dying.DIED, "all", died[1])
    left, outlived = sorted(set(ctx.leftovers)), sorted(set(ctx.outlived))
    if outlived:
        report.add("exit.leftovers", "FAIL", launch.LEFT, "all", f"{len(outlived)} process(es) still running after "
                   f"the server exited by itself on stdin EOF: {'; '.join(outlived)}")
    else:
        report.add("exit.leftovers", "FAIL" if left else "PASS", launch.LEFT, "all",
                   f"{len(left)} process(es) outlived the server and were killed" if left else
                   f"nothing left behind by {ctx.processes} server processes"
                   + (f" ({ctx.forced} stopped by force)" if ctx.forced else ""))


__all__ = ["ALL_CHECKS", "CAN_FAIL", "ERA_CHOICES", "REPORT_ONLY", "Line", "Report", "answer_kind", "audit",
           "read_canonical", "read_missing", "read_spellings"]
