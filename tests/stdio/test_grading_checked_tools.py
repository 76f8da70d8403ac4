"""The exercise of 08_stateless_wire on real stdio servers, where the wire itself is the point: the
student's crash carried as -32603, the student's own error code carried to the client as it was raised,
a call stopped at its budget. The reference, the starter and every known-wrong handler (these two too)
are judged in process on their recorded replies and audit lines (tests/inprocess/test_transcripts_unit.py;
the reference is recorded again on real servers in tests/stdio/test_transcripts.py)."""
import pytest

from course_lib.grading import outcome as o
from course_lib.grading.checked_tools import grade_checked_tools
from scorecard_checks import assert_flagged

from test_grading_checked_tools_unit import protocol_error_for_input, trusts_the_shape

pytestmark = pytest.mark.anyio


def forever(name, arguments, catalog):
    while True:
        pass


@pytest.mark.parametrize("wrong, failing, control, kind, observed", [
    (trusts_the_shape, "non-object arguments", "unknown tool", o.CRASH, "your code crashed: ValueError"),
    (protocol_error_for_input, "missing required", "unknown tool", o.WRONG_REFUSAL,
     '"resize" {}: error -32602 invalid arguments'),
])
async def test_a_wrong_handler_fails_at_its_row(wrong, failing, control, kind, observed):
    card = await grade_checked_tools(wrong, only=sorted({failing, control}), eras=["2026-07-28"])
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == kind


async def test_a_handler_that_never_returns_is_stopped():
    card = await grade_checked_tools(forever, only=["valid input runs the tool"], eras=["2026-07-28"], budget=3)
    assert card.verdicts[0].failure_class == o.HANG, card.text()
