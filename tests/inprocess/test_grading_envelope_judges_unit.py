"""The envelope checker's judges (chapter 9) on recorded replays, in-process: each replay's row as the
child reports it (``_replay``), the scenarios of ``fixtures/grading/envelope.json``, and the student's
checker as ``LineClient`` calls it (``guarded``), on reply lines written here by hand."""
import json
import time

import pytest

from course_lib.errors import CheckFailed
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.envelope_checker import _key, guarded, judge_envelope

_, SCENARIOS, SPEC = load_battery("envelope")
ROWS = {s.name: s for s in SCENARIOS}
EXPECTED = {e["name"]: e["refused_at"] for e in SPEC["scenarios"]}
ERAS, MODES, HINTS = SPEC["era_list"], SPEC["modes"], SPEC["class_hints"]
COMBOS = [(e, m) for e in ERAS for m in MODES]


def row(outcome, check=None, message="", replies_checked=0, error_type=None):
    """A replay's ``(outcome, replies checked)`` as the child reports it: ``passed``, ``refused`` at a
    check, failed ``later``, or what the checker itself did (``assert``, ``crashed``, ``hung``, ``returned``)."""
    crash = o.crash_from({"crashed": error_type or "ValueError", "message": ""})
    found = {"passed": lambda: o.returned(None), "refused": lambda: o.raised(CheckFailed(check, message)),
             "later": lambda: o.judged(o.WRONG_RESULT, "the session failed after your checker accepted a reply: "
                                       + message, o.Outcome(o.LAB_FAILED)),
             "assert": lambda: o.judged(o.WRONG_RESULT, message, o.crashed(AssertionError())),
             "crashed": lambda: o.judged(o.CRASH, message, crash),
             "hung": lambda: o.judged(o.HANG, message, o.hung(5)),
             "returned": lambda: o.judged(o.WRONG_RESULT, message, o.returned(None))}[outcome]()
    return found, replies_checked


def judged(name, default, **where):
    """The scenario judged on ``default`` in every era and interpreter but those named in ``where``
    (``legacy__O=row`` is legacy under ``-O``)."""
    rows = {combo: default for combo in COMBOS}
    for key, value in where.items():
        era, mode = key.split("__")
        rows[(era.strip("_").replace("_", "-"), "-O" if mode == "O" else mode)] = value
    return judge_envelope(ROWS[name], rows, EXPECTED[name], ERAS, MODES, HINTS)


def refused(name, replies_checked=0):
    return row("refused", EXPECTED[name], "damaged", replies_checked)


def test_every_damaged_reply_refused_at_its_check_at_the_first_reply_and_the_undamaged_session_pass():
    for name in EXPECTED:
        right = row("passed") if EXPECTED[name] == "passed" else refused(name)
        v = judged(name, right)
        assert (v.passed, v.observed) == (True, "passed" if EXPECTED[name] == "passed" else "refused as expected")


@pytest.mark.parametrize("name, wrong, observed, failure, hint", [
    ("id 999", refused("id 999", 2), "refused at [id_match] only at reply 3", o.WRONG_RESULT, None),
    ("id 999", row("refused", "id_type", "x"), "refused at [id_type], not at id_match", o.WRONG_RESULT, None),
    ("boolean id", row("refused", "id_match", "x"), "refused at [id_match], not at id_type", o.WRONG_RESULT, None),
    ("jsonrpc 1.0", row("passed"), "accepted the damaged reply (the session went on)", o.WRONG_RESULT, None),
    ("undamaged session", row("refused", "id_match", "id 1 != 2"), "refused an undamaged reply at [id_match] id 1 != 2",
     o.WRONG_RESULT, None),
    ("jsonrpc 1.0", row("later", "bad_page", "no result"),
     "the session failed after your checker accepted a reply: no result", o.WRONG_RESULT, None),
    ("undamaged session", row("later", "KeyError", "KeyError: 'id'"),
     "the session failed after your checker accepted a reply: KeyError: 'id'", o.WRONG_RESULT, None),
    ("jsonrpc 1.0", row("assert", message="raised AssertionError: bad"), "raised AssertionError: bad", o.WRONG_RESULT,
     "assert"),
    ("undamaged session", row("assert", message="raised AssertionError"), "raised AssertionError", o.WRONG_RESULT,
     "assert"),
    ("string id", row("crashed", message="your code crashed: KeyError: 'id'", error_type="KeyError"),
     "your code crashed: KeyError: 'id'", o.CRASH, "crashed"),
    ("string id", row("hung", message="no answer within 5 s"), "no answer within 5 s", o.HANG, "hung"),
    ("undamaged session", row("returned", message="returned None, not the reply object"),
     "returned None, not the reply object", o.WRONG_RESULT, "returned"),
])
def test_each_wrong_replay_fails_with_its_own_kind_and_hint_everywhere_it_happens(name, wrong, observed, failure,
                                                                                  hint):
    v = judged(name, wrong)
    assert (v.passed, v.failure_class, v.observed) == (False, failure, observed)
    assert v.scenario.hint == (HINTS[hint] if hint else ROWS[name].hint)
    assert (v.outcome is None) == (hint is None), "the checker's own outcome is kept for the card"


