"""Output-schema cache pitfalls, the candidate refresh and its negative controls, on real stdio servers.

Expectations come from the hand-written oracles in fixtures/schema/; nothing here is derived
from a run of the code under test.
"""
import json

import pytest

from course_lib import CatalogError, candidate, connect, walk
from course_lib.chapters import negative_controls as negative, schema_lab, schema_oracles
from course_lib.chapters.negative_controls import CheckFailed
from course_lib.labs import pid_alive as alive

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scenario", schema_lab.SEED_SCENARIOS)
async def test_seed_scenario_matches_both_oracles(era, scenario):
    result = await schema_lab.run(scenario, era)
    schema_oracles.check(result)  # case oracle, exact audits, every finalizer ran
    assert set(result.audits) == set(schema_oracles.expected_audits(scenario, era))
    for lab in result.labs.values():
        assert lab.returncode is not None and not alive(lab.pid)
    if scenario == "in_place_integer":  # the eras differ on the wire, not in what the server handled
        handshake = ["initialize", "notifications/initialized"] if era == "legacy" else []
        assert result.labs["server"].wire.methods() == handshake + ["tools/list"] * 3 + ["tools/call"]


@pytest.mark.parametrize("scenario", schema_lab.SDK2_SCENARIOS)
async def test_sdk2_scenario_matches_both_oracles(era, scenario):
    result = await schema_lab.run(scenario, era)
    schema_oracles.check(result)  # case oracle, exact audits, every finalizer ran
    assert set(result.audits) == set(schema_oracles.expected_audits(scenario, era))
    assert all(audit["closed"] is True for audit in result.audits.values())
    for lab in result.labs.values():
        assert lab.returncode == 0 and not alive(lab.pid)


async def test_implicit_tools_list_makes_the_exact_audit_fail(era):
    result = await schema_lab.run("page2_before_listing", era)
    # What the lab's own code sends: one call and nothing else (written by hand).
    naive = {"server": {"requests": [{"method": "tools/call", "name": "alpha"}], "closed": True}}
    with pytest.raises(CheckFailed) as caught:
        schema_oracles.compare_audits(naive, result.audits)
    assert caught.value.check == "audit_oracle"
    assert caught.value.message == "server: extra request #2: tools/list cursor=None"
    wire = result.labs["server"].wire
    assert [f.method for f in wire.requests() if f.method != "initialize"] == ["tools/call", "tools/list"]


async def test_failed_candidate_is_closed_before_the_error_and_active_untouched(era):
    async with connect("schema", fixture=schema_oracles.fixture("active"), era=era, **schema_lab.BUDGET) as active:
        await walk(active)
        frames = len(active.wire)
        refresh = candidate("schema", fixture=schema_oracles.fixture("candidate"), era=era, **schema_lab.BUDGET)
        with pytest.raises(CatalogError) as caught:
            async with refresh:
                pytest.fail("a rejected candidate must not yield")
        # Checked where the error arrives: the candidate is already gone.
        assert caught.value.reason == "duplicate_name"
        assert refresh.closed and not alive(refresh.lab.pid)
        assert json.loads(refresh.lab.file("audit.json"))["closed"] is True
        assert len(active.wire) == frames
        assert (await schema_lab.call_outcome(active)) == {"status": "accepted", "content": {"value": "old"}}
    assert json.loads(active.file("audit.json"))["requests"] == [
        {"method": "tools/list", "cursor": None}, {"method": "tools/call", "name": "alpha"}]


async def test_caller_exception_propagates_after_cleanup(era):
    async with connect("schema", fixture=schema_oracles.fixture("active"), era=era, **schema_lab.BUDGET) as active:
        await walk(active)
        frames = len(active.wire)
        refresh = candidate("schema", fixture=schema_oracles.fixture("candidate_success"), era=era, **schema_lab.BUDGET)
        with pytest.raises(KeyError, match="caller bug"):
            async with refresh as ready:
                assert ready.catalog.names == ["alpha", "beta"] and alive(ready.lab.pid)
                raise KeyError("caller bug")
        assert refresh.closed and not alive(refresh.lab.pid)
        assert json.loads(refresh.lab.file("audit.json")) == {
            "requests": [{"method": "tools/list", "cursor": None}, {"method": "tools/list", "cursor": "next"}],
            "closed": True}
        assert len(active.wire) == frames


async def test_candidate_budget_failure_and_single_use():
    refresh = candidate("schema", fixture=schema_oracles.fixture("candidate_success"), max_pages=1,
                        **schema_lab.BUDGET)
    with pytest.raises(CatalogError) as caught:
        async with refresh:
            pytest.fail("an incomplete candidate must not yield")
    assert caught.value.reason == "page_budget" and refresh.closed
    assert json.loads(refresh.lab.file("audit.json"))["requests"] == [{"method": "tools/list", "cursor": None}]
    with pytest.raises(RuntimeError, match="entered once"):
        async with refresh:
            pass


async def test_probes_pass_on_the_real_code():
    # probe_in_place and probe_accepted_candidate are the legacy seed scenarios tested above.
    assert await schema_lab.probe_failed_candidate() == "duplicate_name"
    refresh = await schema_lab.probe_caller_failure()
    assert refresh.closed and refresh.lab.returncode == 0 and not alive(refresh.lab.pid)


def test_baseline_probe_passes_in_a_copy():
    assert negative.run_baseline("course_lib.chapters.schema_lab:probe_failed_candidate").verdict == "passed"
