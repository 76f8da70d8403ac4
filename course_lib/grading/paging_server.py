"""Chapter 3's exercise: ``my_page(cursor, catalog) -> (names, next_cursor)``, judged on the wire.

The function is copied into a module (``grading.child``) and served by ``grading.paging_harness``
(``tools/list`` and ``prompts/list``) as a real stdio server in each era of
``fixtures/grading/paging_server.json``: A (every row but the change), B (another server, whose
page-1 cursor A must refuse), an earlier process of A (same name and key, whose page-1 cursor A
must refuse too) and C (A again, whose tools move to generation 2 at its second ``tools/list``).
A row passes when the answers on the wire are what the battery expects and every page lists only
names of its list at that moment. A page function that never returns is stopped at the budget,
and its lab's later rows are not asked."""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import mcp_types as types
from mcp import MCPError

from course_lib.display import error_line
from course_lib.errors import CatalogError, CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery, rows_of, select
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.outcome import CRASH, HANG, LAB, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, no_result
from course_lib.grading.paging_harness import CRASHED
from course_lib.grading.runner import FAIL_FAST
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import for_each
from course_lib.walker import walk

BATTERY = "paging_server"


@dataclass
class Failed(Exception):
    """One row's failure: its kind (``core.FAILURES``) and what was observed."""

    kind: str
    observed: str
    error_type: str | None = None  # the page function's own exception, by type name


def tamper(cursor: str) -> str:
    """The cursor with its last letter or digit changed to another of its kind."""
    for i in range(len(cursor) - 1, -1, -1):
        ch = cursor[i]
        if ch.isdigit():
            new = str((int(ch) + 1) % 10)
        elif ch.isascii() and ch.isalpha():
            base = ord("a") if ch.islower() else ord("A")
            new = chr(base + (ord(ch) - base + 1) % 26)
        else:
            continue
        return cursor[:i] + new + cursor[i + 1:]
    return cursor + "x"


class _Probe:
    """The requests of one lab, with every answer checked against the catalog of the moment."""

    def __init__(self, lab, budget: float, allowed: dict[str, list[str]]):
        self.lab, self.budget, self.allowed = lab, budget, allowed  # the names each list may serve
        self.stuck = False  # a request got no answer: the server is not asked again

    def _failure(self, exc: MCPError) -> Failed | None:
        code, message = exc.error.code, exc.error.message
        crashed = (exc.error.data or {}).get("crashed") if isinstance(exc.error.data, dict) else None
        if code == types.INTERNAL_ERROR and crashed:
            return Failed(CRASH, "your code crashed: " + message[len(CRASHED):], crashed)
        if code == types.REQUEST_TIMEOUT:
            self.stuck = True
            return Failed(HANG, no_result(self.budget))
        return None

    async def page(self, cursor: str | None, kind: str = "tools") -> tuple[list[str], str | None]:
        if self.stuck:
            raise Failed(HANG, "not asked: an earlier request got no answer")
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        ask = self.lab.session.list_tools if kind == "tools" else self.lab.session.list_prompts
        try:
            result = await ask(params=params)
        except MCPError as exc:
            raise self._failure(exc) or exc
        names = [t.name for t in (result.tools if kind == "tools" else result.prompts)]
        outside = [n for n in names if n not in self.allowed[kind]]
        if outside:
            raise Failed(WRONG_RESULT, f"{kind}/list served {outside[0]!r}, which is not in its list "
                                       f"{self.allowed[kind]}")
        return names, result.next_cursor

    async def cursor_of_page_1(self, kind: str = "tools") -> str:
        names, cursor = await self.page(None, kind)
        if cursor is None:
            raise Failed(WRONG_RESULT, f"page 1 {names} has no next cursor: the catalog is paged in "
                                       f"pages of catalog.page_size")
        return cursor

    async def twice(self, cursor: str | None, label: str) -> tuple[list[str], str | None]:
        """Ask for the same page twice: both answers must be the same page and the same next cursor."""
        first, again = await self.page(cursor), await self.page(cursor)
        if first != again:
            raise Failed(WRONG_RESULT, f"{label} asked twice: {first[0]} with next cursor {first[1]!r}, "
                                       f"then {again[0]} with next cursor {again[1]!r}")
        return first

    async def refused(self, cursor: str, label: str, kind: str = "tools") -> str:
        """Ask ``kind``/list for ``cursor``; it must be refused with -32602 and a message."""
        try:
            names, next_cursor = await self.page(cursor, kind)
        except MCPError as exc:
            if exc.error.code == types.INVALID_PARAMS and exc.error.message.strip():
                return error_line(exc)
            raise Failed(WRONG_REFUSAL, f"{label}: answered {error_line(exc)}, not -32602 with a message")
        raise Failed(MISSING_REFUSAL, f"{label}: answered the page {names} (next cursor "
                                      f"{'none' if next_cursor is None else 'given'}) instead of -32602")

    async def walk(self, expected: list[str], min_pages: int, kind: str = "tools") -> str:
        if self.stuck:
            raise Failed(HANG, "not asked: an earlier request got no answer")
        try:
            catalog = await walk(self.lab, kind)
        except MCPError as exc:
            raise self._failure(exc) or Failed(WRONG_REFUSAL, f"the walk was refused: {error_line(exc)}")
        except CatalogError as exc:
            raise Failed(WRONG_RESULT, f"the walker refused the pages: {error_line(exc)}")
        found = f"{'' if kind == 'tools' else kind + ' '}{catalog.names} in pages {list(catalog.page_sizes)}"
        if catalog.names != expected:
            raise Failed(WRONG_RESULT, f"the walker read {found}")
        if catalog.pages < min_pages:
            raise Failed(WRONG_RESULT, f"the walker read {found}: one page is not paging")
        return f"the walker read {found}"


