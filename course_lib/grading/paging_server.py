"""Chapter 06's exercise: ``my_page(cursor, catalog) -> (names, next_cursor)``, judged on the wire.

Served by ``grading.harness paging`` (``tools/list``, ``prompts/list``) in each era: A (every row but the change;
it must refuse the page-1 cursors of B, another server, and of an earlier process of A) and C (A again, whose
tools move to generation 2 at its second ``tools/list``). Every page lists only names of its list at that moment."""
from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Callable

import mcp_types as types
from mcp import MCPError

from course_lib.display import error_line
from course_lib.errors import CatalogError, CourseError
from course_lib.grading import served
from course_lib.grading.outcome import LAB, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, Failed
from course_lib.grading.runner import run
from course_lib.grading.scorecard import Scorecard
from course_lib.labs import connect
from course_lib.walker import walk

BATTERY = "paging_server"
LENDERS = {"foreign": "B", "restarted": "A"}  # a probe, and the server whose page-1 cursor it is lent


def tamper(cursor: str) -> str:
    """The cursor with its last letter or digit changed to another of its kind."""
    for i in range(len(cursor) - 1, -1, -1):
        ch, base = cursor[i], ord("a") if cursor[i].islower() else ord("A")
        if ch.isdigit() or (ch.isascii() and ch.isalpha()):
            new = str((int(ch) + 1) % 10) if ch.isdigit() else chr(base + (ord(ch) - base + 1) % 26)
            return cursor[:i] + new + cursor[i + 1:]
    return cursor + "x"


def judge_page(kind: str, names: list[str], allowed: list[str]) -> None:
    """Every name of a ``kind``/list page must be one its list may serve now."""
    outside = [n for n in names if n not in allowed]
    if outside:
        raise Failed(WRONG_RESULT, f"{kind}/list served {outside[0]!r}, which is not in its list {allowed}")


def judge_first_page(names: list[str], cursor: str | None) -> str:
    """Page 1 of a catalog longer than a page has a next cursor (returned)."""
    if cursor is None:
        raise Failed(WRONG_RESULT, f"page 1 {names} has no next cursor: the catalog is paged in pages of catalog.page_size")
    return cursor


def judge_same(first: tuple, again: tuple, label: str, cursor: str | None = None) -> None:
    """The same page asked twice (with ``cursor``): the same names and the same next cursor."""
    if first != again:
        raise Failed(WRONG_RESULT, f"{label} asked twice: {first[0]} with next cursor {first[1]!r}, "
                                   f"then {again[0]} with next cursor {again[1]!r}", value=_named(cursor))


def _named(cursor: str | None) -> str | None:
    return None if cursor is None else repr(cursor)


def judge_refusal(answer: tuple | MCPError, label: str, cursor: str | None = None) -> str:
    """A cursor the server must refuse: ``answer`` (a page, or its ``MCPError``) is -32602 with a message."""
    if not isinstance(answer, MCPError):
        names, next_cursor = answer
        raise Failed(MISSING_REFUSAL, f"{label}: answered the page {names} (next cursor "
                                      f"{'none' if next_cursor is None else 'given'}) instead of -32602",
                     value=_named(cursor))
    if answer.error.code != types.INVALID_PARAMS or not answer.error.message.strip():
        raise Failed(WRONG_REFUSAL, f"{label}: answered {error_line(answer)}, not -32602 with a message",
                     value=_named(cursor))
    return error_line(answer)


def judge_walk(walked, expected: list[str], min_pages: int, kind: str = "tools") -> str:
    """The walker's catalog of a whole list (or the error it ended with): exactly ``expected``, in ``min_pages``+."""
    if isinstance(walked, MCPError):
        raise Failed(WRONG_REFUSAL, f"the walk was refused: {error_line(walked)}")
    if isinstance(walked, CatalogError):
        raise Failed(WRONG_RESULT, f"the walker refused the pages: {error_line(walked)}")
    found = f"{'' if kind == 'tools' else kind + ' '}{walked.names} in pages {list(walked.page_sizes)}"
    if walked.names != expected:
        raise Failed(WRONG_RESULT, f"the walker read {found}", value=found)
    if walked.pages < min_pages:
        raise Failed(WRONG_RESULT, f"the walker read {found}: one page is not paging", value=found)
    if expected and 0 in walked.page_sizes:  # a cursor to nothing: the page before it ended the list
        raise Failed(WRONG_RESULT, f"the walker read {found}: a next cursor led to an empty page", value=found)
    return f"the walker read {found}"


class Pages:
    """One row's requests on its lab, every answer judged against the names each list may serve now."""

    def __init__(self, asker: served.Asker, allowed: dict[str, list[str]]):
        self.asker, self.session, self.allowed = asker, asker.lab.session, allowed

    async def page(self, cursor: str | None, kind: str = "tools") -> tuple[list[str], str | None]:
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        ask = self.session.list_tools if kind == "tools" else self.session.list_prompts
        result = await self.asker.ask(lambda: ask(params=params))
        names = [t.name for t in (result.tools if kind == "tools" else result.prompts)]
        judge_page(kind, names, self.allowed[kind])
        return names, result.next_cursor

    async def cursor_of_page_1(self, kind: str = "tools") -> str:
        return judge_first_page(*await self.page(None, kind))

    async def twice(self, cursor: str | None, label: str) -> tuple[list[str], str | None]:
        first, again = await self.page(cursor), await self.page(cursor)
        judge_same(first, again, label, cursor)
        return first

    async def refused(self, cursor: str, label: str, kind: str = "tools") -> str:
        return judge_refusal(await served.answer_of(self.page(cursor, kind)), label, cursor)

    async def walk(self, expected: list[str], min_pages: int, kind: str = "tools") -> str:
        walked = self.asker.ask(lambda: walk(self.asker.lab, kind))
        return judge_walk(await served.answer_of(walked, (MCPError, CatalogError)), expected, min_pages, kind)


