"""Chapter 8's envelope-checker grader on real child interpreters, where the process itself is the
point: a checker that never returns is stopped at its budget. The reference, the starter and every
known-wrong checker are judged in process on their recorded replays (tests/inprocess/test_transcripts_unit.py;
the reference is recorded again in tests/stdio/test_transcripts.py); the verdicts on every other wrong
replay and checker: ``test_grading_envelope_judges_unit.py``."""
import time

import pytest

from course_lib.grading.envelope_checker import grade_envelope

pytestmark = pytest.mark.anyio


def loops_forever(line, request_id):
    while True:
        pass


async def test_a_looping_checker_is_stopped_within_its_budget():
    started = time.monotonic()
    card = await grade_envelope(loops_forever, only=["id 999"], budget=0.5, modes=["normal"])
    assert card.verdicts[0].observed == "no answer within 0.5 s", card.text()
    assert time.monotonic() - started < 60
