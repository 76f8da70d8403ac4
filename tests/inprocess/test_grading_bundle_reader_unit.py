"""In-process: the checks of tests/stdio/test_grading_bundle_reader.py's subject that start no process."""

import pytest
from mcp import MCPError

from course_lib import bundles
from course_lib.grading.bundle_reader import grade_bundles

pytestmark = pytest.mark.anyio


def unavailable(exc: MCPError) -> bool:
    return exc.error.code == bundles.UNAVAILABLE


async def read_text(lab, uri: str, cache_mode: str = "refresh") -> str:
    return (await lab.client.read_resource(uri, cache_mode=cache_mode)).contents[0].text


async def prompt(lab, revision: str) -> None:
    await lab.client.get_prompt(bundles.PROMPT, {"revision": revision})  # -31001 (gone) raises MCPError


async def attempt(lab, manifest) -> dict:
    """The pinned reads, then the prompt of the same revision."""
    texts = {u: await read_text(lab, u) for u in manifest.uris}
    await prompt(lab, manifest.revision)
    return {"revision": manifest.revision, "texts": texts}


# -- known-wrong readers ------------------------------------------------------------------------

def restarting(name: str, restarts: float, cache_mode: str = "refresh", membership: bool = False):
    """A reader that restarts on -31001 (gone) up to ``restarts`` times; the last one propagates."""
    async def reader(lab):
        done, previous = 0, None
        while True:
            manifest = await bundles.read_manifest(lab, cache_mode)
            if membership and previous is not None:
                bundles.check_membership(manifest, previous=previous)
            try:
                return await attempt(lab, manifest)
            except MCPError as exc:
                if not unavailable(exc) or done >= restarts:
                    raise
                done, previous = done + 1, manifest
    reader.__name__ = name
    return reader
never_restarts = restarting("never_restarts", 0)  # raises on the first "unavailable"


async def starter(lab):
    raise NotImplementedError("write your bundle reader here")


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


# -- more known-wrong readers (recorded: fixtures/grading/transcripts/bundles.expected.json) ------

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


async def calls_the_library(lab):
    bundle = await bundles.acquire(lab)
    return {"revision": bundle.revision, "texts": bundle.texts}


async def verifies_with_the_library(lab):
    from course_lib.bundles import read_manifest, verify
    return await verify(lab, await read_manifest(lab))


async def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="no scenario named"):
        await grade_bundles(never_restarts, only=["nope"])


def test_no_legacy_row_hints_at_a_2026_07_28_setting():
    import json

    from course_lib.paths import fixture

    for battery in ("bundles", "capstone"):
        spec = json.loads(fixture("grading", f"{battery}.json").read_text(encoding="utf-8"))
        for row in spec["scenarios"]:
            if "legacy" in row.get("eras", spec["eras"]):
                hint = row.get("legacy_hint", row["hint"])
                assert not any(word in hint for word in ("cache_mode", "ttlMs", "2026-07-28")), (battery, row["name"])
