"""In-process: the checks of tests/stdio/test_grading_sealed_state.py's subject that start no process."""

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib import CatalogError
from course_lib.grading.sealed_state import judge

pytestmark = pytest.mark.anyio
TITLE, SCENARIOS, SPEC = load_battery("sealed_state")


def starter(key):
    raise NotImplementedError("write your sealer here")


# -- the judge on recorded outcomes (no server) ----------------------------------------------------

def test_the_judge_reads_each_kind_of_answer():
    honest, forged = SCENARIOS[0], SCENARIOS[2]
    done = "provisioned small in eu-west, charged 10 credits"
    assert judge(honest, o.returned(done)).passed
    assert judge(honest, o.returned("provisioned small in eu-west, charged 0 credits")).failure == o.WRONG_RESULT
    assert judge(forged, o.returned("provisioned large in eu-west, charged 0 credits")).failure == o.MISSING_REFUSAL
    assert judge(forged, o.raised(MCPError(types.INVALID_PARAMS, "no"))).passed
    assert judge(forged, o.raised(MCPError(types.INVALID_REQUEST, "no"))).failure == o.WRONG_REFUSAL
    assert judge(honest, o.raised(MCPError(types.INVALID_PARAMS, "no"))).failure == o.WRONG_REFUSAL
    crashed = judge(forged, o.raised(MCPError(types.INTERNAL_ERROR, "crashed: KeyError: 'x'", {"crashed": "KeyError", "message": "'x'"})))
    assert crashed.failure == o.CRASH and crashed.observed == "your code crashed: KeyError: 'x'"
    starter_crash = judge(honest, o.raised(MCPError(types.INTERNAL_ERROR, "crashed: NotImplementedError",
                                                    {"crashed": "NotImplementedError"})))
    assert "still the starter" in starter_crash.hint
    assert judge(honest, o.raised(MCPError(types.REQUEST_TIMEOUT, "timed out"))).failure == o.HANG
    assert judge(honest, o.hung(10)).failure == o.HANG
    # nothing answered where a refusal is due, and a typed error of the course's own, are no pass
    assert judge(forged, o.returned(None)).failure_class == o.MISSING_REFUSAL
    assert judge(forged, o.raised(CatalogError("cursor_repeated", "seen"))).failure_class == o.WRONG_RESULT


def test_the_battery_runs_where_request_state_exists():
    assert {s.era for s in SCENARIOS} == {"2026-07-28"}
    assert SPEC["unavailable"] == ["course_lib.servers.modern.StateCodec"]
