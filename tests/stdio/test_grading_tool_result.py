"""The exercise of 03_schema_cache on real stdio servers, where the wire itself is the point: a JSON-RPC
error where a result was due, the student's crash carried as -32603, a call stopped at its budget.
The reference, the starter and every known-wrong function are judged in process on their recorded
reply frames (tests/inprocess/test_transcripts_unit.py; the reference is recorded again on real
servers in tests/stdio/test_transcripts.py)."""
import time

import pytest

from course_lib.grading.outcome import CRASH, HANG, WRONG_REFUSAL
from course_lib.grading.tool_result import grade_tool_result
from scorecard_checks import assert_flagged

from test_grading_tool_result_unit import crashes, protocol_error

pytestmark = pytest.mark.anyio
LEGACY = ["legacy"]


def hangs(tool, value):
    time.sleep(600)


@pytest.mark.parametrize("wrong, failing, control, kind, observed", [
    (protocol_error, "required key missing", "integer, as declared", WRONG_REFUSAL, "answered the JSON-RPC error"),
    (crashes, "string, as declared", "string, as declared", CRASH, "your code crashed: KeyError"),
])
async def test_a_known_wrong_function_fails_at_its_row(wrong, failing, control, kind, observed):
    card = await grade_tool_result(wrong, eras=LEGACY)
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == kind and not card.passed


async def test_a_function_that_never_returns_is_stopped_and_the_rest_not_asked():
    card = await grade_tool_result(hangs, eras=LEGACY, budget=2)
    first, *rest = card.verdicts
    assert first.failure_class == HANG and first.observed.startswith("no result within 2 s")
    assert rest and all(v.failure_class == HANG and v.observed.startswith("not asked") for v in rest)
