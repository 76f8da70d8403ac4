"""In-process: the checks of tests/stdio/test_grading_checked_tools.py's subject that start no process."""

import jsonschema
import pytest

from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.checked_tools import judge_call
from course_lib.grading.served import Failed

pytestmark = pytest.mark.anyio
TITLE, SCENARIOS, SPEC = load_battery("checked_tools")


# -- the judge on recorded replies (no server) -----------------------------------------------------

def kind_of(expected, call, reply):
    """The failure kind ``judge_call`` finds in a recorded reply (None: it passes)."""
    try:
        judge_call(expected, call, reply)
    except Failed as failed:
        return failed.outcome.failure
    return None


def test_the_judge_reads_each_answer_as_the_audit_does():
    call = ["resize", {"cpus": 2}]
    ran = {"result": {"content": [{"type": "text", "text": 'resize ran with {"cpus": 2}'}]}}
    assert kind_of("result", call, ran) is None
    other = {"result": {"content": [{"type": "text", "text": 'resize ran with {"cpus": 3}'}]}}
    assert kind_of("result", call, other) == o.WRONG_RESULT
    flagged = {"result": {"isError": True, "content": [{"type": "text", "text": "no"}]}}
    assert kind_of("isError", call, flagged) is None
    assert kind_of("isError", call, ran) == o.MISSING_REFUSAL
    assert kind_of("-32602", call, flagged) == o.WRONG_REFUSAL
    for bare in (["resize"], ["resize", None]):  # no arguments: the business logic ran with {}
        said = {"result": {"content": [{"type": "text", "text": "resize ran with {}"}]}}
        assert kind_of("result", bare, said) is None
    marked = {"result": {**flagged["result"], "_meta": {"course/ran": ['resize ran with {"cpus": 2}']}}}
    assert kind_of("isError", call, marked) == o.WRONG_RESULT  # the server's record: the tool ran anyway
    refused = {"error": {"code": -32602, "message": "Unknown tool"}}
    assert kind_of("-32602", call, refused) is None
    assert kind_of("isError", call, refused) == o.WRONG_REFUSAL
    crash = {"error": {"code": -32603, "message": "crashed: NotImplementedError: x",
                       "data": {"crashed": "NotImplementedError", "message": "x"}}}
    with pytest.raises(Failed) as failed:
        judge_call("result", call, crash)
    assert failed.value.outcome.failure == o.CRASH and failed.value.outcome.observed == "your code crashed: NotImplementedError: x"
    assert isinstance(failed.value.outcome.error, NotImplementedError)


def test_every_rule_has_negative_rows_across_its_domain():
    rows = {s["name"]: s for s in SPEC["scenarios"]}
    assert {r["answer"] for r in rows.values()} == {"result", "isError", "-32602", "audit"}
    tools = SPEC["server"]["tools"]
    for row in rows.values():
        for call in row.get("calls", ()):
            if row["answer"] in ("result", "isError") and len(call) > 1:
                errors = list(jsonschema.Draft202012Validator(tools[call[0]]).iter_errors(call[1] or {}))
                assert bool(errors) == (row["answer"] == "isError"), call  # the hand-written rows agree
    assert len(rows["unknown tool"]["calls"]) >= 4 and len(rows["non-object arguments"]["calls"]) >= 4


