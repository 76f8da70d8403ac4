"""Chapter 04's grader, the read handler, on real stdio servers where the wire itself is the point:
the handler's own crash carried as -32603, the SDK's own -32603 on a wrong return value, the student's
own error code carried as it was raised, a read stopped at its budget (then the rest not asked); and
the chapter's visible allowlist cell, copied as a student would copy it, fails. The reference, the
starter and every other known-wrong handler are judged in process on their recorded replies and audit
lines (tests/inprocess/test_transcripts_unit.py; the reference is recorded again on real servers in
tests/stdio/test_transcripts.py)."""
import json
from urllib.parse import quote

import anyio
import nbformat
import pytest

from course_lib.grading import outcome as o
from course_lib.grading.allowlist import grade_read_handler
from course_lib.grading.battery import load_battery
from course_lib.paths import fixture
from course_lib.tooling.student_copy import NOTEBOOKS
from scorecard_checks import assert_flagged

from test_grading_allowlist_unit import contents, no_data, own_key_error, returns_text

pytestmark = pytest.mark.anyio

LIBRARY = json.loads(fixture("grading", "read_library.json").read_text(encoding="utf-8"))
SERVED = {LIBRARY["base"] + quote(name, safe=""): name for name in LIBRARY["listed"]}  # what the server lists
_, SCENARIOS, SPEC = load_battery("read_handler")
ROWS = list(dict.fromkeys(s.name for s in SCENARIOS))
READ_ROWS = {"listed documents read", "names the chapter never showed"}
REFUSAL_ROWS = [r for r in ROWS if r not in READ_ROWS]


def visible_cell(tmp_path, own_rule=False):
    """The chapter's visible allowlist cell (``fix-server-handler``), copied as a student would copy
    it, with the exercise's signature: its ``on_read_resource`` answers for the library too. With
    ``own_rule`` its call of the unavailable ``missing`` is replaced by the rule written by hand."""
    nb = nbformat.read(NOTEBOOKS / "04_resources_and_uris.ipynb", as_version=4)
    source = {c.get("id"): c.source for c in nb.cells}
    if own_rule:
        call = "raise missing(params.uri, ctx.protocol_version)"
        assert call in source["fix-server-handler"]
        source["fix-server-handler"] = source["fix-server-handler"].replace(call, (
            'raise MCPError(-32602 if ctx.protocol_version == "2026-07-28" else -32002, "Resource not found", '
            '{"uri": params.uri})'))
    path = tmp_path / "copied.py"
    path.write_text(source["75e31536"] + "\n\n" + source["fix-server-handler"] + "\n\n"  # its imports cell, then it
                    "async def copied(ctx, params, library):\n    return await on_read_resource(ctx, params)\n",
                    encoding="utf-8")
    namespace = {"__name__": "copied"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["copied"]


async def never_refuses(ctx, params, library):
    if params.uri not in SERVED:
        await anyio.sleep(3600)
    return contents(params.uri, SERVED[params.uri])


async def test_the_chapters_visible_allowlist_cell_copied_fails(tmp_path):
    card = await grade_read_handler(visible_cell(tmp_path))
    failed = {(v.scenario.name, v.scenario.era) for v in card.failures()}
    # It cannot serve what it does not list, and the rule's helper it calls is not the student's to use.
    assert {("names the chapter never showed", era) for era in ("legacy", "2026-07-28")} <= failed, card.text()
    assert {(row, era) for row in REFUSAL_ROWS for era in ("legacy", "2026-07-28")} <= failed, card.text()
    assert not card.passed and card.score <= 2


async def test_the_visible_cell_with_the_rule_written_in_still_serves_too_little(tmp_path):
    card = await grade_read_handler(visible_cell(tmp_path, own_rule=True))
    failed = {v.scenario.name for v in card.failures()}
    # A dictionary of the chapter's documents: the library's texts are not its texts, and it holds more.
    assert failed == {"listed documents read", "names the chapter never showed"}, card.text()


@pytest.mark.parametrize("handler, era, row, kind, observed", [
    (no_data, "legacy", "audit's missing URI", o.WRONG_REFUSAL, "'project://course-audit-missing"),
    (own_key_error, "legacy", "traversal", o.CRASH, "your code crashed: KeyError"),
    (returns_text, "2026-07-28", "listed documents read", o.WRONG_RESULT, "the server could not answer: -32603"),
])
async def test_a_wrong_handler_fails_at_its_row_with_its_kind(handler, era, row, kind, observed):
    control = "audit's missing URI" if row in READ_ROWS else "listed documents read"
    card = await grade_read_handler(handler, only=[row, control], eras=[era])
    verdict = assert_flagged(card, row, control, observed)
    assert verdict.failure_class == kind, card.text()


async def test_a_handler_that_never_answers_is_stopped_and_the_rest_not_asked():
    card = await grade_read_handler(never_refuses, only=["listed documents read", "missing document", "traversal"],
                                    eras=["legacy"], budget=2)
    listed, missing, traversal = (card.verdict_of(n) for n in ("listed documents read", "missing document",
                                                               "traversal"))
    assert listed.passed, card.text()
    assert (traversal.failure_class, traversal.observed) == (o.HANG, "no result within 2 s (stopped)")
    assert missing.failure_class == o.HANG and missing.observed.startswith("not asked")  # asked after traversal