def test_a_replay_wrong_in_one_place_only_fails_and_says_where():
    name, wrong = "id 999", row("passed")
    text = "accepted the damaged reply (the session went on)"
    assert judged(name, refused(name), legacy__O=wrong).observed == f"legacy -O: {text}"
    assert judged(name, refused(name), legacy__O=wrong, legacy__normal=wrong).observed == f"legacy: {text}"
    assert judged(name, refused(name), legacy__O=wrong, _2026_07_28__O=wrong).observed == f"-O: {text}"
    assert judged(name, refused(name), legacy__O=wrong, _2026_07_28__normal=wrong).observed == \
        f"legacy -O, 2026-07-28 normal: {text}"
    # two different failures: each with where it happened, the first kind that is not the scenario's names the hint
    v = judged(name, refused(name), legacy__O=row("assert", message="raised AssertionError"),
               legacy__normal=wrong, _2026_07_28__normal=row("crashed", message="crash", error_type="ValueError"))
    assert v.observed == f"legacy normal: {text}; legacy -O: raised AssertionError; 2026-07-28 normal: crash"
    assert (v.failure_class, v.scenario.hint) == (o.WRONG_RESULT, HINTS["assert"])


def test_the_starters_not_implemented_error_is_kept_for_its_hint():
    crash = row("crashed", message="your code crashed: NotImplementedError", error_type="NotImplementedError")
    v = judged("id 999", refused("id 999"), _2026_07_28__O=crash)
    assert isinstance(v.outcome.error, NotImplementedError) and v.failure_class == o.CRASH
    v = judged("id 999", row("crashed", message="x", error_type="NameError"), _2026_07_28__O=crash)
    assert isinstance(v.outcome.error, NameError), "the first error's type"
    assert isinstance(judged("id 999", row("crashed", message="x", error_type="TypeError"),
                             legacy__normal=crash).outcome.error, NotImplementedError)


# -- the student's checker as LineClient calls it ------------------------------------------------

LINE = b'{"jsonrpc": "2.0", "id": 1, "result": {}}'


def parse(line, request_id):
    return json.loads(line)


def refuse(line, request_id):
    raise CheckFailed("id_match", f"expected {request_id}")


def asserts(line, request_id):
    assert False, "an assert"


def crashes(line, request_id):
    return {}["id"]


def sleeps(line, request_id):
    time.sleep(10)


def test_a_checker_that_returns_the_parsed_reply_or_refuses_is_called_as_written():
    assert guarded(parse, 1)(LINE, 1) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    with pytest.raises(CheckFailed, match="expected 7"):
        guarded(refuse, 1)(LINE, 7)


@pytest.mark.parametrize("checker, line, kind, message, error_type", [
    (asserts, LINE, "assert", "raised AssertionError: an assert", None),
    (crashes, LINE, "crashed", "your code crashed: KeyError: 'id'", "KeyError"),
    (sleeps, LINE, "hung", "no answer within 0.1 s", None),
    (lambda line, request_id: None, LINE, "returned", "returned None, not the reply object", None),
    (lambda line, request_id: line, LINE, "returned", "returned b'{", None),
    (lambda line, request_id: {**json.loads(line), "id": 2}, LINE, "returned",
     "returned {'jsonrpc': '2.0', 'id': 2", None),
    (lambda line, request_id: [json.loads(line)], LINE, "returned", "returned [{", None),
    (lambda line, request_id: {}, b"starting up...", "returned", "returned {}, not the reply object", None),
    (parse, b"[1, 2]", "returned", "returned [1, 2], not the reply object", None),  # the parsed line, not an object
])
def test_anything_else_a_checker_does_is_a_checker_problem_of_its_kind(checker, line, kind, message, error_type):
    started = time.monotonic()
    with pytest.raises(o.Failed) as caught:
        guarded(checker, 0.1)(line, 1)
    assert _key(caught.value.outcome) == kind
    assert error_type is None or type(caught.value.outcome.error).__name__ == error_type
    assert str(caught.value).startswith(message), str(caught.value)
    assert time.monotonic() - started < 5, "a hanging checker is stopped at its budget"
    assert guarded(parse, 0.1)(LINE, 1), "the alarm is cleared after each call"
    time.sleep(0.15)  # no alarm left to fire
