"""Chapter 05's server exercise: ``my_read(store, uri) -> (mime_type, text)``, judged on the wire.

Served by ``grading.harness snapshot`` in each era of ``fixtures/grading/snapshot_server.json``: lab
``kept`` (r1 and r2 held) and lab ``dropped`` (only r2). Every read is compared with the fixed texts of
``fixtures/snapshot/expected.json``, the -31001 the battery names, or the era's not-found."""
from __future__ import annotations

from typing import Callable

from mcp import MCPError

from course_lib.bundles import short
from course_lib.chapters.snapshot_lab import label, load_oracle
from course_lib.display import error_line
from course_lib.grading import served
from course_lib.grading.outcome import MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT
from course_lib.grading.runner import run
from course_lib.grading.scorecard import Scorecard
from course_lib.grading.served import Failed
from course_lib.uris import judge_missing

BATTERY = "snapshot_server"


def judge_read(expect: dict, uri: str, answer, oracle: dict, era: str = "legacy") -> None:
    """One read's answer (its ``ReadResourceResult``, or the ``MCPError`` it got) against the row's
    ``expect``: the fixed text of ``expect["texts"]`` as text/plain, the era's not-found when
    ``expect["not_found"]``, or MCPError ``expect["code"]`` (with exactly ``expect["message"]`` when
    one is given). A failure raises ``Failed`` naming ``uri``."""
    no = lambda kind, said: Failed(kind, said, value=repr(uri))  # noqa: E731
    if "texts" in expect:
        revision = expect["texts"]
        if isinstance(answer, MCPError):
            raise no(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(answer)}, not its {revision} text")
        item = answer.contents[0]
        text = getattr(item, "text", None)
        if text != oracle[revision][uri]:
            what = label(text, oracle) if isinstance(text, str) else "no"
            raise no(WRONG_RESULT, f"{short(uri)}: answered the {what} text {text!r:.60}, "
                                   f"not the fixed {revision} text")
        if item.mime_type != "text/plain":
            raise no(WRONG_RESULT, f"{short(uri)}: the right text as {item.mime_type}, not text/plain")
        return
    code, message = expect.get("code"), expect.get("message")
    if not isinstance(answer, MCPError):
        text = getattr(answer.contents[0], "text", "")
        wanted = "the era's not-found" if expect.get("not_found") else str(code)
        raise no(MISSING_REFUSAL, f"{short(uri)}: answered the {label(text, oracle)} text {text!r:.60} "
                                  f"instead of {wanted}")
    if expect.get("not_found"):
        why = judge_missing(answer, era, uri)
        if why is not None:
            raise no(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(answer)}: {why}"[:160])
        return
    if answer.error.code != code or (message is not None and answer.error.message != message):
        wanted = f"{code}" + (f" {message!r}" if message else "")
        raise no(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(answer)}, not {wanted}")


async def ask_row(asker: served.Asker, row: dict, era: str = "legacy") -> str:
    """One row on its lab, in ``era``: every read judged in turn; what was observed."""
    expect, oracle = row["expect"], load_oracle()
    for uri in row["reads"]:
        read = asker.ask(lambda: asker.lab.session.read_resource(uri), f"{short(uri)}: ")
        judge_read(expect, uri, await served.answer_of(read), oracle, era)
    return observed_when_passed(row)


def observed_when_passed(row: dict) -> str:
    """What a row whose every read passed observed: its reads and what they got."""
    expect, done = row["expect"], ", ".join(short(u) for u in row["reads"])
    if "texts" in expect:
        return f"{done}: the fixed {expect['texts']} texts, text/plain"
    if expect.get("not_found"):
        return f"{done}: the era's not-found, with data.uri"
    return f"{done}: MCPError {expect['code']}"


async def grade_snapshot_server(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                                eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_read(store, uri) -> (mime_type, text)`` inside real stdio snapshot servers."""
    oracle = load_oracle()  # the fixed texts, as {revision: {document: text}}
    texts = {rev: {short(uri).split("/", 1)[1]: text for uri, text in oracle[rev].items()} for rev in ("r1", "r2")}
    with served.written(student, battery, "snapshot", only, eras, budget) as ex:
        argv = {name: ex.argv(ex.config(name, {"current": lab["current"],
                                               "revisions": {r: texts[r] for r in lab["revisions"]}}))
                for name, lab in ex.spec["labs"].items()}

        labs = served.on_lab(ex, lambda s: argv[ex.rows[s.name]["lab"]], lab_timeout=ex.budget * 10 + 60)
        return await run(ex, labs, served.answered(lambda s, asker: ask_row(asker, ex.rows[s.name], s.era)),
                         key=lambda s: (s.era, ex.rows[s.name]["lab"]),
                         not_asked="not asked: an earlier read got no answer")
