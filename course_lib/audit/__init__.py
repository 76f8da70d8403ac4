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

``audit(url=URL)`` (``--url URL``) audits a running Streamable HTTP server instead: the same probes
send their frames through ``course_lib.audit.http`` (one POST each); launch, dying and the stdout and
exit lines are stdio checks, reported INFO "not checked over HTTP".
``course_lib.audit.ci`` reads a file of expected findings and writes the card as JUnit XML.
"""
from __future__ import annotations

import time
from typing import Sequence

import anyio

from course_lib.audit import cursors, dying, eras, frames, launch, lists, resources, tools
from course_lib.audit.report import Line, Report
from course_lib.audit.session import Context, Target, in_sessions
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
STDIO_ONLY = "stdio only"
LAUNCH_LINES = {"stdout.before-input": (launch.STDIO, f"{STDIO_ONLY} (what it writes before any input)"),
                "stderr": (launch.STDERR, f"{STDIO_ONLY} (its stderr)"),
                "exit.eof": (launch.EXIT, f"{STDIO_ONLY} (its exit on stdin EOF)")}
SUMMARY_LINES = {"stdout.noise": (launch.STDIO, f"{STDIO_ONLY} (its stdout lines)"),
                 "stdout.frames": (launch.FRAMES, f"{STDIO_ONLY} (its stdout lines)"),
                 "exit.client-died": (dying.DIED, f"{STDIO_ONLY} (a client that dies closes both pipes)"),
                 "exit.leftovers": (launch.LEFT, f"{STDIO_ONLY} (what outlives it)")}


async def audit(argv: Sequence[str] = (), env: dict[str, str] | None = None, cwd: str | None = None,
                era: str = "all", budget: float = BUDGET, request_timeout: float | None = None,
                exit_budget: float = 5.0, url: str | None = None) -> Report:
    """Audit the stdio server ``argv`` (or the Streamable HTTP server at ``url``); ``era`` is
    ``legacy``, ``2026-07-28``, ``auto`` or ``all``.

    ``budget`` bounds each probe (seconds); ``request_timeout`` each reply (default: the budget,
    at most 10 s); ``exit_budget`` how long the server may take to exit after stdin EOF.
    """
    argv = [str(part) for part in argv]
    if url is not None and (argv or env or cwd):
        raise ValueError("audit a command or a URL, not both")
    if not argv and url is None:
        raise ValueError("the command to audit is empty")
    if era not in ERA_CHOICES:
        raise ValueError(f"era must be one of {ERA_CHOICES}, got {era!r}")
    started = time.monotonic()
    ctx = Context(Target(argv, dict(env) if env else None, str(cwd) if cwd else None, url), budget,
                  request_timeout or min(budget, 10.0), exit_budget=exit_budget)
    report = Report(argv or [url], era)
    want_legacy, want_modern = era in (LEGACY, AUTO, "all"), era in (MODERN_VERSION, AUTO, "all")
    stdio = url is None  # the checks of a process the audit starts: none over HTTP
    jobs = {"launch": (launch.run, (ctx,)) if stdio else (_over_http, (LAUNCH_LINES,)),
            **({"legacy": (eras.legacy, (ctx,))} if want_legacy else {}),
            **({"modern": (eras.modern, (ctx,))} if want_modern else {}),
            **({"dying": (dying.run, (ctx,))} if stdio else {})}
    found = dict(zip(jobs, await _together(report, list(jobs.values()))))
    launch.not_checked(ctx, report)  # a late first reply: the eras' timeouts say what was not checked
    legacy_ok = found.get("legacy")
    modern_ok = found.get("modern", False)
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
    _summary(ctx, report, found.get("dying"))
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


def not_over_http(checks: dict[str, tuple[str, str]], report: Report) -> None:
    """The stdio checks, each an INFO line saying why it was not checked over HTTP (never a PASS)."""
    for check, (rule, what) in checks.items():
        report.add(check, "INFO", rule, LEGACY if check in LAUNCH_LINES else "all", f"not checked over HTTP: {what}")


async def _over_http(checks: dict[str, tuple[str, str]], report: Report) -> None:
    not_over_http(checks, report)


def _summary(ctx: Context, report: Report, died: tuple[str, str] | None) -> None:
    if died is None:  # over HTTP: the stdout and exit lines say they were not checked, in their place
        not_over_http(dict(list(SUMMARY_LINES.items())[:2]), report)
    else:
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
    if died is None:
        not_over_http(dict(list(SUMMARY_LINES.items())[2:]), report)
        return
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


__all__ = ["ALL_CHECKS", "CAN_FAIL", "ERA_CHOICES", "REPORT_ONLY", "Line", "Report", "audit"]
