"""The capstone grader on real servers: a correct client passes every row, the calls stopped at their
budget; the student's own server under the audit: known-wrong page functions fail its row, one per failure
kind; the student's functions of earlier chapters come from their own copy of those chapters.

The reference client and server are graded by the notebook's check cell (nbval). The client's rows (refresh,
read, bundle) of the reference, of the correct client in another style, of the starter and of each known-wrong
client are judged in process on their recordings (tests/inprocess/test_transcripts_unit.py,
fixtures/grading/transcripts/capstone.json; the reference is recorded again on real servers in
tests/stdio/test_transcripts.py); the judges' decisions on every other wrong answer:
``test_grading_capstone_judges_unit.py``."""

import nbformat
import pytest

from course_lib.grading import outcome as o
from course_lib.grading.capstone import grade_capstone
from course_lib.grading.earlier import loaded, yours
from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import tags

from test_grading_capstone_unit import SessionClient

pytestmark = pytest.mark.anyio


# -- the capstone's client: a correct one, and the calls stopped at their budget ----------------------

COMBINED = 'refresh: "" and an empty page'
ENDLESS = "refresh: endless catalog"
READ = "read: allowed and hostile URIs"
CAPSTONE = [COMBINED, "refresh: conflicting duplicate", ENDLESS, "refresh: a stale cached page 1", READ,
            "bundle: r1 expires mid-read", "bundle: r2 unavailable too"]
AUDIT = "audit: my_page (chapter 06)"


def variant(base, **methods):
    """``base`` with some methods replaced: one wrong client per rule."""
    return type(f"{base.__name__}_" + "_".join(methods), (base,), methods)


async def refresh_unbounded(self, open_candidate):
    names, cursor = [], None
    async with open_candidate() as fresh:
        while True:
            page = await fresh.client.list_tools(cursor=cursor)
            names += [t.name for t in page.tools]
            if page.next_cursor is None:
                return names
            cursor = page.next_cursor


async def test_capstone_passes_a_correct_client_in_another_style():
    """Every row of the client's check, in both eras (its refresh and bundle rows are recorded too)."""
    card = await grade_capstone(SessionClient, only=CAPSTONE)
    assert card.passed, card.text()


async def test_capstone_stops_an_unbounded_refresh_within_its_budget():
    card = await grade_capstone(variant(SessionClient, refresh=refresh_unbounded), only=[ENDLESS, COMBINED],
                                eras=["legacy"], budget=3)
    assert card.verdict_of(COMBINED).passed, card.text()
    assert card.verdict_of(ENDLESS).observed == "no result within 3 s (stopped)"


def read_spinning(self, uri):
    """A synchronous check that never returns: it must be stopped, not only reported."""
    while True:
        pass


async def test_capstone_stops_a_synchronous_loop_within_its_budget():
    import time

    started = time.monotonic()
    card = await grade_capstone(variant(SessionClient, read=read_spinning), only=[READ], eras=["legacy"], budget=2)
    assert time.monotonic() - started < 30
    verdict = card.verdict_of(READ)
    assert verdict.observed.startswith("docs/requirements: no result within 2 s"), verdict.observed
    assert "(and 12 more)" in verdict.observed  # the other URIs were not asked once one call hung


# -- the student's server, under the audit --------------------------------------------------------

def page_repeating(cursor, catalog):
    """Page 2 hands out the cursor that named it: a client that follows it loops."""
    size = catalog.page_size
    return (catalog.names[:size], "again") if cursor is None else (catalog.names[size:2 * size], "again")


def page_crashing(cursor, catalog):
    return catalog.names[:catalog.page_size], {"offset": 2}[cursor]  # KeyError on page 1


def page_unsigned(cursor, catalog):
    """Plain offsets: the audit edits one (2 made 3) and is served that page, a MUST of the course that fails."""
    start = int(cursor) if cursor and cursor.isdigit() else 0
    end = start + catalog.page_size
    return catalog.names[start:end], str(end) if end < len(catalog.names) else None


def page_lenient(cursor, catalog):
    """Signed offsets, but any cursor that is not one is read as page 1: a forged or an edited cursor is
    served page 1, a WARN (the spec's SHOULD), not a MUST that fails."""
    import hashlib
    import hmac

    def sign(offset: int) -> str:
        return f"{offset}.{hmac.new(catalog.key, str(offset).encode(), hashlib.sha256).hexdigest()[:16]}"

    head = (cursor or "").partition(".")[0]
    start = int(head) if head.isdigit() and cursor == sign(int(head)) else 0
    end = start + catalog.page_size
    return catalog.names[start:end], sign(end) if end < len(catalog.names) else None


NO_SOURCE = {}
exec("def my_page(cursor, catalog):\n    return [], None\n", NO_SOURCE)  # no file: its source cannot be read
NO_SOURCE = NO_SOURCE["my_page"]


@pytest.mark.parametrize("page, kind, observed", [
    (page_repeating, o.WRONG_RESULT, "list.walk[tools] FAIL: cursor_repeated: page 2 sent cursor 'again' again"),
    (page_crashing, o.CRASH, "list.walk[tools] FAIL: page 1 refused: -32603 crashed: KeyError"),
    (page_unsigned, o.WRONG_RESULT, "cursor.tampered[tools] FAIL: the cursor's number 2 changed to 3: served a page"),
    (NO_SOURCE, o.CRASH, "your code crashed: SourceError"),
])
async def test_capstone_fails_a_wrong_server_at_its_audit_row(page, kind, observed):
    card = await grade_capstone(SessionClient, page, only=[AUDIT], eras=["legacy"])
    verdict = card.verdict_of(AUDIT)
    assert not verdict.passed and verdict.failure_class == kind, card.text()
    assert verdict.observed.startswith(observed), verdict.observed
    assert verdict.scenario.hint, card.text()


async def test_capstone_audit_row_passes_a_server_with_only_warnings():
    card = await grade_capstone(SessionClient, page_lenient, only=[AUDIT])
    assert card.passed, card.text()
    warned = [line for line in card.audits["my_page"].lines if line.verdict == "WARN"]
    assert {line.check for line in warned} >= {"cursor.forged"}, card.audits["my_page"].table()
    assert "no MUST line fails" in card.text()


# -- the student's functions of earlier chapters --------------------------------------------------

WALK_WITH_THE_LIBRARY = """async def my_walk(session, max_pages=32):
    return (await walk(session)).names
"""


def copy_with_exercise(folder, chapter: str, source: str):
    """A student's copy of ``chapter`` whose exercise cell holds ``source``."""
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    next(c for c in nb.cells if "exercise" in tags(c)).source = source
    nbformat.write(nb, folder / f"{chapter}.ipynb")


async def test_capstone_composes_the_students_own_walker_with_walk_unavailable(tmp_path, monkeypatch):
    copy_with_exercise(tmp_path, "01_pagination", "from course_lib import walk\n\n" + WALK_WITH_THE_LIBRARY)
    monkeypatch.chdir(tmp_path)  # the kernel of a student copy runs in its folder
    my_walk = yours("01_pagination", "my_walk")
    assert [row[2] for row in loaded(my_walk).rows] == ["yours"]

    class Composed(SessionClient):
        async def refresh(self, open_candidate):
            async with open_candidate() as fresh:
                return await my_walk(fresh.session)

    card = await grade_capstone(Composed, only=[COMBINED], eras=["legacy"])
    assert "course_lib.walker.walk is unavailable" in card.verdict_of(COMBINED).observed, card.text()
