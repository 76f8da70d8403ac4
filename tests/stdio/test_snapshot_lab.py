"""Snapshot bundles on real stdio servers: mixed and expired scenarios in both eras, the single
whole-bundle recovery, five wrong servers caught at their named checks, and the response cache."""
import json

import pytest

from course_lib import bundles
from course_lib.chapters import snapshot_controls, snapshot_lab
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("snapshot", "expected.json").read_text(encoding="utf-8"))
R1 = list(ORACLE["r1"])
R2 = list(ORACLE["r2"])
TAIL = ["prompt_arguments", "prompt_arguments", "unknown_revision"]


def read_uris(report) -> list[str]:
    """The URIs of the resources/read requests that reached the server, in order."""
    return [f.params["uri"] for f in report.wire.requests("resources/read")]


def assert_clean(report) -> None:
    assert (report.returncode, report.stray_stdout_lines, report.stderr_bytes) == (0, 0, 0)


async def test_mixed_latest_reads_form_a_bundle_that_never_existed(era):
    report = await snapshot_lab.run_scenario("mixed", era)
    assert report.failure is None, report.failure
    assert report.passed == ["manifest_shape", "initial_manifest", "mixed_counterexample",
                             "bundle r1", "bundle r2", "current_advanced", *TAIL]
    r1, r2 = report.bundles
    assert (r1.revision, r1.texts, r1.restarts) == ("r1", ORACLE["r1"], 0)
    assert (r2.revision, r2.texts, r2.restarts) == ("r2", ORACLE["r2"], 0)
    assert r1.instruction == "Review only this snapshot: r1"
    manifest = bundles.MANIFEST_URI
    assert read_uris(report) == [manifest, *ORACLE["latest"], *R1, manifest, *R2, ORACLE["unknown_revision_uri"]]
    assert_clean(report)


async def test_expired_restarts_once_from_a_new_manifest(era):
    report = await snapshot_lab.run_scenario("expired", era)
    assert report.failure is None, report.failure
    assert report.passed == ["manifest_shape", "initial_manifest", "expired_resource", "expired_prompt",
                             "bundle r2", "single_recovery", *TAIL]
    (bundle,) = report.bundles
    assert [[a.revision, a.outcome] for a in bundle.attempts] == ORACLE["recovery"]
    assert (bundle.revision, bundle.texts, bundle.restarts) == ("r2", ORACLE["r2"], 1)
    uris = read_uris(report)
    # One manifest to start, one to restart from; r1 is never patched with a latest/ read.
    assert uris.count(bundles.MANIFEST_URI) == 2
    assert not [u for u in uris if "/latest/" in u]
    assert [f.params["arguments"] for f in report.wire.requests("prompts/get")][:2] == [
        {"revision": "r1"}, {"revision": "r2"}]
    assert_clean(report)


async def test_retired_snapshot_is_refused_after_its_review(era):
    report = await snapshot_lab.run_scenario("retired", era)
    assert report.failure is None, report.failure
    assert [b.revision for b in report.bundles] == ["r1", "r2"]
    assert "expired_resource" in report.passed and "expired_prompt" in report.passed
    assert_clean(report)


@pytest.mark.parametrize("control", snapshot_controls.CONTROLS, ids=lambda c: c.fault)
async def test_wrong_server_is_caught_at_its_named_check(control, era):
    report = await snapshot_lab.run_scenario(control.scenario, era, fault=control.fault)
    outcome = snapshot_controls.judge(control, report)
    assert (outcome.verdict, outcome.check) == ("killed", control.check), report.failure
    assert control.message in outcome.message
    assert_clean(report)


async def test_the_argument_free_probes_pass_on_the_right_server():
    for probe, scenario, revisions in ((snapshot_lab.probe_expired, "expired", ["r2"]),
                                       (snapshot_lab.probe_mixed, "mixed", ["r1", "r2"])):
        report = await probe()
        assert (report.scenario, report.failure) == (scenario, None)
        assert [b.revision for b in report.bundles] == revisions
        assert_clean(report)


# -- the response cache (2026-07-28, server ttlMs > 0) -------------------------------------------

CACHED = dict(era="2026-07-28", ttl_ms=60000, cache_mode="use")


@pytest.mark.parametrize("scenario, check, message, uri", [
    # The second manifest and the second pass over r1 never reached the server.
    ("mixed", "current_advanced", "a new acquisition after r2 was published gave r1 (0 restarts)",
     bundles.MANIFEST_URI),
    # The restart reads the cached r1 manifest, so the one recovery cannot succeed.
    ("expired", "recovery", "the new manifest names r1 again, which the server no longer holds",
     bundles.MANIFEST_URI),
    # The second r1 read is served from the cache after the server dropped r1.
    ("retired", "expired_resource", "pinned r1/requirements answered (the r1 text) instead of failing with -31001",
     R1[0]),
], ids=["stale-manifest-hides-r2", "stale-manifest-defeats-recovery", "stale-r1-text-hides-expiry"])
async def test_response_cache_recreates_a_stale_bundle(scenario, check, message, uri):
    report = await snapshot_lab.run_scenario(scenario, **CACHED)
    assert (report.failure.check, report.failure.message) == (check, message)
    assert read_uris(report).count(uri) == 1
    assert_clean(report)


@pytest.mark.parametrize("setting", [
    dict(era="2026-07-28", ttl_ms=60000, cache_mode="refresh"),
    dict(era="2026-07-28", ttl_ms=60000, cache_mode="bypass"),
    dict(era="2026-07-28", ttl_ms=60000, cache_mode="use", cache=None),
    dict(era="legacy", ttl_ms=60000, cache_mode="use"),
], ids=["refresh", "bypass", "cache=None", "legacy-ignores-ttl"])
async def test_settings_that_avoid_the_stale_bundle(setting):
    report = await snapshot_lab.run_scenario("retired", **setting)
    assert report.failure is None, report.failure
    assert [b.revision for b in report.bundles] == ["r1", "r2"]
    assert read_uris(report).count(R1[0]) == 2
