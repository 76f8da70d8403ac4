"""The walker's judges (chapters 1 and 2) on recorded outcomes, in-process: the battery's rows, the
frames a walk sent (real ``wire.Wire`` frames), and the verdict each kind of answer gets.

Expected verdicts are written by hand from ``fixtures/grading/walk.json`` and ``walk_restart.json``."""
import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
from mcp import MCPError

from course_lib.errors import CatalogError, CheckFailed, LabTimeout
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.core import is_refusal, judge_names, judge_on_wire, names_of
from course_lib.wire import Wire

WALK = {s.name: s for s in load_battery("walk")[1] if s.era == "legacy"}
RESTART = {s.name: s for s in load_battery("walk_restart")[1] if s.era == "legacy"}
ABC = ["alpha", "beta", "gamma"]


def requests(n, method="tools/list"):
    """The frames of ``n`` requests of ``method``, as the lab's tap records them (with the handshake)."""
    wire = Wire()
    wire.record("→", json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
    for i in range(n):
        wire.record("→", json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": method,
                                     "params": {"cursor": str(i)} if i else {}}))
    return [f for f in wire.requests() if f.method != "initialize"]


def verdict(rows, name, outcome, n=None, method="tools/list"):
    s = rows[name]
    sent = requests(s.expect["requests"] if n is None else n, method)
    return judge_on_wire(s, outcome.with_wire(sent))


def refused(reason="cursor_repeated"):
    return o.raised(CatalogError(reason, "x"))


def server_error(code):
    return o.raised(MCPError(code, "from the server"))


# -- what returns ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, value", [
    ("normal", ABC), ("single page", ["alpha"]), ("empty catalog", []), ("server order", ["gamma", "alpha", "beta"]),
    ("normal", SimpleNamespace(names=ABC)),  # a Catalog
    ("normal", (ABC, [1, 1, 1])),  # the seed's (items, page_sizes)
    ("normal", [SimpleNamespace(name=n) for n in ABC]),  # Tool-like objects
    ("normal", tuple(ABC)), ("empty catalog", ()),  # a tuple of names
])
def test_the_whole_catalog_in_the_servers_order_after_one_request_a_page_passes(name, value):
    v = verdict(WALK, name, o.returned(value))
    assert (v.passed, v.failure_class) == (True, None), v.observed


@pytest.mark.parametrize("value, observed", [
    (["alpha"], "returned ['alpha']"),  # page 1 only
    (["alpha", "beta"], "returned ['alpha', 'beta']"),  # the last page lost
    (["alpha", "beta", "gamma", "delta"], "returned ['alpha', 'beta', 'gamma', 'delta']"),  # one too many
    (["alpha", "beta", "beta", "gamma"], "returned ['alpha', 'beta', 'beta', 'gamma']"),  # a page read twice
    (["gamma", "beta", "alpha"], "returned ['gamma', 'beta', 'alpha']"),  # reordered
    ([], "returned []"),
])
def test_any_other_list_of_names_is_a_wrong_result(value, observed):
    v = verdict(WALK, "normal", o.returned(value))
    assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_RESULT, observed)


@pytest.mark.parametrize("value, shown", [(None, "NoneType"), ({"names": ABC}, "dict"), (3, "int"),
                                          ("alpha beta gamma", "str")])
def test_something_not_a_list_of_names_is_a_wrong_result_even_where_a_refusal_is_due(value, shown):
    for name in ("normal", "repeated cursor"):
        v = verdict(WALK, name, o.returned(value))
        assert (v.passed, v.failure_class) == (False, o.WRONG_RESULT)
        assert v.observed == f"returned {shown}, not a list of names"
    assert names_of(SimpleNamespace(names=lambda: ABC)) is None, "a method called names is not a Catalog"


@pytest.mark.parametrize("name", ["repeated cursor", "cursor cycle", "endless catalog", "duplicate name",
                                  "catalog changed"])
def test_a_catalog_returned_where_a_refusal_is_due_is_a_missing_refusal(name):
    v = verdict(WALK, name, o.returned(["alpha"]))
    assert (v.passed, v.failure_class, v.observed) == (False, o.MISSING_REFUSAL,
                                                       "returned a partial catalog ['alpha'] instead of raising")
    assert judge_names(WALK[name].expect, o.returned(ABC))[2] == o.MISSING_REFUSAL  # even a whole one


# -- what raises -------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, name, outcome", [
    (WALK, "repeated cursor", refused("cursor_repeated")),
    (WALK, "cursor cycle", refused("cursor_repeated")),
    (WALK, "endless catalog", refused("page_budget")),
    (WALK, "duplicate name", refused("duplicate_name")),
    (WALK, "catalog changed", server_error(-32602)),
    (RESTART, "changes on every walk", server_error(-32602)),
    (RESTART, "another error code", server_error(-32603)),
])
def test_the_refusal_the_row_teaches_passes(rows, name, outcome):
    v = verdict(rows, name, outcome)
    assert (v.passed, v.failure_class) == (True, None), v.observed
    assert v.observed == o.describe(outcome)


class NarrowError(CatalogError):
    """A subclass of the refusal's type is the refusal."""


