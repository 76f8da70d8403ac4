"""Every named check of the bundle reader refuses a real snapshot server that breaks exactly its rule.

The rows are hand-written in fixtures/snapshot/checks.json: a scenario, one ``--fault`` of the
snapshot server, and the check ``bundles.acquire`` must name. The same scenarios without a fault
are accepted, so each refusal comes from the fault alone.
"""
import json

import pytest

from course_lib import bundles, connect
from course_lib.bundles import BundleError
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio

ROWS = json.loads(fixture("snapshot", "checks.json").read_text(encoding="utf-8"))
TEXTS = json.loads(fixture("snapshot", "expected.json").read_text(encoding="utf-8"))
ORACLE = {rev: TEXTS[rev] for rev in ("r1", "r2")}


async def acquire(scenario: str, era: str, fault: str = "none", oracle: bool = True):
    """(bundle or refusal, lab) from ``acquire`` on a fresh snapshot server."""
    async with connect("snapshot", mode=scenario, era=era, args=["--fault", fault]) as lab:
        try:
            outcome = await bundles.acquire(lab, oracle=ORACLE if oracle else None)
        except BundleError as refusal:
            outcome = refusal
    assert (lab.returncode, lab.noise, lab.stderr) == (0, [], "")
    return outcome


@pytest.mark.parametrize("row", ROWS["refused"], ids=lambda r: f"{r['check']}:{r['fault']}:oracle={r['oracle']}")
async def test_a_server_that_breaks_one_rule_is_refused_at_its_name(row, era):
    refusal = await acquire(row["scenario"], era, row["fault"], row["oracle"])
    assert isinstance(refusal, BundleError), f"accepted {refusal}"
    assert refusal.check == row["check"], refusal
    assert row["message"] in refusal.message


@pytest.mark.parametrize("row", ROWS["accepted"], ids=lambda r: r["scenario"])
async def test_the_same_scenarios_without_a_fault_are_accepted(row, era):
    bundle = await acquire(row["scenario"], era)
    assert not isinstance(bundle, BundleError), bundle
    assert (bundle.revision, bundle.texts) == (row["revision"], TEXTS[row["revision"]])
    assert [[a.revision, a.outcome] for a in bundle.attempts] == row["attempts"]