def _lent(cursor: str | Failed, lender: str) -> str:
    """A cursor another server lent, or its lender's failure as this row's."""
    if isinstance(cursor, Failed):
        raise Failed(cursor.kind, f"{lender}: {cursor.observed}", cursor.error_type)
    return cursor


async def _row(probe: _Probe, row: dict, lent: dict) -> tuple:
    """One row of the battery on its lab: (passed, observed, failure kind, outcome of a crash)."""
    kind, expect = row["probe"], row["expect"]
    try:
        if kind in ("walk", "fresh"):
            observed = await probe.walk(expect["names"], expect.get("min_pages", 1), row.get("kind", "tools"))
        elif kind == "replay":
            await probe.twice(None, "page 1")
            page = await probe.twice(await probe.cursor_of_page_1(), "one cursor")
            observed = f"page 1 and {page[0]}, each asked twice, came back identical"
        elif kind == "forged":
            for cursor in row["cursors"]:
                await probe.refused(cursor, f"cursor {cursor!r}")
            observed = f"refused {', '.join(map(repr, row['cursors']))} with -32602"
        elif kind == "tampered":
            cursor = tamper(await probe.cursor_of_page_1())
            observed = await probe.refused(cursor, "page 1's cursor, one character changed")
        elif kind == "foreign":
            cursor = _lent(lent["B"], "server 'paging-b'")
            observed = await probe.refused(cursor, "the cursor of server 'paging-b'")
        elif kind == "restarted":
            cursor = _lent(lent["A"], "the earlier process")
            observed = await probe.refused(cursor, "the cursor of an earlier process of this server")
        elif kind == "crossed":
            tools, prompts = await probe.cursor_of_page_1("tools"), await probe.cursor_of_page_1("prompts")
            await probe.refused(tools, "page 1's tools/list cursor sent to prompts/list", "prompts")
            observed = await probe.refused(prompts, "page 1's prompts/list cursor sent to tools/list", "tools")
        elif kind == "expired":
            cursor = await probe.cursor_of_page_1()  # the catalog moves on before the next request
            observed = await probe.refused(cursor, "a generation-1 cursor at generation 2")
        else:
            raise ValueError(f"unknown probe {kind!r}")
    except Failed as failed:
        error = {"NotImplementedError": NotImplementedError, "NameError": NameError}.get(failed.error_type)
        return False, failed.observed, failed.kind, None if error is None else o.crashed(error())
    except MCPError as exc:  # a request this row needed answered was refused
        return False, f"a request this row needs was answered {error_line(exc)}", WRONG_REFUSAL, None
    return True, observed, None, None


def _argv(path: Path, function: str, config: Path) -> list[str]:
    return child_argv("-m", "course_lib.grading.paging_harness", str(path), function, str(config))


