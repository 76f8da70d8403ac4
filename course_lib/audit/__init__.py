"""The audit: a robustness report card for any stdio MCP server, built from the course's own rules.

``report = await audit(["python", "-m", "my_server"])`` starts the command as a real stdio server,
once per probe that needs a fresh process (each its own process group, its own budget, gone when
the probe ends): the launch probe; per era the era probe, its list walk after it and (on one era's
process) the dying client; per era the cursor, URI and tool probes, then the malformed frames. A
probe that ends its process leaves the next a fresh one. It
returns a ``Report``: lines of PASS / WARN / FAIL / INFO, each naming the rule it rests on.
``python -m course_lib.audit -- CMD ARGS…`` prints the same card (``--json`` for machines); its
exit status is non-zero when a MUST fails. The probes, in order:

- ``launch``: stdout before any input and before the reply to initialize, the handshake's lines, stderr (information), the exit on
  stdin EOF (a forced stop is its own verdict); a first reply later than the request budget is
  ``launch.late`` (a MUST of the course), and the era lines it cut short say "not checked";
- ``eras``: the 2025-11-25 handshake, ``server/discover`` with the 2026-07-28 envelope, ``auto``;
  an era asked for by name (``--era``) that the server does not speak fails its line;
- ``dying``: the client dies with a request in flight (both pipes close at once); the server and
  what it started must be gone within the exit budget;
- per era: ``lists`` (every advertised list walked with the walker's rules), ``cursors`` (cursor
  hygiene, well-formed edits of a cursor the audit can read), ``resources`` (URIs), ``tools``
  (protocol errors, invalid input, an unknown method), ``frames`` (malformed frames); then, from
  what those probes read, ``toolschema`` (the listed tools' schemas and names) and ``specschema``
  (every frame against the era's published JSON Schema);
- then what all probes saw: stdout noise, oversized frames, the envelope of every reply, the
  messages the server sent on its own, and any process still running after the server's own exit
  (listed before any kill) or left for a stop to sweep.

``audit(url=URL)`` (``--url URL``) audits a running Streamable HTTP server instead: the same probes
send their frames through ``course_lib.audit.http`` (one POST each); launch, dying and the stdout and
exit lines are stdio checks, reported INFO "not checked over HTTP".
``course_lib.audit.ci`` reads a file of expected findings and writes the card as JUnit XML. The
course's graders ask the same questions one at a time on a session they hold: ``answer_kind`` (how
a ``tools/call`` reply reads), ``read_canonical``, ``read_spellings`` and ``read_missing`` (the URI probes).
"""
from __future__ import annotations

import time
from typing import Sequence

import anyio

from course_lib.audit import dying, eras, frames, launch, lists, specschema, toolschema
from course_lib.audit.jobs import PARALLEL, Jobs, cancellable, chain, slot_of
from course_lib.audit.report import Line, Report
from course_lib.audit.resources import read_canonical, read_missing, read_spellings
from course_lib.audit.session import EXIT_BUDGET, Context, Target, more_time
from course_lib.audit.tools import answer_kind
from course_lib.protocol import AUTO, LEGACY, MODERN_VERSION

ERA_CHOICES = (LEGACY, MODERN_VERSION, AUTO, "all")
BUDGET = 30.0  # seconds per probe
ENVELOPE = "MUST (JSON-RPC 2.0: response objects)"
# Every check the audit has, in card order; those that can FAIL (each a MUST); those that report one
# fact by design (always INFO, or a line that exists only when its probe failed).
ALL_CHECKS = ("stdout.before-input", "launch.answer", "launch.late", "stderr", "exit.eof", "era.handshake",
              "era.envelope", "era.auto", "list.walk", "cursor.replay", "cursor.forged", "cursor.tampered",
              "cursor.non-string", "cursor.empty", "cursor.foreign", "cursor.unpaged", "uri.canonical",
              "uri.spelling", "uri.template", "uri.missing", "method.unknown", "tool.unknown", "tool.arguments",
              "tool.invalid-input", "frame.malformed", "tool.schema", "frame.schema", "exit.client-died", "probe.ended", "stdout.noise", "stdout.frames", "envelope.strict",
              "envelope.received", "exit.leftovers")
