"""Chapter 05's bundle grader on real snapshot servers: a reader that never restarts is flagged with the
manifest reads the server saw, the library's reader is unavailable, and what restarts forever or spins
is stopped. The starter, the reference, a correct reader of another style, the other known-wrong
readers and the functions the chapter shows are judged on transcripts recorded from real runs
(``test_transcripts_unit.py``, ``make record``); the judges' decisions on hand-made outcomes:
``test_grading_bundle_judges_unit.py``."""
import math

import pytest

from course_lib import bundles
from course_lib.grading.bundle_reader import grade_bundles

from test_grading_bundle_reader_unit import never_restarts, restarting

pytestmark = pytest.mark.anyio

MIXED = "mixed: read before the edit"
EXPIRED = "expired: r1 dropped after its manifest"
CHANGED = "changed after the manifest"
BETWEEN = "expired between the pinned reads"
CHANGED_BETWEEN = "changed between the pinned reads"
AFTER_PROMPT = "expired after the prompt"
UNAVAILABLE = "recovery also unavailable"

restarts_forever = restarting("restarts_forever", math.inf)


# -- tests -------------------------------------------------------------------------------------

async def test_the_chapters_own_reader_is_unavailable_to_the_exercise():
    # (readers that call it or bundles.verify: test_transcripts_unit.py, on their recorded runs)
    card = await grade_bundles(bundles.acquire, only=[MIXED, EXPIRED], eras=["legacy"])
    assert card.score == 0, card.text()
    assert "unavailable in this exercise" in card.verdict_of(MIXED).observed


async def test_a_reader_that_never_restarts_is_flagged_with_the_manifest_reads_the_server_saw():
    """One wrong reader on the real servers (the manifest reads are counted on the lab's wire); the
    others, on every row, are judged on their recorded transcripts (test_transcripts_unit.py)."""
    solution, failing, passing, observed = (
        never_restarts, [BETWEEN], [CHANGED, CHANGED_BETWEEN, AFTER_PROMPT],
        "the server saw 1 manifest read; your code crashed: MCPError -31001: Snapshot unavailable")
    card = await grade_bundles(solution, only=failing + passing, eras=["legacy"])
    first = card.verdict_of(failing[0])
    assert first.observed.startswith(observed), first.observed
    assert [v.scenario.name for v in card.failures()] == failing, card.text()
    assert all(v.scenario.hint for v in card.failures())
    assert "FAIL" in card.text() and "expected" in card.text()


async def test_a_reader_that_restarts_forever_is_stopped_within_the_budget():
    # The scenario where it loops runs under a short budget; the one it passes, under the battery's.
    passes = await grade_bundles(restarts_forever, only=[EXPIRED], eras=["legacy"])
    assert passes.verdict_of(EXPIRED).passed, passes.text()
    loops = await grade_bundles(restarts_forever, only=[UNAVAILABLE], eras=["legacy"], budget=3)
    verdict = loops.verdict_of(UNAVAILABLE)
    assert not verdict.passed
    manifests, outcome = verdict.observed.split("; ")
    assert int(manifests.removeprefix("the server saw ").removesuffix(" manifest reads")) > 2
    assert outcome == "no result within 3 s (stopped)"


def spinning_reader(lab):
    """A synchronous reader that never returns: it must be stopped, not only reported."""
    while True:
        pass


async def test_a_synchronous_loop_is_stopped_within_the_budget():
    import time

    started = time.monotonic()
    card = await grade_bundles(spinning_reader, only=[MIXED], eras=["legacy"], budget=2)
    assert card.verdict_of(MIXED).observed == "no result within 2 s (stopped)"
    assert time.monotonic() - started < 30
