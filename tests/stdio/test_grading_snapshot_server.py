"""The server exercise of 05_snapshot_bundles on real stdio servers, where the wire itself is the point:
the student's own error code carried to the client as it was raised, the student's crash carried as
-32603, a read stopped at its budget. The reference, the starter and every known-wrong read function
(these two too) are judged in process on their recorded replies (tests/inprocess/test_transcripts_unit.py;
the reference is recorded again on real servers in tests/stdio/test_transcripts.py)."""
import pytest

from course_lib.grading.core import CRASH, HANG, WRONG_REFUSAL
from course_lib.grading.snapshot_server import grade_snapshot_server

from test_grading_snapshot_server_unit import GONE, unlooked, wrong_code

pytestmark = pytest.mark.anyio


def forever(store, uri):
    while True:
        pass


async def test_the_wrong_error_code_is_a_wrong_refusal():
    card = await grade_snapshot_server(wrong_code, eras=["legacy"])
    assert {v.scenario.name for v in card.failures()} == {"URIs it never served", "r1 dropped",
                                                          "a revision it never had"}, card.text()
    verdict = card.verdict_of("r1 dropped")
    assert verdict.failure_class == WRONG_REFUSAL
    assert verdict.observed == f"r1/requirements: answered MCPError -32602: {GONE}, not -31001 {GONE!r}"


async def test_a_function_that_raises_its_own_error_is_a_crash():
    card = await grade_snapshot_server(unlooked, eras=["legacy"])
    assert {v.scenario.name for v in card.failures()} == {"URIs it never served", "r1 dropped",
                                                          "a revision it never had"}, card.text()
    assert {v.failure_class for v in card.failures()} == {CRASH}
    assert card.verdict_of("r1 dropped").observed == "your code crashed: KeyError: 'r1'"


async def test_a_read_that_never_returns_is_stopped_at_the_budget():
    card = await grade_snapshot_server(forever, only=["r1 pinned, r2 current", "r2 pinned"], eras=["legacy"],
                                       budget=2)
    assert [v.failure_class for v in card.verdicts] == [HANG, HANG], card.text()
    assert card.verdict_of("r2 pinned").observed == "not asked: an earlier read got no answer"
