"""Chapter 04's exercise: ``my_read_resource(ctx, params, library)``, a read handler, on the wire.

Served by ``grading.harness read`` in each era of ``read_handler.json`` over the documents of ``read_library.json``,
which it reaches only by name (``library.text_of``): it must parse the URI. ``audit`` rows are sent by the audit's
own URI probes and pass only if its line passes too; ``reads`` rows read canonical URIs the server does not list;
the others send the battery's URIs verbatim."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Callable
from urllib.parse import quote

from course_lib.audit import read_canonical, read_missing, read_spellings
from course_lib.audit.report import Line, Report
from course_lib.audit.session import Context, Target
from course_lib.grading import outcome as o, served
from course_lib.grading.outcome import MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, Failed
from course_lib.grading.runner import run
from course_lib.grading.scorecard import Scorecard
from course_lib.paths import ROOT
from course_lib.uris import judge_missing

BATTERY = "read_handler"
STARTUP = 60.0  # seconds for the server to start and list its documents


def _crash(error: dict) -> Failed | None:
    if error.get("code") == -32603:  # the student's crash, or the SDK failing on what the handler did
        return served.crash_of(error) or Failed(WRONG_RESULT,
                                                f"the server could not answer: -32603 {error.get('message')}")
    return None


def judge_refusal(uri: str, reply: dict, era: str) -> None:
    """``uri`` must get the era's not-found, ``data.uri`` equal to ``uri`` (``uris.judge_missing``); else ``Failed``."""
    if "result" in reply:
        items = (reply["result"] or {}).get("contents") or []
        raise Failed(MISSING_REFUSAL, f"{uri!r} was served ({len(items)} content item(s)) instead of refused",
                     o.Outcome(o.RETURNED, reply["result"], state={"value": repr(uri)}))  # the hint names it
    error = reply.get("error") or {}
    crashed = _crash(error)
    if crashed is not None:
        raise crashed
    why = judge_missing(error, era, uri)
    if why is not None:
        raise Failed(WRONG_REFUSAL, f"{uri!r}: answered {error.get('code')} {error.get('message')!r}: {why}"[:200])


def judge_read(uri: str, reply: dict, text: str, mime: str) -> None:
    """A listed ``uri`` must read as one ``mime`` item under that URI with ``text``; else ``Failed``."""
    if "error" in reply:
        error = reply["error"] or {}
        raise _crash(error) or Failed(WRONG_REFUSAL, f"refused the listed {uri!r}: {error.get('code')} "
                                                    f"{error.get('message')!r}")
    items = (reply.get("result") or {}).get("contents") or []
    got = [(c.get("uri"), c.get("mimeType"), c.get("text")) for c in items if isinstance(c, dict)]
    if got != [(uri, mime, text)]:
        seen = [(u, m, None if t is None else (t == text and "the text" or "another text")) for u, m, t in got]
        raise Failed(WRONG_RESULT, f"read {uri!r}: got {seen}"[:150] + f", not [({uri!r}, {mime!r}, the text)]")


def load_library(spec: dict) -> dict:
    """The graded server's documents: ``base``, ``mime_type``, ``listed`` names and ``documents``."""
    return json.loads((ROOT / spec["library"]).read_text(encoding="utf-8"))


def judge_row(row: dict, asked: list[tuple[str, dict]], lines: list[Line], era: str, library: dict) -> str:
    """One row on each ``(uri, reply)`` it sent, in order, then for an ``audit`` row the audit's own ``lines``."""
    texts, mime, kind = library["documents"], library["mime_type"], row.get("audit")
    names = {library["base"] + quote(name, safe=""): name for name in library["listed"]}
    if not asked:
        raise Failed(WRONG_RESULT, "nothing was sent: the server listed no resources")
    for uri, reply in asked:
        if kind == "canonical":
            judge_read(uri, reply, texts.get(names.get(uri), "(a document of the fixture)"), mime)
        elif "reads" in row:
            judge_read(uri, reply, texts[row["reads"][uri]], mime)
        else:
            judge_refusal(uri, reply, era)
    check = {"canonical": "uri.canonical", "spellings": "uri.spelling", "missing": "uri.missing"}.get(kind)
    wrong = [line for line in lines if line.check == check and line.verdict != "PASS"]
    if wrong:
        raise Failed(WRONG_RESULT, f"the audit says {wrong[0].verdict}: {wrong[0].subject} {wrong[0].detail}"[:150])
    return f"{len(asked)} read(s) answered as expected" + (" and the audit agrees" if kind else "")


async def _row(wire, listed: list[str], row: dict, era: str, library: dict, kept: list[Line]) -> str:
    """The row's reads on ``wire`` (the audit's own probes for an ``audit`` row, whose lines go to ``kept``)."""
    report, before = Report(command=[], era=era), len(wire.exchanges)
    kind = row.get("audit")
    if kind == "canonical":
        await read_canonical(wire, [{"uri": u} for u in listed], era, report)
    elif kind == "spellings":  # the odd spellings of every listed URI, whatever the canonical reads did
        await read_spellings(wire, {u: [] for u in listed}, era, report)
    elif kind == "missing":
        await read_missing(wire, listed[0] if listed else "project:", [], era, report)
    else:  # the canonical URIs of documents the server does not list, or the battery's URIs verbatim
        for uri in row["reads"] if "reads" in row else row["uris"]:
            await wire.request("resources/read", {"uri": uri})
    kept += report.lines
    asked = [(x.request["params"]["uri"], x.reply) for x in wire.exchanges[before:]]
    return judge_row(row, asked, report.lines, era, library)


async def listed(wire) -> list[str]:
    listing = await wire.request("resources/list", None)
    return [r.get("uri") for r in ((listing.get("result") or {}).get("resources") or [])]


async def grade_read_handler(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                             eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_read_resource(ctx, params, library)`` inside real stdio servers, in both eras."""
    with served.written(student, battery, "read", only, eras, budget, default=5.0) as ex:
        library = load_library(ex.spec)
        argv = ex.argv(ex.config("library", library))

        def open_lab(s):  # start-up (an interpreter, the handshake) and the listing are the harness's
            ctx = Context(Target(argv), budget=ex.budget * 8 * sum(x.era == s.era for x in ex.scenarios) + 2 * STARTUP,
                          request_timeout=STARTUP)
            return served.on_probe(ctx, ex.budget, listed)(s)

        lines: dict[tuple, list[Line]] = {}  # each audit row's lines, recorded under make record
        row = served.answered(lambda s, lab: _row(*lab, ex.rows[s.name], s.era, library, lines.setdefault(
            (s.name, s.era), [])), facts=lambda s: {"audit": [asdict(x) for x in lines.get((s.name, s.era), [])]})
        return await run(ex, open_lab, row, key=lambda s: s.era, ended=served.probe_ended(ex.budget))