CAN_FAIL = ("stdout.before-input", "launch.answer", "launch.late", "era.handshake", "era.envelope", "era.auto",
            "list.walk", "cursor.tampered", "method.unknown", "tool.unknown", "tool.arguments", "tool.invalid-input",
            "frame.malformed", "tool.schema", "frame.schema", "exit.client-died", "probe.ended", "stdout.noise", "envelope.strict", "exit.leftovers")
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
                exit_budget: float = EXIT_BUDGET, url: str | None = None) -> Report:
    """Audit the stdio server ``argv`` (or the Streamable HTTP server at ``url``); ``era`` is
    ``legacy``, ``2026-07-28``, ``auto`` or ``all``.

    ``budget`` bounds each probe (seconds); ``request_timeout`` each reply (default: the budget,
    at most 10 s); ``exit_budget`` how long the server may take to exit after stdin EOF, or after its
    client died (default: 2 s, as long as the official SDK client waits before it stops the server).
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
    # Each probe starts as soon as what it needs is known: the era probes first (every later probe
    # starts from them), the launch probe beside them; per era the list walk on the era probe's
    # process, then on a process of their own the probes that start from what it listed, and (stdio)
    # the frame probe last (an era asked for by name: that process starts at once, beside the era
    # probe, and waits for the walk). The dying probe goes on one era probe's process after its walk
    # (a fresh one when none is left to it). The lines keep card order.
    # Over HTTP the frame probe has a session of its own; the era whose frames are probed whenever it
    # is spoken (an era asked for by name; the legacy era of ``all``) starts it at once, beside the era
    # probes, and its lines are dropped if the era probe finds the era not spoken.
    stdio = url is None  # the checks of a process the audit starts: none over HTTP
    named = None if stdio else era if era in (LEGACY, MODERN_VERSION) else LEGACY if era == "all" else None
    early = stdio and era in (LEGACY, MODERN_VERSION)
    jobs, ran, unspoken = Jobs(argv, era), [], anyio.CancelScope()  # the latter ends a frame probe started for nothing
    launched, died = anyio.Event(), [("INFO", "not probed") if stdio else None]
    decided = Report(argv, era)  # era.auto and the era lines an era asked for by name changes

    async def launch_first() -> None:
        await (jobs.run(0, launch.run, ctx) if stdio else jobs.run(0, _over_http, LAUNCH_LINES))
        launched.set()

    found, answered = {}, {1: anyio.Event(), 2: anyio.Event()}  # the era probes' verdicts, as they come
    walked = {LEGACY: anyio.Event(), MODERN_VERSION: anyio.Event()}  # an era's list walk has ended
    walks, settled = {}, {LEGACY: anyio.Event(), MODERN_VERSION: anyio.Event()}  # whether an era's walk runs
    carried = []  # the dying probe's verdict, when an era probe's process carried it
    ended = {LEGACY: anyio.Event(), MODERN_VERSION: anyio.Event()}  # an era probe's process has ended

    async def dying_probe() -> None:
        """On a process of its own, unless an era probe's process carried it after its walk."""
        for e, wanted in ((LEGACY, want_legacy), (MODERN_VERSION, want_modern)):
            if wanted:
                await ended[e].wait()
        if not carried:
            died[0] = await jobs.run(3, dying.run, ctx)

    async def carries(e: str) -> bool:
        """The dying probe goes on the legacy era's process when its walk runs, else the other's."""
        if e == MODERN_VERSION and want_legacy:
            await settled[LEGACY].wait()
            return not walks.get(LEGACY)
        return True

    async def era_probe(slot: int, e: str, probe) -> None:
        """The era probe of ``e``; on an era the audit goes on with (``auto``: the legacy era only if
        the 2026-07-28 era is not spoken), the era's list walk follows on the same process, then
        (stdio) the dying probe, on one era's process (a client that dies after its walk)."""
        walk, done = None, []

        async def then(wire) -> None:
            nonlocal walk
            found[slot] = True
            answered[slot].set()
            if era == AUTO and e == LEGACY and want_modern:
                await answered[2].wait()
                if found.get(2):
                    settled[e].set()
                    return
            walks[e] = True
            settled[e].set()
            walk = lists.Walk(ctx, e, jobs.slot(slot_of(e, 0)))
            more_time(wire, ctx.budget)
            await walk.on(wire)
            done.append(walk)
            walked[e].set()
            if stdio and await carries(e):
                more_time(wire, ctx.budget + ctx.exit_budget)
                verdict = await dying.on(ctx, wire, e)
                if verdict is not None:
                    died[0] = verdict
                    carried.append(e)

        then.failed = lambda exc: walk is not None and not done and walk.failed(exc)
        try:
            found[slot] = await jobs.run(slot, lambda ctx, report: probe(ctx, report, then), ctx)
        finally:
            answered[slot].set()
            walked[e].set()
            settled[e].set()
            ended[e].set()

    async def eras_then_the_rest(group) -> None:
        for slot, wanted, e, probe in ((1, want_legacy, LEGACY, eras.legacy), (2, want_modern, MODERN_VERSION, eras.modern)):
            if wanted:
                group.start_soon(era_probe, slot, e, probe)
        if named:  # the others after the era probes, which gate the rest (the dying probe last)
            group.start_soon(cancellable, unspoken, jobs.run(slot_of(named, 2), frames.run, ctx, named))
        if early:  # an era asked for by name, on stdio: the process of the probes after the walk starts now
            group.start_soon(chain, jobs, slot_of(era, 0), ctx, era, walked[era], stdio, walks)
        group.start_soon(launch_first)
        if stdio:
            group.start_soon(dying_probe)
        for slot, wanted in ((1, want_legacy), (2, want_modern)):
            if wanted:
                await answered[slot].wait()
        legacy_ok, modern_ok = found.get(1), found.get(2, False)
        if not (legacy_ok or modern_ok):  # no era answered: the launch probe says whether the reply was late
            await launched.wait()
        report.eras = {LEGACY: _support(legacy_ok), MODERN_VERSION: _support(modern_ok if era != LEGACY else None)}
        if era in (LEGACY, MODERN_VERSION):
            run = [era] if (legacy_ok if era == LEGACY else modern_ok) else []
            if not run:  # after a late first reply's rewrite of the era line, as on the card
                await launched.wait()
                launch.not_checked(ctx, jobs.outputs[1 if era == LEGACY else 2])
                eras.asked_for(jobs.outputs[1 if era == LEGACY else 2], era)
        else:
            landed = eras.auto(ctx, decided, legacy_ok, modern_ok)
            report.eras[AUTO] = "none" if landed is None else landed
            run = [landed] if era == AUTO and landed else [e for e, ok in ((LEGACY, legacy_ok),
                                                                           (MODERN_VERSION, modern_ok)) if ok]
        ran.extend(run)
        if named not in run:
            unspoken.cancel()
        for e in run:
            if e != named and not stdio:
                group.start_soon(jobs.run, slot_of(e, 2), frames.run, ctx, e)
            if not early:
                group.start_soon(chain, jobs, slot_of(e, 0), ctx, e, walked[e], stdio)

    async with anyio.create_task_group() as group:
        group.start_soon(eras_then_the_rest, group)
    if named and named not in ran:
        jobs.outputs.pop(slot_of(named, 2))
    for e in ran:  # what the era's probes read, judged against the era's published schema
        toolschema.run(ctx, e, jobs.outputs[slot_of(e, 2)])
        specschema.run(ctx, e, jobs.outputs[slot_of(e, 2)])
    jobs.outputs.setdefault(3, Report(argv, era))  # over HTTP no dying probe: its slot still places what follows
    for slot in sorted(jobs.outputs):
        report.lines.extend(jobs.outputs[slot].lines)
        if slot == 3:  # after the launch and era lines (a late first reply rewrites the latter)
            launch.not_checked(ctx, report)
            report.lines.extend(decided.lines)
    _summary(ctx, report, died[0])
    report.processes, report.leftovers = ctx.processes, list(ctx.leftovers)
    report.elapsed = time.monotonic() - started
    return report


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


__all__ = ["ALL_CHECKS", "CAN_FAIL", "ERA_CHOICES", "EXIT_BUDGET", "REPORT_ONLY", "Line", "Report", "answer_kind", "audit",
           "read_canonical", "read_missing", "read_spellings"]