@pytest.mark.parametrize("rows, name, outcome", [
    (WALK, "repeated cursor", refused("page_budget")),  # another reason
    (WALK, "repeated cursor", refused("duplicate_name")),
    (WALK, "endless catalog", refused("cursor_repeated")),
    (WALK, "duplicate name", server_error(-32602)),  # the server's error where the walker's own is due
    (WALK, "catalog changed", refused("cursor_repeated")),  # the walker's own where the server's is due
    (RESTART, "changes on every walk", server_error(-32603)),  # another code
    (RESTART, "another error code", server_error(-32602)),
    (RESTART, "another error code", o.raised(CheckFailed("cursor", "x"))),  # a typed error of another kind
    (WALK, "repeated cursor", o.raised(LabTimeout("x"))),
])
def test_any_other_typed_refusal_is_a_wrong_refusal(rows, name, outcome):
    v = verdict(rows, name, outcome)
    assert (v.passed, v.failure_class) == (False, o.WRONG_REFUSAL), v.observed
    assert v.observed.startswith(o.describe(outcome) + ", not ")


def test_the_refusal_is_read_from_its_type_reason_and_code_only():
    by_type = {"raises": True, "refusal": {"type": "CatalogError"}}
    assert is_refusal(by_type, NarrowError("page_budget", "x"))
    assert not is_refusal(by_type, MCPError(-32602, "x"))
    assert is_refusal({"refusal": {"code": -32602}}, MCPError(-32602, "x")), "a code without a type"
    assert not is_refusal({"refusal": {"code": -32602}}, MCPError(-32603, "x"))
    assert is_refusal({"refusal": {"reason": "page_budget"}}, CatalogError("page_budget", "x")), "a reason alone"
    assert not is_refusal({"refusal": {"reason": "page_budget"}}, CatalogError("bad_page", "x"))
    # a row that asks for no particular refusal takes any typed one
    assert is_refusal({"raises": True}, MCPError(-32603, "x")) and is_refusal({"raises": True}, refused().error)
    assert judge_names({"raises": True}, refused("bad_page"))[0]


@pytest.mark.parametrize("name", ["normal", "server order", "empty catalog"])
def test_a_refusal_where_a_catalog_is_due_is_a_wrong_refusal(name):
    for outcome in (refused(), server_error(-32602)):
        v = verdict(WALK, name, outcome)
        assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_REFUSAL,
                                                           f"{o.describe(outcome)} instead of returning")


@pytest.mark.parametrize("outcome, failure, observed", [
    (o.raised(ValueError("'alpha' appears twice")), o.CRASH, "your code crashed: ValueError: 'alpha' appears twice"),
    (o.raised(RuntimeError("raised CatalogError(duplicate_name)")), o.CRASH, "your code crashed: RuntimeError"),
    (o.crashed(AttributeError("next_cursr")), o.CRASH, "your code crashed: AttributeError: next_cursr"),
    (o.hung(20), o.HANG, "no result within 20 s (stopped)"),
    (o.lab_failed(LabTimeout("the server did not start")), o.LAB, "the lab could not run"),
])
def test_the_students_own_exception_a_hang_and_a_lab_failure_are_their_own_kinds(outcome, failure, observed):
    for name in ("normal", "duplicate name"):
        for n in (WALK[name].expect["requests"], 1):  # whatever was sent, the failure is the outcome's
            v = verdict(WALK, name, outcome, n)
            assert (v.passed, v.failure_class) == (False, failure)
            assert v.observed.startswith(observed) and "request" not in v.observed, v.observed


# -- what went on the wire ---------------------------------------------------------------------

@pytest.mark.parametrize("rows, name, outcome, failure", [
    (WALK, "normal", o.returned(ABC), o.WRONG_RESULT),
    (WALK, "empty catalog", o.returned([]), o.WRONG_RESULT),
    (WALK, "repeated cursor", refused("cursor_repeated"), o.WRONG_REFUSAL),
    (WALK, "endless catalog", refused("page_budget"), o.WRONG_REFUSAL),
    (RESTART, "catalog changed once", o.returned(ABC), o.WRONG_RESULT),
    (RESTART, "another error code", server_error(-32603), o.WRONG_REFUSAL),
])
def test_one_request_more_or_fewer_than_the_row_states_fails(rows, name, outcome, failure):
    wanted = rows[name].expect["requests"]
    for n in (wanted - 1, wanted + 1, 0):
        v = verdict(rows, name, outcome, n)
        assert (v.passed, v.failure_class) == (False, failure), (n, v.observed)
        assert v.observed.endswith(f"(expected {wanted})") and f" after {n} tools/list request" in v.observed


def test_only_requests_of_the_rows_method_are_counted():
    s = WALK["normal"]
    other = requests(3, "resources/list")
    assert not judge_on_wire(s, o.returned(ABC).with_wire(other)).passed
    assert judge_on_wire(s, o.returned(ABC).with_wire(requests(3) + other)).passed
    counted = replace(s, expect={**s.expect, "method": "resources/list"})
    assert judge_on_wire(counted, o.returned(ABC).with_wire(other)).passed
