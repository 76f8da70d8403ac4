"""In-process: the checks of tests/stdio/test_grading_sealed_state.py's subject that start no process."""

import base64
import hashlib
import hmac
import json

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


# -- known-wrong sealers (recorded: fixtures/grading/transcripts/sealed_state.expected.json) -------------

def plain(key):
    """No seal at all: the state as JSON, read back as JSON (what the unsealed mode does)."""
    def seal(state, call):
        return json.dumps(state, sort_keys=True)

    def unseal(token, call):
        try:
            return json.loads(token)
        except ValueError:
            raise MCPError(types.INVALID_PARAMS, "unreadable state") from None
    return seal, unseal


def _mac(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def unbound(key):
    """Signed, but not bound to the call: a small order's state passes on a large order."""
    def seal(state, call):
        body = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
        return f"{body}.{_mac(key, body)}"

    def unseal(token, call):
        body, _, mac = token.rpartition(".")
        if not body or not hmac.compare_digest(mac, _mac(key, body)):
            raise MCPError(types.INVALID_PARAMS, "request_state failed verification")
        return json.loads(base64.urlsafe_b64decode(body))
    return seal, unseal


def own_key(key):
    """Bound to the call, but signed with a constant instead of the process's key."""
    secret = b"course-constant"

    def seal(state, call):
        body = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
        return f"{body}.{_mac(secret, json.dumps(call, sort_keys=True) + body)}"

    def unseal(token, call):
        body, _, mac = token.rpartition(".")
        if not body or not hmac.compare_digest(mac, _mac(secret, json.dumps(call, sort_keys=True) + body)):
            raise MCPError(types.INVALID_PARAMS, "request_state failed verification")
        return json.loads(base64.urlsafe_b64decode(body))
    return seal, unseal


def decodes_first(key):
    """Decodes before it verifies, and lets the decoding error escape (a crash, -32603)."""
    def seal(state, call):
        body = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
        return f"{body}.{_mac(key, json.dumps(call, sort_keys=True) + body)}"

    def unseal(token, call):
        body, mac = token.split(".")
        state = json.loads(base64.b64decode(body, validate=True))
        if not hmac.compare_digest(mac, _mac(key, json.dumps(call, sort_keys=True) + body)):
            raise MCPError(types.INVALID_PARAMS, "request_state failed verification")
        return state
    return seal, unseal


def refuses_only_empty(key):
    """Refuses "" with -32602, but splits any other string before it verifies: "x" and
    "not.a.state" crash it (ValueError), so only a row per string catches it."""
    def seal(state, call):
        body = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
        return f"{body}.{_mac(key, json.dumps(call, sort_keys=True) + body)}"

    def unseal(token, call):
        if token == "":
            raise MCPError(types.INVALID_PARAMS, "request_state failed verification")
        body, mac = token.split(".")
        if not hmac.compare_digest(mac, _mac(key, json.dumps(call, sort_keys=True) + body)):
            raise MCPError(types.INVALID_PARAMS, "request_state failed verification")
        return json.loads(base64.urlsafe_b64decode(body))
    return seal, unseal


def refuses_all(key):
    """Refuses every state with -32602, even its own: no order ever completes."""
    def seal(state, call):
        return "sealed"

    def unseal(token, call):
        raise MCPError(types.INVALID_PARAMS, "request_state failed verification")
    return seal, unseal


def wrong_code(key):
    """Verifies, but refuses with -32600 (invalid request) instead of -32602."""
    seal, check = unbound(key)

    def unseal(token, call):
        try:
            return check(token, call)
        except MCPError:
            raise MCPError(types.INVALID_REQUEST, "bad state") from None
    return seal, unseal


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


def test_each_string_never_issued_is_a_row_of_its_own():
    """Were the three strings sent as one row, its first refusal would end the row as a pass: a sealer
    that refuses "" and crashes on the others (``refuses_only_empty``, judged on its recorded run in
    test_transcripts_unit.py) would pass."""
    never_issued = [s.name for s in SCENARIOS if s.name.startswith("a state never issued")]
    assert never_issued == ['a state never issued: ""', 'a state never issued: "x"',
                            'a state never issued: "not.a.state"']
