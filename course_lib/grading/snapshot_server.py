"""Chapter 10's server exercise: ``my_read(store, uri) -> (mime_type, text)``, judged on the wire.

The function is served by ``grading.harness snapshot`` as a real stdio server in each era of
``fixtures/grading/snapshot_server.json``: lab ``kept`` (r1 and r2 held, r2 current) and lab
``dropped`` (only r2 held). Each row reads its URIs through the SDK's ``ClientSession`` and
compares every answer with the fixed texts of ``fixtures/snapshot/expected.json`` or the -32002
the battery names."""
from __future__ import annotations

from typing import Callable

from mcp import MCPError

from course_lib.bundles import short
from course_lib.chapters.snapshot_lab import label, load_oracle
from course_lib.display import error_line
from course_lib.grading import served
from course_lib.grading.outcome import MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.scorecard import Scorecard
from course_lib.grading.served import Failed

BATTERY = "snapshot_server"


def texts_by_revision() -> dict[str, dict[str, str]]:
    """{revision: {document: text}}, from the fixed ``fixtures/snapshot/expected.json``."""
    oracle = load_oracle()
    return {rev: {short(uri).split("/", 1)[1]: text for uri, text in oracle[rev].items()} for rev in ("r1", "r2")}


async def served_text(asker: served.Asker, uri: str, revision: str, oracle: dict) -> None:
    """``uri`` must answer the fixed text of ``revision`` as text/plain."""
    try:
        result = await asker.ask(lambda: asker.lab.session.read_resource(uri), f"{short(uri)}: ")
    except MCPError as exc:
        raise Failed(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(exc)}, not its {revision} text")
    item = result.contents[0]
    text, expected = getattr(item, "text", None), oracle[revision][uri]
    if text != expected:
        what = label(text, oracle) if isinstance(text, str) else "no"
        raise Failed(WRONG_RESULT, f"{short(uri)}: answered the {what} text {text!r:.60}, not the fixed {revision} text")
    if item.mime_type != "text/plain":
        raise Failed(WRONG_RESULT, f"{short(uri)}: the right text as {item.mime_type}, not text/plain")


async def refused(asker: served.Asker, uri: str, code: int, message: str | None, oracle: dict) -> None:
    """``uri`` must get MCPError ``code`` (with exactly ``message`` when one is given)."""
    try:
        result = await asker.ask(lambda: asker.lab.session.read_resource(uri), f"{short(uri)}: ")
    except MCPError as exc:
        if exc.error.code != code or (message is not None and exc.error.message != message):
            wanted = f"{code}" + (f" {message!r}" if message else "")
            raise Failed(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(exc)}, not {wanted}")
        return
    text = getattr(result.contents[0], "text", "")
    raise Failed(MISSING_REFUSAL, f"{short(uri)}: answered the {label(text, oracle)} text {text!r:.60} "
                                  "instead of -32002")


async def ask_row(asker: served.Asker, row: dict) -> str:
    """One row on its lab: every read judged in turn; what was observed."""
    expect, oracle = row["expect"], load_oracle()
    for uri in row["reads"]:
        if "texts" in expect:
            await served_text(asker, uri, expect["texts"], oracle)
        else:
            await refused(asker, uri, expect["code"], expect.get("message"), oracle)
    done = ", ".join(short(u) for u in row["reads"])
    if "texts" in expect:
        return f"{done}: the fixed {expect['texts']} texts, text/plain"
    return f"{done}: MCPError {expect['code']}"


async def grade_snapshot_server(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                                eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_read(store, uri) -> (mime_type, text)`` inside real stdio snapshot servers."""
    texts = texts_by_revision()
    with served.written(student, battery, "snapshot", only, eras, budget) as ex:
        if ex.card:
            return ex.card
        argv = {name: ex.argv(ex.config(name, {"current": lab["current"],
                                               "revisions": {r: texts[r] for r in lab["revisions"]}}))
                for name, lab in ex.spec["labs"].items()}

        async def run_lab(era: str, lab: str) -> dict[str, tuple]:
            return await served.on_lab(ex, argv[lab], era, ex.wanted(era, lambda row: row["lab"] == lab), ask_row,
                                       lab_timeout=ex.budget * 10 + 60,
                                       not_asked="not asked: an earlier read got no answer")

        return await served.grade(ex, run_lab, key=lambda s: (s.era, ex.rows[s.name]["lab"]))
