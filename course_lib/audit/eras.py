"""Eras: the 2025-11-25 handshake, the 2026-07-28 per-request envelope, and what ``auto`` negotiates.

"Not supported" is its own verdict (INFO, detail ``not supported: …``): a server may speak one era
only. ``auto`` is what the SDK's ``Client(mode="auto")`` does: ``server/discover`` first, the
handshake when the server does not know it; its line names the era it lands in. Each probe is a
process of its own; on an era the audit goes on with, the era's list walk follows on the same
process (``then``), with the capabilities the era reported.
"""
from __future__ import annotations

from dataclasses import replace

from course_lib.audit.report import Report
from course_lib.audit.session import NOT_SUPPORTED_CODES, Context, ProbeFailed, describe_error, error_of, probe
from course_lib.protocol import LEGACY, LEGACY_VERSION, MODERN_VERSION

HANDSHAKE = "MUST (spec: lifecycle, initialization)"
ENVELOPE = "MUST (spec 2026-07-28: server/discover, the envelope)"
AUTO = "INFO (spec: version negotiation)"
ASKED = "MUST (course: a server speaks the era its audit asks for)"
NOT_SUPPORTED = "not supported"


async def legacy(ctx: Context, report, then=None) -> bool:
    """The handshake probe: ``initialize`` + ``notifications/initialized``, then a ``ping``; on a
    supported era, ``then(wire)`` (the era's list walk) on the same session."""
    return await _era(ctx, report, LEGACY, _handshake, then)


async def modern(ctx: Context, report, then=None) -> bool:
    """The 2026-07-28 probe: ``server/discover`` with the envelope, no handshake; on a supported
    era, ``then(wire)`` on the same session."""
    return await _era(ctx, report, MODERN_VERSION, _discover, then)


async def _era(ctx: Context, report, era: str, judge, then) -> bool:
    """One era probe: ``judge`` writes the era's line (kept aside until the session ends); when it
    says the era is supported, ``then`` runs on the session, and a fault from then on is its own
    (``then.failed``), not the era's."""
    judged, ok, walking = Report(report.command, report.era), False, False
    try:
        async with probe(ctx, era) as wire:
            ok = await judge(ctx, judged, wire)
            if ok and then is not None:
                walking = True
                await then(wire)
    except ProbeFailed as exc:
        if not walking:
            check = "era.handshake" if era == LEGACY else "era.envelope"
            report.add(check, "FAIL", HANDSHAKE if era == LEGACY else ENVELOPE, era, f"{exc.check}: {exc.message}")
            if era == LEGACY:
                ctx.capabilities[LEGACY] = {}
            return False
        report.lines.extend(judged.lines)
        then.failed(exc)
        return True
    report.lines.extend(judged.lines)
    return ok


async def _handshake(ctx: Context, report, wire) -> bool:
    init = wire.exchanges[0].reply
    # LineClient raised nothing: the reply passed the envelope checks; it may still be an error.
    ping = await wire.request("ping", {})
    error = error_of(init)
    if error is not None:
        report.add("era.handshake", "INFO", HANDSHAKE, LEGACY, f"{NOT_SUPPORTED}: initialize → {describe_error(error)}")
        return False
    result = init["result"]
    ctx.capabilities[LEGACY] = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
    version = result.get("protocolVersion")
    info = result.get("serverInfo") or {}
    if not isinstance(version, str) or not isinstance(info, dict):
        report.add("era.handshake", "FAIL", HANDSHAKE, LEGACY, "the initialize result lacks protocolVersion or "
                   "serverInfo")
        return False
    pinged = "ping answered" if error_of(ping) is None else f"ping → {describe_error(error_of(ping))}"
    report.add("era.handshake", "PASS" if version == LEGACY_VERSION else "INFO", HANDSHAKE, LEGACY,
               f"{version} with {info.get('name')} {info.get('version')}; {pinged}")
    ctx.eras_seen[LEGACY] = version
    return True


async def _discover(ctx: Context, report, wire) -> bool:
    reply = await wire.request("server/discover", {})
    error = error_of(reply)
    if error is not None:
        verdict = "INFO" if error.get("code") in NOT_SUPPORTED_CODES else "FAIL"
        report.add("era.envelope", verdict, ENVELOPE, MODERN_VERSION,
                   f"{NOT_SUPPORTED}: server/discover → {describe_error(error)}")
        return False
    result = reply["result"]
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or MODERN_VERSION not in versions:
        report.add("era.envelope", "INFO", ENVELOPE, MODERN_VERSION,
                   f"{NOT_SUPPORTED}: server/discover lists {versions!r}")
        return False
    ctx.capabilities[MODERN_VERSION] = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
    info = ((result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") or result.get("serverInfo") or {})
    report.add("era.envelope", "PASS", ENVELOPE, MODERN_VERSION,
               f"server/discover lists {', '.join(map(str, versions))}; {info.get('name')} {info.get('version')}")
    ctx.eras_seen[MODERN_VERSION] = MODERN_VERSION
    return True


def asked_for(report, era: str) -> None:
    """``--era ERA`` on a server that does not speak it: its era line fails (nothing else was audited)."""
    check = "era.handshake" if era == LEGACY else "era.envelope"
    for i, line in enumerate(report.lines):
        if line.check == check and line.verdict == "INFO":
            report.lines[i] = replace(line, verdict="FAIL", rule=ASKED,
                                      detail=f"{line.detail}; the audit was asked for this era only: nothing audited")


def auto(ctx: Context, report, legacy_ok: bool | None, modern_ok: bool) -> str | None:
    """The era ``auto`` lands in, from the two probes (discover first, then the handshake)."""
    if modern_ok:
        landed = MODERN_VERSION
        detail = "discover answered: 2026-07-28"
    elif legacy_ok:
        landed = LEGACY
        detail = f"discover refused, the handshake answered: {ctx.eras_seen.get(LEGACY)}"
    elif ctx.late is not None:  # no era answered in time: what the later probes check was not checked
        report.add("era.auto", "INFO", AUTO, "auto", f"not checked: no era answered within the "
                   f"{ctx.request_timeout:g} s request budget; lists, cursors, URIs and tools not probed")
        return None
    else:
        report.add("era.auto", "FAIL", HANDSHAKE, "auto", "neither era answered: no client can talk to this server")
        return None
    report.add("era.auto", "INFO", AUTO, "auto", detail)
    return landed


__all__ = ["NOT_SUPPORTED", "ProbeFailed", "auto", "legacy", "modern"]
