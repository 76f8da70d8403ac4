"""Facts chapter 05 states and no longer proves in its cells, each on real stdio snapshot servers
against the fixed oracle (``fixtures/snapshot/expected.json``): the chapter's own bundle reader
(its cells) agrees with ``bundles.acquire`` on every scenario and wrong server in both eras; the
checks are ``if``/``raise`` and survive ``python -O``; and the response cache's facts that
chapter 09 teaches (``refresh`` stores and ``bypass`` does not, one connection needs ``refresh``,
SDK 1.29.0 has no response cache). The scenarios in both eras and the five wrong servers are
``tests/stdio/test_snapshot_lab.py``'s."""
import json
import sys

import anyio
import nbformat
import pytest
from mcp import MCPError

from course_lib import bundles, connect, sdk129
from course_lib.chapters import snapshot_lab
from course_lib.paths import NOTEBOOKS, ROOT, fixture

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("snapshot", "expected.json").read_text(encoding="utf-8"))
R1 = list(ORACLE["r1"])
# Each server and what the chapter's one attempt must do there, written by hand: the revision it
# returns, the check that refuses it, or the revision that is gone and where.
CASES = {
    ("mixed", "none"): "r1 ok", ("expired", "none"): "r1 unavailable at r1/requirements",
    ("retired", "none"): "r1 ok",
    ("mixed", "manifest-extra-key"): "refused manifest_shape", ("mixed", "pinned-wrong-mime"): "refused pinned_read",
    ("mixed", "mixed-pinned-body"): "refused prompt_matches_reads",
    ("mixed", "prompt-names-other-revision"): "refused prompt_shape",
    ("mixed", "prompt-omits-document"): "refused prompt_matches_reads",
}


def chapter_reader() -> dict:
    """The chapter's cells ``bundle-reader-helpers`` and ``seed-bundle-reader-steps``, as it runs them."""
    nb = nbformat.read(NOTEBOOKS / "05_snapshot_bundles.ipynb", as_version=4)
    source = {c.get("id"): c.source for c in nb.cells}
    namespace = {"MCPError": MCPError, "bundles": bundles}
    exec(source["bundle-reader-helpers"], namespace)
    exec(source["seed-bundle-reader-steps"], namespace)
    return namespace


async def first_attempt(reader, lab) -> str:
    try:
        return f"{(await reader(lab))} ok"
    except bundles.SnapshotUnavailable as exc:
        return f"{exc.revision} unavailable at {exc.where}"
    except bundles.BundleError as exc:
        return f"refused {exc.check}"


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: c[1] if c[1] != "none" else c[0])
async def test_the_chapters_reader_and_the_library_agree_in_both_eras(case, era):
    cells = chapter_reader()
    scenario, fault = case

    async def mine(lab):
        return (await cells["read_bundle_once"](lab.session))["revision"]

    async def library(lab):
        bundle = await bundles.acquire(lab)
        return bundle.attempts[0].revision if bundle.attempts[0].outcome == "ok" else bundle.attempts[0]

    async with connect("snapshot", mode=scenario, era=era, args=["--fault", fault]) as lab:
        said = await first_attempt(mine, lab)
    assert said == CASES[case]
    async with connect("snapshot", mode=scenario, era=era, args=["--fault", fault]) as lab:
        try:
            bundle = await bundles.acquire(lab)
        except bundles.BundleError as exc:
            assert said == f"refused {exc.check}"
        else:
            first = bundle.attempts[0]
            assert said == f"{first.revision} {first.outcome}"
            assert bundle.revision == ("r2" if scenario == "expired" else "r1")  # only acquire restarts


SCRIPT = '''
import sys, anyio
from course_lib import bundles, connect
from course_lib.chapters import snapshot_lab

async def main():
    r1, asserted, explicit = snapshot_lab.load_oracle()["r1"], "passed", "passed"
    async with connect("snapshot", mode="mixed", args=["--fault", "mixed-pinned-body"]) as lab:
        texts = await bundles.read_pinned(lab, await bundles.read_manifest(lab))
    try:
        assert texts == r1, "snapshot_oracle"
    except AssertionError as exc:
        asserted = f"AssertionError({exc})"
    try:
        bundles.check_oracle("r1", texts, {"r1": r1})
    except bundles.BundleError as exc:
        explicit = f"BundleError({exc.check})"
    print(sys.flags.optimize, asserted, explicit, sep="|")
anyio.run(main)
'''


async def test_the_bundle_checks_survive_python_O_where_an_assert_does_not():
    seen = []
    for flags in ([], ["-O"]):
        done = await anyio.run_process([sys.executable, *flags, "-c", SCRIPT], cwd=ROOT)
        seen.append(done.stdout.decode().strip())
    assert seen == ["0|AssertionError(snapshot_oracle)|BundleError(snapshot_oracle)",
                    "1|passed|BundleError(snapshot_oracle)"]


async def test_refresh_stores_the_manifest_and_bypass_does_not():
    from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore

    store = InMemoryResponseCacheStore()
    config = CacheConfig(store=store, partition="reviewer", target_id="snapshot")
    rows = []
    async with connect("snapshot", mode="mixed", era="2026-07-28", args=["--ttl-ms", "60000"], cache=config) as lab:
        for mode in ("bypass", "refresh", "use"):
            sent = len(lab.wire.requests("resources/read"))
            await lab.client.read_resource(bundles.MANIFEST_URI, cache_mode=mode)
            held = [k for k in store._entries if k.params_key == bundles.MANIFEST_URI]
            rows.append((mode, len(lab.wire.requests("resources/read")) - sent, len(held)))
    assert rows == [("bypass", 1, 0), ("refresh", 1, 1), ("use", 0, 1)]


async def test_one_connection_recovers_only_with_refresh():
    said = []
    async with connect("snapshot", mode="expired", era="2026-07-28", args=["--ttl-ms", "60000"]) as lab:
        for mode in ("use", "use", "refresh"):
            try:
                bundle = await bundles.acquire(lab, cache_mode=mode)
                said.append(f"{bundle.revision} ok")
            except bundles.BundleError as exc:
                said.append(f"refused {exc.check}")
    assert said == ["refused recovery", "refused recovery", "r2 ok"]


async def test_sdk_1_29_0_has_no_response_cache_and_2_3_0_answers_from_it():
    steps = [bundles.MANIFEST_URI, *R1, "prompt r1", R1[0]]
    prompt = {"op": "get_prompt", "name": bundles.PROMPT, "arguments": {"revision": "r1"}}
    ops = [prompt if s == "prompt r1" else {"op": "read_resource", "uri": s} for s in steps]
    old = (await sdk129.client("snapshot", ops, mode="retired", args=["--ttl-ms", "60000"]))[-2]
    assert (old["error"]["code"], old["error"]["message"]) == (ORACLE["unavailable"]["code"],
                                                               ORACLE["unavailable"]["message"])
    async with connect("snapshot", mode="retired", era="2026-07-28", args=["--ttl-ms", "60000"]) as lab:
        for s in steps[:-2]:
            await lab.client.read_resource(s)
        await lab.client.get_prompt(bundles.PROMPT, {"revision": "r1"})
        again = (await lab.client.read_resource(R1[0])).contents[0].text
    assert again == ORACLE["r1"][R1[0]]
    assert snapshot_lab.read_count(lab.wire, ORACLE["r1"]) == 1  # the server saw one of the two reads