def _configs(folder: Path, paging: dict) -> dict[str, Path]:
    base = {"catalog": paging["catalog"], "prompts": paging["prompts"], "page_size": paging["page_size"]}
    configs = {"A": {**base, **paging["server"]}, "B": {**base, **paging["other"]},
               "C": {**base, **paging["server"], "changed": paging["changed"]}}
    paths = {}
    for lab, config in configs.items():
        paths[lab] = folder / f"server-{lab}.json"
        paths[lab].write_text(json.dumps(config), encoding="utf-8")
    return paths


async def grade_paging_server(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                              eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_page(cursor, catalog) -> (names, next_cursor)`` inside real stdio servers."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 10.0)
    rows = rows_of(spec)
    paging = spec["paging"]
    with tempfile.TemporaryDirectory(prefix="course-paging-") as folder:
        try:
            path = write_module(Path(folder), "student_server", student, spec.get("unavailable", ()))
        except SourceError as exc:
            failed = o.crashed(exc)
            return publish(Scorecard(title, [Verdict(s, False, o.describe(failed), CRASH, failed) for s in scenarios],
                                     budget, battery))
        argv = lambda config: _argv(path, student.__name__, configs[config])  # noqa: E731
        configs = _configs(Path(folder), paging)
        options = {"request_timeout": budget, "lab_timeout": budget * 20 + 60}

        steady = {"tools": paging["catalog"], "prompts": paging["prompts"]}

        async def lent_cursor(era: str, config: str) -> str | Failed:
            try:
                async with connect(argv(config), era=era, **options) as lab:
                    return await _Probe(lab, budget, steady).cursor_of_page_1()
            except Failed as failed:
                return failed
            except MCPError as exc:
                return Failed(WRONG_REFUSAL, f"page 1 was refused: {error_line(exc)}")
            except CourseError as exc:
                return Failed(LAB, f"the lab could not run: {error_line(exc)}")

        async def run_lab(era: str, config: str, names: dict[str, list[str]], lent: dict) -> dict[str, tuple]:
            """Run the rows of one lab in battery order; a lab that fails is nobody's fault."""
            wanted = [s for s in scenarios if s.era == era and (rows[s.name]["probe"] in ("expired", "fresh"))
                      == (config == "C")]
            out = {}
            if not wanted:
                return out
            try:
                async with connect(argv(config), era=era, **options) as lab:
                    probe = _Probe(lab, budget, names)
                    for s in wanted:
                        if rows[s.name]["probe"] == "fresh":
                            probe.allowed = {**names, "tools": paging["changed"]}
                        out[s.name] = await _row(probe, rows[s.name], lent)
                        if FAIL_FAST.get() and not out[s.name][0]:
                            break  # the card fails: the rows after it are not asked
            except CourseError as exc:
                for s in wanted:
                    out.setdefault(s.name, (False, f"the lab could not run: {error_line(exc)}", LAB, o.lab_failed(exc)))
            return out

        async def run_era(era: str) -> dict[str, tuple]:
            asked = {rows[s.name]["probe"] for s in scenarios if s.era == era}
            lent = {config: await lent_cursor(era, config) if probe in asked else None
                    for config, probe in (("B", "foreign"), ("A", "restarted"))}
            first = await run_lab(era, "A", steady, lent)
            if FAIL_FAST.get() and not all(passed for passed, *_ in first.values()):
                return first
            # C's tools hold both generations' names until they change
            both = {**steady, "tools": list(dict.fromkeys(paging["catalog"] + paging["changed"]))}
            return {**first, **await run_lab(era, "C", both, lent)}

        era_list = list(dict.fromkeys(s.era for s in scenarios))
        if FAIL_FAST.get():  # one era after another, until one fails (``runner.FAIL_FAST``)
            results = {}
            for era in era_list:
                results[era] = await run_era(era)
                if not all(passed for passed, *_ in results[era].values()):
                    break
        else:
            results = await for_each(run_era, era_list)
    verdicts = [Verdict(s, *results[s.era][s.name]) for s in scenarios
                if not FAIL_FAST.get() or s.name in results.get(s.era, {})]
    return publish(Scorecard(title, verdicts, budget, battery))
