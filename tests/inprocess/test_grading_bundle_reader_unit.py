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
