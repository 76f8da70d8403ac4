"""Chapter 10's server exercise: ``my_read(store, uri) -> (mime_type, text)``, judged on the wire.

The function is copied into a module (``grading.child``) and served by ``grading.snapshot_harness``
as a real stdio server in each era of ``fixtures/grading/snapshot_server.json``: lab ``kept``
(r1 and r2 held, r2 current) and lab ``dropped`` (only r2 held). Each row reads its URIs through
the SDK's ``ClientSession`` and compares every answer with the fixed texts of
``fixtures/snapshot/expected.json`` or the -32002 the battery names. A read that gets no answer
within the budget is a hang, and the lab's later rows are not asked."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable

import mcp_types as types
from mcp import MCPError

from course_lib.bundles import short
from course_lib.chapters.snapshot_lab import label, load_oracle
from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery, rows_of, select
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.outcome import CRASH, HANG, LAB, MISSING_REFUSAL, WRONG_REFUSAL, WRONG_RESULT, no_result
from course_lib.grading.paging_harness import CRASHED
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.labs import connect
from course_lib.scenarios import for_each

BATTERY = "snapshot_server"
ERRORS = {"NotImplementedError": NotImplementedError, "NameError": NameError}


class Failed(Exception):
    """One row's failure: its kind (``outcome.FAILURES``), what was observed, the crash's type name."""

    def __init__(self, kind: str, observed: str, error_type: str | None = None):
        super().__init__(observed)
        self.kind, self.observed, self.error_type = kind, observed, error_type


def texts_by_revision() -> dict[str, dict[str, str]]:
    """{revision: {document: text}}, from the fixed ``fixtures/snapshot/expected.json``."""
    oracle = load_oracle()
    return {rev: {short(uri).split("/", 1)[1]: text for uri, text in oracle[rev].items()} for rev in ("r1", "r2")}


class _Reader:
    """The reads of one lab, each answer judged against the row's expectation."""

    def __init__(self, lab, budget: float):
        self.lab, self.budget, self.stuck = lab, budget, False
        self.oracle = load_oracle()

    async def read(self, uri: str):
        if self.stuck:
            raise Failed(HANG, "not asked: an earlier read got no answer")
        try:
            return await self.lab.session.read_resource(uri)
        except MCPError as exc:
            data = exc.error.data if isinstance(exc.error.data, dict) else {}
            if exc.error.code == types.INTERNAL_ERROR and data.get("crashed"):
                raise Failed(CRASH, "your code crashed: " + exc.error.message[len(CRASHED):], data["crashed"])
            if exc.error.code == types.REQUEST_TIMEOUT:
                self.stuck = True
                raise Failed(HANG, f"{short(uri)}: {no_result(self.budget)}")
            raise

    async def served(self, uri: str, revision: str) -> None:
        """``uri`` must answer the fixed text of ``revision`` as text/plain."""
        try:
            result = await self.read(uri)
        except MCPError as exc:
            raise Failed(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(exc)}, not its {revision} text")
        item = result.contents[0]
        text, expected = getattr(item, "text", None), self.oracle[revision][uri]
        if text != expected:
            what = label(text, self.oracle) if isinstance(text, str) else "no"
            raise Failed(WRONG_RESULT, f"{short(uri)}: answered the {what} text {text!r:.60}, not the fixed {revision} text")
        if item.mime_type != "text/plain":
            raise Failed(WRONG_RESULT, f"{short(uri)}: the right text as {item.mime_type}, not text/plain")

    async def refused(self, uri: str, code: int, message: str | None) -> None:
        """``uri`` must get MCPError ``code`` (with exactly ``message`` when one is given)."""
        try:
            result = await self.read(uri)
        except MCPError as exc:
            if exc.error.code != code or (message is not None and exc.error.message != message):
                wanted = f"{code}" + (f" {message!r}" if message else "")
                raise Failed(WRONG_REFUSAL, f"{short(uri)}: answered {error_line(exc)}, not {wanted}")
            return
        text = getattr(result.contents[0], "text", "")
        raise Failed(MISSING_REFUSAL, f"{short(uri)}: answered the {label(text, self.oracle)} text "
                                      f"{text!r:.60} instead of -32002")


async def _row(reader: _Reader, row: dict) -> tuple:
    """One row on its lab: (passed, observed, failure kind, outcome of a crash)."""
    expect = row["expect"]
    try:
        for uri in row["reads"]:
            if "texts" in expect:
                await reader.served(uri, expect["texts"])
            else:
                await reader.refused(uri, expect["code"], expect.get("message"))
    except Failed as failed:
        error = ERRORS.get(failed.error_type)
        return False, failed.observed, failed.kind, None if error is None else o.crashed(error())
    done = ", ".join(short(u) for u in row["reads"])
    if "texts" in expect:
        return True, f"{done}: the fixed {expect['texts']} texts, text/plain", None, None
    return True, f"{done}: MCPError {expect['code']}", None, None


async def grade_snapshot_server(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                                eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``my_read(store, uri) -> (mime_type, text)`` inside real stdio snapshot servers."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    budget = budget or spec.get("budget_seconds", 10.0)
    rows, texts = rows_of(spec), texts_by_revision()
    with tempfile.TemporaryDirectory(prefix="course-snapshot-") as folder:
        try:
            path = write_module(Path(folder), "student_server", student, spec.get("unavailable", ()))
        except SourceError as exc:
            failed = o.crashed(exc)
            return publish(Scorecard(title, [Verdict(s, False, o.describe(failed), CRASH, failed) for s in scenarios],
                                     budget, battery))
        configs = {}
        for name, lab in spec["labs"].items():
            configs[name] = Path(folder) / f"{name}.json"
            configs[name].write_text(json.dumps({"current": lab["current"],
                                                 "revisions": {r: texts[r] for r in lab["revisions"]}}), "utf-8")
        options = {"request_timeout": budget, "lab_timeout": budget * 10 + 60}

        async def run_lab(era: str, lab_name: str) -> dict[str, tuple]:
            wanted = [s for s in scenarios if s.era == era and rows[s.name]["lab"] == lab_name]
            out: dict[str, tuple] = {}
            if not wanted:
                return out
            argv = child_argv("-m", "course_lib.grading.snapshot_harness", str(path), student.__name__,
                              str(configs[lab_name]))
            try:
                async with connect(argv, era=era, **options) as lab:
                    reader = _Reader(lab, budget)
                    for s in wanted:
                        out[s.name] = await _row(reader, rows[s.name])
            except CourseError as exc:
                for s in wanted:
                    out.setdefault(s.name, (False, f"the lab could not run: {error_line(exc)}", LAB, o.lab_failed(exc)))
            return out

        keys = list(dict.fromkeys((s.era, rows[s.name]["lab"]) for s in scenarios))
        results = await for_each(run_lab, keys)
    verdicts = [Verdict(s, *results[(s.era, rows[s.name]["lab"])][s.name]) for s in scenarios]
    return publish(Scorecard(title, verdicts, budget, battery))
