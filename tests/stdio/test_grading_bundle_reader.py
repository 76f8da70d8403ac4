"""Chapter 05's bundle grader: a correct reader passes, one known-wrong reader per failure kind fails at
its scenario (the judges' decisions on every other wrong reader: ``test_grading_bundle_judges_unit.py``).

The reference solution is graded by its notebook's check cell (nbval), not again here."""
import math

import pytest
from mcp import MCPError

from course_lib import bundles
from course_lib.grading.bundle_reader import grade_bundles

from test_grading_bundle_reader_unit import attempt, prompt, read_text, restarting, unavailable

pytestmark = pytest.mark.anyio

MIXED = "mixed: read before the edit"
PUBLISHED = "before the manifest: r2 published"
RETIRED = "retired: after a review of r1"
EXPIRED = "expired: r1 dropped after its manifest"
CHANGED = "changed after the manifest"
BETWEEN = "expired between the pinned reads"
CHANGED_BETWEEN = "changed between the pinned reads"
BEFORE_PROMPT = "expired between the reads and the prompt"
AFTER_PROMPT = "expired after the prompt"
CACHED = "expired, manifest with ttlMs"
UNAVAILABLE = "recovery also unavailable"
INCOMPLETE = "recovery manifest incomplete"
ALL = [MIXED, PUBLISHED, RETIRED, EXPIRED, CHANGED, BETWEEN, CHANGED_BETWEEN, BEFORE_PROMPT, AFTER_PROMPT,
       CACHED, UNAVAILABLE, INCOMPLETE]


# -- a correct reader in another style: a bounded loop, and it takes the prompt too -------------

async def two_attempts_with_prompt(lab):
    previous = None
    for _ in range(2):
        manifest = await bundles.read_manifest(lab)
        if previous is not None:
            bundles.check_membership(manifest, previous=previous)
        try:
            texts = {}
            for uri in manifest.uris:
                texts[uri] = (await lab.client.read_resource(uri, cache_mode="bypass")).contents[0].text
            await lab.client.get_prompt(bundles.PROMPT, {"revision": manifest.revision})
            return bundles.Bundle(manifest.revision, texts, f"Review only this snapshot: {manifest.revision}")
        except MCPError as exc:
            if not unavailable(exc):
                raise
        previous = manifest
    raise bundles.BundleError("recovery", f"{previous.revision} unavailable as well; no second restart")


restarts_forever = restarting("restarts_forever", math.inf)
never_restarts = restarting("never_restarts", 0)  # raises on the first "unavailable"
skips_membership = restarting("skips_membership", 1)  # one restart, but no check of the new manifest
trusts_the_cache = restarting("trusts_the_cache", 1, "use", membership=True)  # manifests from the response cache


async def returns_partial(lab):
    """Stops at the first "unavailable" and returns the texts read so far."""
    manifest = await bundles.read_manifest(lab)
    texts = {}
    for uri in manifest.uris:
        try:
            texts[uri] = await read_text(lab, uri)
        except MCPError:
            break
    try:
        await prompt(lab, manifest.revision)
    except MCPError:
        pass
    return {"revision": manifest.revision, "texts": texts}


async def wrong_check(lab):
    """Restarts once, but names every refusal after it ``recovery``."""
    first = await bundles.read_manifest(lab)
    try:
        return await attempt(lab, first)
    except MCPError:
        pass
    second = await bundles.read_manifest(lab)
    if second.documents != first.documents:
        raise bundles.BundleError("recovery", "the new manifest covers other documents")
    return await attempt(lab, second)


# -- tests -------------------------------------------------------------------------------------

async def test_untouched_starter_scores_zero():
    async def my_acquire(lab):
        raise NotImplementedError("write your bundle reader here")

    card = await grade_bundles(my_acquire)
    assert not any(v.passed for v in card.verdicts), card.text()
    assert card.text().endswith("0/24 scenarios pass")
    assert card.failures()[0].observed == "your code crashed: NotImplementedError: write your bundle reader here"


async def test_a_correct_reader_in_another_style_passes_everything():
    card = await grade_bundles(two_attempts_with_prompt)
    assert card.passed, card.text()
    assert len(card.verdicts) == 24  # 12 scenarios x 2 eras
    assert {v.scenario.era for v in card.verdicts} == {"legacy", "2026-07-28"}
    assert [v.scenario.name for v in card.verdicts[::2]] == ALL
    assert card.text().endswith("24/24 scenarios pass — well done.")


async def calls_the_library(lab):
    bundle = await bundles.acquire(lab)
    return {"revision": bundle.revision, "texts": bundle.texts}


async def verifies_with_the_library(lab):
    from course_lib.bundles import read_manifest, verify
    return await verify(lab, await read_manifest(lab))


async def test_the_chapters_own_reader_is_unavailable_to_the_exercise():
    for cheat in (bundles.acquire, calls_the_library, verifies_with_the_library):
        card = await grade_bundles(cheat, only=[MIXED, EXPIRED], eras=["legacy"])
        assert card.score == 0, card.text()
        assert "unavailable in this exercise" in card.verdict_of(MIXED).observed


@pytest.mark.parametrize("solution, failing, passing, observed", [
    (returns_partial, [BETWEEN], [MIXED, CHANGED_BETWEEN],
     "the server saw 1 manifest read; returned bundle r1 (r1/design missing)"),
    (never_restarts, [BETWEEN], [CHANGED, CHANGED_BETWEEN, AFTER_PROMPT],
     "the server saw 1 manifest read; your code crashed: MCPError -31001: Snapshot unavailable"),
    (skips_membership, [INCOMPLETE], [EXPIRED, BETWEEN],
     "returned bundle r2 (r2/design missing) instead of BundleError(manifest_membership)"),
    (wrong_check, [INCOMPLETE], [EXPIRED],
     "refused: BundleError(recovery): the new manifest covers other documents"),
])
async def test_wrong_readers_are_flagged_at_their_scenario(solution, failing, passing, observed):
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


async def test_a_cached_manifest_fails_only_where_the_server_sends_ttl():
    card = await grade_bundles(trusts_the_cache, only=[EXPIRED, CACHED])
    assert [(v.scenario.name, v.scenario.era) for v in card.failures()] == [(CACHED, "2026-07-28")], card.text()
    assert card.verdict_of(CACHED, "2026-07-28").observed.startswith(
        "the server saw 1 manifest read; your code crashed: MCPError -31001")


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
