"""The exercise of 09_stateless_cache: ``my_sealer(key) -> (seal, unseal)`` as the codec of a real
``modern`` server. One known-wrong sealer per kind of failure fails at its named row, judged on the
wire (a missing refusal, the student's crash carried as -32603, a wrong refusal code), and one that
never returns is stopped. The reference, the starter, every wrong sealer on every row and the
functions the chapter shows are judged on transcripts recorded from real runs
(``test_transcripts_unit.py``, ``make record``)."""
import pytest

from course_lib.grading import outcome as o
from course_lib.grading.sealed_state import grade_sealed_state
from scorecard_checks import assert_flagged

from test_grading_sealed_state_unit import decodes_first, plain, wrong_code

pytestmark = pytest.mark.anyio


def forever(key):
    def seal(state, call):
        while True:
            pass
    return seal, seal


# -- real servers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("wrong, failing, control, kind, observed", [
    (plain, "forged price", "honest large order", o.MISSING_REFUSAL,
     "the server answered 'provisioned large in eu-west, charged 0 credits'"),
    (decodes_first, 'a state never issued: "x"', "a state cut short", o.CRASH, "your code crashed: ValueError"),
    (wrong_code, "forged price", "honest small order", o.WRONG_REFUSAL, "the server answered MCPError -32600"),
])
async def test_a_wrong_sealer_fails_at_its_row(wrong, failing, control, kind, observed):
    card = await grade_sealed_state(wrong, only=sorted({failing, control}))
    verdict = assert_flagged(card, failing, control, observed)
    assert verdict.failure_class == kind
    if kind == o.MISSING_REFUSAL:  # the hint names the state that was accepted, as it was sent
        states = [f.message["params"].get("requestState") for f in verdict.outcome.sent if f.method == "tools/call"]
        shown = verdict.hint.split("'")[1].removesuffix("…")
        assert len(shown) >= 10 and any(isinstance(t, str) and t.startswith(shown) for t in states), verdict.hint


async def test_a_sealer_that_never_returns_is_stopped():
    card = await grade_sealed_state(forever, only=["honest small order"], budget=3)
    assert card.verdicts[0].failure_class == o.HANG, card.text()
