"""Output-schema cache pitfalls, the candidate refresh and its negative controls, on real stdio servers.

Expectations come from the hand-written oracles in fixtures/schema/; nothing here is derived
from a run of the code under test.
"""
import json

import pytest

from course_lib import CatalogError, candidate, connect, walk
from course_lib.chapters import negative_controls as negative, schema_lab
from course_lib.chapters.negative_controls import Binding, CheckFailed, Mutant
from course_lib.labs import pid_alive as alive

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scenario", schema_lab.SEED_SCENARIOS)
async def test_seed_scenario_matches_both_oracles(era, scenario):
    result = await schema_lab.run(scenario, era)
    schema_lab.check(result)  # case oracle, exact audits, every finalizer ran
    assert set(result.audits) == set(schema_lab.expected_audits(scenario, era))
    for lab in result.labs.values():
        assert lab.returncode is not None and not alive(lab.pid)
    if scenario == "in_place_integer":  # the eras differ on the wire, not in what the server handled
        handshake = ["initialize", "notifications/initialized"] if era == "legacy" else []
        assert result.labs["server"].wire.methods() == handshake + ["tools/list"] * 3 + ["tools/call"]


@pytest.mark.parametrize("scenario", schema_lab.SDK2_SCENARIOS)
async def test_sdk2_scenario_matches_both_oracles(era, scenario):
    result = await schema_lab.run(scenario, era)
    schema_lab.check(result)  # case oracle, exact audits, every finalizer ran
    assert set(result.audits) == set(schema_lab.expected_audits(scenario, era))
    assert all(audit["closed"] is True for audit in result.audits.values())
    for lab in result.labs.values():
        assert lab.returncode == 0 and not alive(lab.pid)


async def test_implicit_tools_list_makes_the_exact_audit_fail(era):
    result = await schema_lab.run("page2_before_listing", era)
    # What the lab's own code sends: one call and nothing else (written by hand).
    naive = {"server": {"requests": [{"method": "tools/call", "name": "alpha"}], "closed": True}}
    with pytest.raises(CheckFailed) as caught:
        schema_lab.compare_audits(naive, result.audits)
    assert caught.value.check == "audit_oracle"
    assert caught.value.message == "server: extra request #2: tools/list cursor=None"
    wire = result.labs["server"].wire
    assert [f.method for f in wire.requests() if f.method != "initialize"] == ["tools/call", "tools/list"]


def test_audit_differences_name_every_change():
    a = {"requests": [{"method": "tools/list", "cursor": None}, {"method": "tools/call", "name": "alpha"}],
         "closed": True}
    b = {"requests": [{"method": "tools/call", "name": "alpha"}], "closed": False}
    assert schema_lab.audit_differences(a, a) == []
    assert schema_lab.audit_differences(a, b) == ["missing request #1: tools/list cursor=None",
                                                   "closed is False, expected True"]
    assert schema_lab.audit_differences(b | {"closed": True}, a) == ["extra request #1: tools/list cursor=None"]


async def test_failed_candidate_is_closed_before_the_error_and_active_untouched(era):
    async with connect("schema", fixture=schema_lab.fixture("active"), era=era, **schema_lab.BUDGET) as active:
        await walk(active)
        frames = len(active.wire)
        refresh = candidate("schema", fixture=schema_lab.fixture("candidate"), era=era, **schema_lab.BUDGET)
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
    async with connect("schema", fixture=schema_lab.fixture("active"), era=era, **schema_lab.BUDGET) as active:
        await walk(active)
        frames = len(active.wire)
        refresh = candidate("schema", fixture=schema_lab.fixture("candidate_success"), era=era, **schema_lab.BUDGET)
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
    refresh = candidate("schema", fixture=schema_lab.fixture("candidate_success"), max_pages=1,
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


def test_broken_mutants_are_not_kills():
    def broken(old, new="def walk(): pass"):
        return Mutant("broken", "course_lib/walker.py", old, new,
                      "course_lib.chapters.schema_lab:probe_in_place", "refresh_rejected", "bad catalog accepted")

    with pytest.raises(negative.BadMutant, match="anchor found 0 times"):
        negative.run_mutant(broken("this text is not there", "x"))
    with pytest.raises(negative.BadMutant, match="binds no 'no_such_function'"):
        negative.run_mutant(broken(Binding("no_such_function")))
    with pytest.raises(negative.BadMutant, match="binds no 'Catalog.no_such_method'"):
        negative.run_mutant(broken(Binding("Catalog.no_such_method")))
    with pytest.raises(negative.BadMutant, match="its definition binds no 'walk'"):
        negative.run_mutant(broken(Binding("walk"), "def walker(): pass"))
    with pytest.raises(negative.BadMutant, match="its definition does not compile"):
        negative.run_mutant(broken(Binding("walk"), "def walk(:"))
    # A mutant whose copy does not even import is reported, not counted:
    # tests/test_schema_cache_facts.py::test_a_mutant_that_does_not_import_is_not_a_kill runs one.


def test_judging_counts_only_the_designated_check():
    m = schema_lab.MUTANTS[0]
    judge = negative._judge
    assert judge(m, {"status": "check_failed", "check": m.check, "message": m.message + " (details)"}).killed
    assert judge(m, {"status": "check_failed", "check": "case_oracle", "message": m.message}).verdict == "wrong_check"
    assert judge(m, {"status": "check_failed", "check": m.check, "message": "other text"}).verdict == "wrong_check"
    assert judge(m, {"status": "error", "detail": "NameError: x"}).verdict == "not_a_kill"
    assert judge(m, {"status": "timeout", "detail": "probe ran past 1 s"}).verdict == "not_a_kill"
    assert judge(m, {"status": "passed"}).verdict == "survived"