def _lent(cursor: str | Failed, lender: str) -> str:
    """A cursor another server lent, or its lender's failure as this row's."""
    if isinstance(cursor, Failed):
        raise Failed(cursor.outcome.failure, f"{lender}: {cursor.outcome.observed}", cursor.outcome)
    return cursor


def allowed_on(paging: dict, row: dict) -> dict[str, list[str]]:
    """The names each list may serve on the row's lab: A's; C's tools hold both generations' names until
    they change, and only generation 2's after (the ``fresh`` walk)."""
    both = list(dict.fromkeys(paging["catalog"] + paging["changed"]))
    tools = {"expired": both, "fresh": paging["changed"]}.get(row["probe"], paging["catalog"])
    return {"tools": tools, "prompts": paging["prompts"]}


async def lent_cursor(opened, paging: dict, budget: float, frames: list) -> str | Failed:
    """Page 1's cursor of the lender's lab ``opened`` (its lines kept in ``frames``), or its failure."""
    try:
        async with opened as lab:
            pages = Pages(served.Asker(lab, budget), allowed_on(paging, {"probe": "walk"}))
            cursor = await served.answer_of(pages.cursor_of_page_1(), (Failed, MCPError))
            frames += [[f.direction, f.raw] for f in lab.wire]
    except CourseError as exc:
        return Failed(LAB, f"the lab could not run: {error_line(exc)}")
    refused = isinstance(cursor, MCPError)
    return Failed(WRONG_REFUSAL, f"page 1 was refused: {error_line(cursor)}") if refused else cursor


async def ask_row(probe: Pages, row: dict, lent: dict) -> str:
    """One row of the battery on its lab: what was observed (a failure raises ``Failed``)."""
    kind, expect = row["probe"], row["expect"]
    if kind in ("walk", "fresh"):
        return await probe.walk(expect["names"], expect.get("min_pages", 1), row.get("kind", "tools"))
    if kind == "replay":
        await probe.twice(None, "page 1")
        page = await probe.twice(await probe.cursor_of_page_1(), "one cursor")
        return f"page 1 and {page[0]}, each asked twice, came back identical"
    if kind == "forged":
        for cursor in row["cursors"]:
            await probe.refused(cursor, f"cursor {cursor!r}")
        return f"refused {', '.join(map(repr, row['cursors']))} with -32602"
    if kind == "tampered":
        return await probe.refused(tamper(await probe.cursor_of_page_1()), "page 1's cursor, one character changed")
    if kind == "foreign":
        return await probe.refused(_lent(lent["B"], "server 'paging-b'"), "the cursor of server 'paging-b'")
    if kind == "restarted":
        return await probe.refused(_lent(lent["A"], "the earlier process"),
                                   "the cursor of an earlier process of this server")
    if kind == "crossed":
        tools, prompts = await probe.cursor_of_page_1("tools"), await probe.cursor_of_page_1("prompts")
        await probe.refused(tools, "page 1's tools/list cursor sent to prompts/list", "prompts")
        return await probe.refused(prompts, "page 1's prompts/list cursor sent to tools/list", "tools")
    if kind == "expired":  # the catalog moves on before the next request
        return await probe.refused(await probe.cursor_of_page_1(), "a generation-1 cursor at generation 2")
    raise ValueError(f"unknown probe {kind!r}")


async def grade_paging_server(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                              eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_page(cursor, catalog) -> (names, next_cursor)`` inside real stdio servers."""
    with served.written(student, battery, "paging", only, eras, budget) as ex:
        paging = ex.spec["paging"]
        base = {"catalog": paging["catalog"], "prompts": paging["prompts"], "page_size": paging["page_size"]}
        argv = {"A": ex.argv(ex.config("server-A", {**base, **paging["server"]})),
                "B": ex.argv(ex.config("server-B", {**base, **paging["other"]})),
                "C": ex.argv(ex.config("server-C", {**base, **paging["server"], "changed": paging["changed"]}))}
        lab_of = lambda s: "C" if ex.rows[s.name]["probe"] in ("expired", "fresh") else "A"  # noqa: E731
        labs, lines = served.on_lab(ex, lambda s: argv[lab_of(s)]), {}  # (era, lender): the lender's lab's lines
        lend = lambda era, lender: lent_cursor(connect(  # noqa: E731
            argv[lender], era=era, request_timeout=ex.budget, lab_timeout=ex.budget * 20 + 60), paging, ex.budget,
            lines.setdefault((era, lender), []))

        @asynccontextmanager
        async def open_lab(s):  # lab A's rows get the cursors of server B and of an earlier process first
            asked = {ex.rows[x.name]["probe"] for x in ex.scenarios if x.era == s.era} if lab_of(s) == "A" else set()
            lent = {lender: await lend(s.era, lender) if probe in asked else None for probe, lender in LENDERS.items()}
            async with labs(s) as asker:
                yield asker, lent

        lent_to = lambda s: {"lent": (k := LENDERS.get(ex.rows[s.name]["probe"])) and {k: lines.get((s.era, k))}}  # noqa: E731
        ask = lambda s, lab: ask_row(  # noqa: E731
            Pages(lab[0], allowed_on(paging, ex.rows[s.name])), ex.rows[s.name], lab[1])
        return await run(ex, open_lab, served.answered(ask, lent_to), key=lambda s: (s.era, lab_of(s)))
