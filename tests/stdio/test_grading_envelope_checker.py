"""Chapter 9's envelope-checker grader: damaged replays in a normal and a -O interpreter.

The reference in both eras and interpreters, and one known-wrong checker per failure kind; the verdicts
on every other wrong replay and checker: ``test_grading_envelope_judges_unit.py``."""
import json
import time

import pytest

from course_lib.grading.envelope_checker import grade_envelope
from course_lib.line_client import WireError, check_reply
from course_lib.tooling.student_copy import NOTEBOOKS, solution_sources
from scorecard_checks import assert_flagged

from test_grading_envelope_checker_unit import crashes_on_a_notification

pytestmark = pytest.mark.anyio

NOTEBOOK = "08_stateless_wire.ipynb"


def reference(tmp_path, name):
    """The hidden solution cell, run from a file so that its source stays readable (the grader copies
    the student's function into child interpreters by its source; ``reference_solution`` has no file)."""
    import nbformat

    nb = nbformat.read(NOTEBOOKS / NOTEBOOK, as_version=4)
    lines = [line for source in solution_sources(nb) for line in source.splitlines()
             if not line.startswith("await ")]
    path = tmp_path / "solution.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    namespace = {"__name__": "solution"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace[name]


def with_asserts(line, request_id):
    reply = json.loads(line)
    assert isinstance(reply, dict), "response object"
    assert reply.get("jsonrpc") == "2.0", "jsonrpc version"
    assert type(reply.get("id")) is int, "id type"
    assert reply["id"] == request_id, "id match"
    assert ("result" in reply) != ("error" in reply), "result xor error"
    return reply


def accepts_a_boolean_id(line, request_id):
    try:
        reply = json.loads(line)
    except ValueError:
        raise WireError("stdout_noise", "not JSON") from None
    if not isinstance(reply, dict):
        raise WireError("response_object", "not an object")
    if reply.get("jsonrpc") != "2.0":
        raise WireError("jsonrpc_version", "not 2.0")
    if not isinstance(reply.get("id"), int):  # True is an int too
        raise WireError("id_type", "not an int")
    if reply["id"] != request_id:
        raise WireError("id_match", "another id")
    if ("result" in reply) == ("error" in reply):
        raise WireError("result_xor_error", "not exactly one")
    return reply


def loops_forever(line, request_id):
    while True:
        pass


async def test_the_reference_with_the_chapters_require_passes_in_both_eras_and_interpreters(tmp_path):
    card = await grade_envelope(reference(tmp_path, "reference_my_check_reply"))
    assert card.passed and len(card.verdicts) == 14, card.text()


async def test_an_assert_checker_passes_normally_and_fails_under_O():
    card = await grade_envelope(with_asserts, only=["undamaged session", "jsonrpc 1.0", "boolean id"])
    verdict = assert_flagged(card, "jsonrpc 1.0", "undamaged session", "normal: raised AssertionError")
    assert "-O: accepted the damaged reply" in verdict.observed
    assert "python -O" in verdict.scenario.hint
    assert not card.verdict_of("boolean id").passed


@pytest.mark.parametrize("solution, failing, control, observed", [
    (accepts_a_boolean_id, "boolean id", "id 999", "accepted the damaged reply"),
    (crashes_on_a_notification, "notification", "boolean id", "your code crashed: KeyError: 'id'"),
])
async def test_wrong_checkers_are_flagged_at_their_scenario(solution, failing, control, observed):
    card = await grade_envelope(solution, only=[failing, control])
    assert_flagged(card, failing, control, observed)


async def test_a_looping_checker_is_stopped_within_its_budget():
    started = time.monotonic()
    card = await grade_envelope(loops_forever, only=["id 999"], budget=0.5, modes=["normal"])
    assert card.verdicts[0].observed == "no answer within 0.5 s", card.text()
    assert time.monotonic() - started < 60


def calls_the_library(line, request_id):
    return check_reply(line, request_id)


async def test_the_library_check_reply_is_unavailable_in_the_child():
    card = await grade_envelope(calls_the_library, only=["undamaged session", "id 999"], modes=["normal"])
    assert card.score == 0, card.text()
    assert "check_reply is unavailable in this exercise" in " ".join(card.text().split())
