"""The capstone grader on real servers: a correct client passes every row, the calls stopped at their
budget; the student's own server under the audit: a crash its harness logged, and a function whose source
cannot be read; the student's functions of earlier chapters come from their own copy of those chapters.

The reference client and server are graded by the notebook's check cell (nbval). The client's rows (refresh,
read, bundle) and the audit rows of the reference, of a correct client in another style, of the starter, of
each known-wrong client and of each known-wrong page function are judged in process on their recordings
(tests/inprocess/test_transcripts_unit.py, fixtures/grading/transcripts/capstone.json; the reference is
recorded again on real servers in tests/stdio/test_transcripts.py); the judges' decisions on every other
wrong answer: ``test_grading_capstone_judges_unit.py``."""

import nbformat
import pytest

from course_lib.grading import outcome as o
from course_lib.grading.capstone import grade_capstone
from course_lib.grading.earlier import loaded, yours
from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import tags

from test_grading_capstone_unit import SessionClient, page_crashing

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

NO_SOURCE = {}
exec("def my_page(cursor, catalog):\n    return [], None\n", NO_SOURCE)  # no file: its source cannot be read
NO_SOURCE = NO_SOURCE["my_page"]


@pytest.mark.parametrize("page, observed", [
    (page_crashing, "list.walk[tools] FAIL: page 1 refused: -32603 crashed: KeyError"),  # logged by its harness
    (NO_SOURCE, "your code crashed: SourceError"),  # no file: nothing to record
])
async def test_capstone_fails_a_crashing_server_at_its_audit_row(page, observed):
    card = await grade_capstone(SessionClient, page, only=[AUDIT], eras=["legacy"])
    verdict = card.verdict_of(AUDIT)
    assert not verdict.passed and verdict.failure_class == o.CRASH, card.text()
    assert verdict.observed.startswith(observed), verdict.observed
    assert verdict.scenario.hint, card.text()


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
