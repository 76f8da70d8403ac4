"""The judges on transcripts recorded from real runs (``fixtures/grading/transcripts/``), in process.

Each exercise's ``<exercise>.expected.json`` (written by hand) names its solutions and the verdict
each row must get; ``<exercise>.json`` is what ``make record`` recorded of each row on the real
servers. A recording whose fingerprint no longer matches what it depends on fails here, naming the
file and the command that re-records it."""
import json
from dataclasses import replace

import pytest

from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery, select
from course_lib.grading.scorecard import Scorecard
from course_lib.tooling import transcripts as t
from course_lib.tooling.record import dotted, visible_functions

SOLUTIONS = [(exercise, label) for exercise in t.exercises() for label in t.expected(exercise)["solutions"]]


@pytest.mark.parametrize("exercise", t.exercises())
def test_no_recording_is_stale(exercise):
    stale = t.stale(exercise)
    assert not stale, (f"fixtures/grading/transcripts/{exercise}.json is stale for {stale}: what it depends on "
                       f"changed; re-record it with `{t.COMMAND}`")


def test_a_recording_is_stale_when_what_it_depends_on_changed_or_it_is_missing(tmp_path):
    spec = t.expected("walk_restart")
    recorded = t.recording("walk_restart")
    changed = {**spec, "solutions": {**spec["solutions"], "safe_walk": {**spec["solutions"]["safe_walk"],
                                                                       "only": ["normal"]}}}
    (tmp_path / "walk_restart.expected.json").write_text(json.dumps(changed), encoding="utf-8")
    left = {**recorded, "solutions": {k: v for k, v in recorded["solutions"].items() if k != "reference"}}
    (tmp_path / "walk_restart.json").write_text(json.dumps(left), encoding="utf-8")
    assert t.stale("walk_restart", tmp_path) == ["reference", "safe_walk"]


def judged(exercise: str, label: str):
    judge = dotted(t.expected(exercise)["judge"])
    return [judge(s, outcome) for s, outcome in t.rows(exercise, label)]


@pytest.mark.parametrize("exercise, label", SOLUTIONS, ids=[f"{e}:{label}" for e, label in SOLUTIONS])
def test_every_recorded_row_gets_its_expected_verdict(exercise, label):
    entry = t.expected(exercise)["solutions"][label]
    verdicts = judged(exercise, label)
    assert [(v.scenario.name, v.scenario.era) for v in verdicts] == [
        (s.name, s.era) for s in select(t.scenarios(entry["battery"]), entry.get("only"), None)], "every row, in order"
    for v in verdicts:
        wanted = t.expected_verdict(entry["verdicts"], v.scenario.name, v.scenario.era)
        assert ("pass" if v.passed else v.failure_class) == wanted, (v.scenario.name, v.scenario.era, v.observed)
        prefix = entry.get("observed", {}).get(v.scenario.name, entry.get("observed", {}).get(t.ALL))
        if prefix is not None:
            assert v.observed.startswith(prefix), v.observed
        if not v.passed:
            assert v.hint, "every failure comes with a hint"


def test_the_untouched_starter_scores_zero_with_one_observation():
    verdicts = judged("walk", "starter")
    card = Scorecard(load_battery("walk")[0], verdicts, 20)
    assert len(card.verdicts) == 19 and card.failures() == card.verdicts
    assert card.text().endswith("0/19 scenarios pass") and "Time budget: 20 s a call" in card.text()
    assert all(v.hint.startswith("This is still the starter") for v in verdicts)


def test_a_correct_reader_of_another_style_passes_every_row_in_both_eras():
    verdicts = judged("bundles", "two_attempts_with_prompt")
    card = Scorecard(load_battery("bundles")[0], verdicts, 20)
    assert card.text().endswith("24/24 scenarios pass — well done.")
    assert [v.scenario.era for v in verdicts[:2]] == ["legacy", "2026-07-28"]
    assert [v.scenario.name for v in verdicts[::2]] == [s["name"] for s in load_battery("bundles")[2]["scenarios"]]


def test_the_library_reader_is_withheld_from_chapter_5s_exercise():
    for label in ("calls_the_library", "verifies_with_the_library"):
        assert all("unavailable in this exercise" in v.observed for v in judged("bundles", label))


def test_the_library_walk_is_withheld_in_chapter_1_and_allowed_in_chapter_2():
    for label in ("calls_the_library", "calls_it_through_a_helper"):
        assert all("without course_lib.walker.walk" in v.hint for v in judged("walk", label))


def test_a_recorded_row_is_rebuilt_as_it_was_judged():
    s, outcome = t.rows("walk", "one_request_too_many")[[s.name for s, _ in t.rows("walk", "one_request_too_many")]
                                                         .index("repeated cursor")]
    assert outcome.kind == o.REFUSED and outcome.error.reason == "cursor_repeated"
    assert type(outcome.error).__name__ == "CatalogError"
    assert [f.method for f in outcome.sent] == ["tools/list"] * 3
    wire = outcome.state["wire"]
    assert wire.methods()[:2] == ["initialize", "notifications/initialized"]
    assert all(wire.response_to(f) is not None for f in outcome.sent), "each request's reply is on the wire"


def test_an_outcome_survives_encoding_as_the_judge_reads_it():
    from mcp import MCPError
    from mcp.types import Tool

    from course_lib.errors import CatalogError

    class NarrowError(CatalogError):
        pass

    for outcome in (o.returned(("a", [Tool(name="t", input_schema={"type": "object"})], {"k": 1})),
                    o.raised(MCPError(-32602, "bad cursor", {"cursor": "x"})),
                    o.raised(NarrowError("page_budget", "too many")), o.hung(2.5, "not asked"),
                    o.crashed(AttributeError("next_cursr"))):
        again = t.decode(t.encode(outcome))
        assert (again.kind, again.budget, again.not_asked, again.value) == (
            outcome.kind, outcome.budget, outcome.not_asked, outcome.value)
        if outcome.error is not None:
            assert [c.__name__ for c in type(again.error).__mro__] == [c.__name__ for c in type(outcome.error).__mro__]
            assert (str(again.error), o.describe(again)) == (str(outcome.error), o.describe(outcome))
            assert getattr(again.error, "reason", None) == getattr(outcome.error, "reason", None)


def test_a_row_judged_on_another_outcome_gets_another_verdict():
    """The negative control of the recorded rows: the same row with one fact of its run changed
    fails at the judge (the verdicts above are the recording's, not the judge's whatever it reads)."""
    judge = dotted(t.expected("walk")["judge"])
    s, outcome = t.rows("walk", "safe_walk")[0]
    assert s.name == "normal" and judge(s, outcome).passed
    assert judge(s, replace(outcome, value=outcome.value[:-1])).failure_class == o.WRONG_RESULT
    assert judge(s, outcome.with_wire(outcome.sent[:-1])).failure_class == o.WRONG_RESULT


def test_an_outcome_that_json_would_change_is_refused():
    with pytest.raises(TypeError, match="cannot be recorded"):
        t.encode(o.returned(object()))


def test_a_fingerprint_changes_with_the_solution_the_battery_and_the_rows_asked():
    entry = t.expected("walk")["solutions"]["safe_walk"]
    base = t.fingerprint(entry)
    assert t.fingerprint({**entry, "source": entry["source"].replace("safe_walk", "generator_walk")}) != base
    assert t.fingerprint({**entry, "battery": "walk_restart"}) != base
    assert t.fingerprint({**entry, "only": ["normal"]}) != base
    # wrong_reason calls safe_walk: its fingerprint covers safe_walk's source too
    assert "safe_walk" in t.solution_source(t.expected("walk")["solutions"]["wrong_reason"]["source"])


VISIBLE = [(exercise, label) for exercise, label in SOLUTIONS if label.startswith("visible:")]


@pytest.mark.parametrize("exercise, label", VISIBLE, ids=[f"{e}:{label}" for e, label in VISIBLE])
def test_no_function_a_visible_cell_defines_passes_the_exercise(exercise, label):
    """The chapter's own functions, graded by its check cell on the real servers when recorded:
    each fails at least one row (which rows, and how, is its expected file's)."""
    assert not all(v.passed for v in judged(exercise, label)), f"{label} passes {exercise}"


@pytest.mark.parametrize("exercise", [e for e in t.exercises() if t.expected(e).get("visible")])
def test_every_function_a_recorded_chapter_shows_is_recorded(exercise):
    """The functions the chapter's visible cells define that fit the starter are exactly those the
    expected file names (``make record`` refuses to record a chapter that shows one more)."""
    spec = t.expected(exercise)
    for stem in spec["visible"]:
        named = {e["source"].rpartition(":")[2] for e in spec["solutions"].values()
                 if e["source"].startswith(f"notebooks/{stem}.ipynb:visible:")}
        assert set(visible_functions(stem, spec["starter"])) == named, stem


def test_sanitizing_sets_aside_only_the_cursors_and_a_stopped_calls_length():
    line = '{"jsonrpc":"2.0","id":2,"result":{"nextCursor":"KAggq0qohfm8ws7s","tools":[]}}'
    text = json.dumps({"wire": [["←", line], ["→", line.replace("result", "params")]], "wire_frames": 4321})
    assert t.sanitized(text) == text.replace("KAggq0qohfm8ws7s", "<cursor 0>").replace("4321", '"N"')
    assert t.sanitized(json.dumps({"value": ["alpha"]})) == json.dumps({"value": ["alpha"]})
    sent = [["→", '{"params":{"cursor":"KAggq0qohfm8ws7t"}}'], ["→", '{"params":{"cursor":"KAggq0qohfm8wsXX"}}']]
    assert t.sanitized(json.dumps({"wire": [["←", line], *sent]})) == json.dumps({"wire": [
        ["←", line.replace("KAggq0qohfm8ws7s", "<cursor 0>")],
        ["→", '{"params":{"cursor":"<cursor 0, one character changed>"}}'], sent[1]]}), "two changed: no cursor of it"


def test_sanitizing_sets_aside_the_seconds_an_audit_measured_not_its_budgets():
    measured = ["gone 0.1 s later", "by itself 1.0 s after stdin EOF", "0 left over; 12.3 s; exit status 1"]
    assert [t.sanitized(x) for x in measured] == ["gone N s later", "by itself N s after stdin EOF",
                                                  "0 left over; N s; exit status 1"]
    budgets = "still running 5 s after stdin EOF; past the 0.5 s request budget; 3.2 s of 20 s"
    assert t.sanitized(budgets) == budgets


@pytest.mark.parametrize("exercise, row, old, new, said", [
    ("tool_result", "string, as declared", '"old"', '"new"', "not the value"),  # its structuredContent
    ("checked_tools", "valid input runs the tool", '"text": "resize ran with', '"text": "resize ran without',
     "answered"),  # its text
    ("read_handler", "names the chapter never showed", '"mimeType": "text/markdown"', '"mimeType": "text/plain"',
     "got"),  # its type
    ("paging_server", "complete catalog", '"name":"beta"', '"name":"omega"',
     "the walker read ['alpha', 'omega', "),  # a name on page 1
])
def test_a_served_row_judged_on_another_reply_gets_another_verdict(exercise, row, old, new, said):
    """The negative control of a served row's recording: the reference's first reply frame of the row
    with one fact changed fails at the judge, as a wrong result."""
    from course_lib.wire import Wire

    judge = dotted(t.expected(exercise)["judge"])
    s, outcome = next((s, outcome) for s, outcome in t.rows(exercise, "reference") if s.name == row)
    assert judge(s, outcome).passed
    reply = outcome.state["wire"].response_to(outcome.sent[0])
    assert old in reply.raw
    changed = Wire()
    for frame in outcome.state["wire"]:
        changed.record(frame.direction, frame.raw.replace(old, new, 1) if frame is reply else frame.raw)
    sent = [changed.frames[f.index] for f in outcome.sent]
    verdict = judge(s, outcome.with_wire(sent, wire=changed))
    assert verdict.failure_class == o.WRONG_RESULT and said in verdict.observed


def test_a_read_handlers_audit_row_judged_on_another_audit_line_gets_another_verdict():
    """The negative control of the audit's lines recorded beside a read-handler row's reads: the
    reference's odd spellings, each refused, with the audit's line FAIL, are a wrong result."""
    judge = dotted(t.expected("read_handler")["judge"])
    s, outcome = next((s, outcome) for s, outcome in t.rows("read_handler", "reference") if s.name == "audit's odd spellings")
    assert judge(s, outcome).passed and len(outcome.sent) > 1
    lines = [{**x, "verdict": "FAIL"} if x["check"] == "uri.spelling" else x for x in outcome.state["audit"]]
    assert lines != outcome.state["audit"]
    verdict = judge(s, outcome.with_wire(outcome.sent, audit=lines))
    assert verdict.failure_class == o.WRONG_RESULT and verdict.observed.startswith("the audit says FAIL")


def test_an_audit_row_judged_on_another_line_or_a_logged_crash_gets_another_verdict():
    """The negative control of the audit's recorded row: the reference's lines with one tool line
    WARN are a wrong refusal; with a crash logged beside it, the student's crash."""
    judge = dotted(t.expected("checked_tools")["judge"])
    s, outcome = t.rows("checked_tools", "reference")[-1]
    assert s.name == "the audit's tool probes" and judge(s, outcome).passed
    lines = [{**x, "verdict": "WARN"} if x["check"] == "tool.arguments" else x for x in outcome.state["audit"]]
    assert lines != outcome.state["audit"]
    warned = judge(s, outcome.with_wire((), audit=lines))
    assert warned.failure_class == o.WRONG_REFUSAL and warned.observed.startswith("tool.arguments WARN")
    crashed = judge(s, outcome.with_wire((), audit=lines, crash={"crashed": "KeyError", "message": "'x'"}))
    assert crashed.failure_class == o.CRASH


def test_a_replay_judged_on_another_check_or_a_later_reply_gets_another_verdict():
    """The negative control of the envelope checker's recorded replays: the reference's refusal of
    jsonrpc 1.0 at another check, or only at the second reply, fails the row, as a wrong result."""
    judge = dotted(t.expected("envelope")["judge"])
    s, outcome = next((s, outcome) for s, outcome in t.rows("envelope", "reference") if s.name == "jsonrpc 1.0")
    assert judge(s, outcome).passed
    replays = outcome.state["replays"]
    assert {r["check"] for r in replays} == {"jsonrpc_version"} and len(replays) == 4
    other = judge(s, outcome.with_wire((), replays=[{**replays[0], "check": "id_type"}, *replays[1:]]))
    assert other.failure_class == o.WRONG_RESULT and "refused at [id_type], not at jsonrpc_version" in other.observed
    later = judge(s, outcome.with_wire((), replays=[*replays[:3], {**replays[3], "replies_checked": 1}]))
    assert later.failure_class == o.WRONG_RESULT and later.observed.startswith("2026-07-28 -O: refused at")


def test_a_borrowed_cursor_is_judged_from_its_lenders_recorded_lines():
    """The negative control of a row that borrows a cursor: the lender's recorded page 1 refused is the
    row's failure (the row then sends nothing); a lender's cursor other than the one the row sent is
    no recording of this row at all (the replay refuses it)."""
    from course_lib.wire import Wire

    judge = dotted(t.expected("paging_server")["judge"])
    s, outcome = next((s, outcome) for s, outcome in t.rows("paging_server", "reference") if s.name == "foreign cursor")
    assert judge(s, outcome).passed and list(outcome.state["lent"]) == ["B"]
    lines = outcome.state["lent"]["B"]
    (cursor,) = {json.loads(raw)["result"]["nextCursor"] for d, raw in lines if '"nextCursor"' in raw}
    assert [f.params["cursor"] for f in outcome.sent] == [cursor], "the row sent the cursor its lender gave"
    refused = [[d, json.dumps({"jsonrpc": "2.0", "id": json.loads(raw)["id"], "error": {"code": -32602, "message": "no"}})
                if cursor in raw else raw] for d, raw in lines]
    verdict = judge(s, outcome.with_wire((), wire=Wire(), lent={"B": refused}))
    assert verdict.failure_class == o.WRONG_REFUSAL
    assert verdict.observed == "server 'paging-b': page 1 was refused: MCPError -32602: no"
    other = [[d, raw.replace(cursor, cursor[:-1] + "0" if cursor[-1] != "0" else "1")] for d, raw in lines]
    with pytest.raises(ValueError, match="not the next request recorded"):
        judge(s, outcome.with_wire(outcome.sent, lent={"B": other}))


def test_a_capstone_refresh_row_judged_on_other_facts_gets_another_verdict():
    """The negative control of the capstone's recorded refresh rows: the reference's facts with one message
    sent on the active session, or with page 1 never asked of the candidate, are a wrong result; the
    starter's crash, which broke no rule on the wire, gets the battery's crash hint."""
    judge = dotted(t.expected("capstone")["judge"])
    s, outcome = t.rows("capstone", "reference")[0]
    assert s.name == 'refresh: "" and an empty page' and judge(s, outcome).passed
    assert outcome.state["touched"] == 0 and outcome.state["page_1"] >= 1
    touched = judge(s, outcome.with_wire((), touched=1))
    assert touched.failure_class == o.WRONG_RESULT
    assert touched.observed.startswith("sent 1 message(s) on the active session during the refresh")
    unasked = judge(s, outcome.with_wire((), page_1=0))
    assert unasked.failure_class == o.WRONG_RESULT and unasked.observed.startswith("page 1 never reached")
    s, outcome = t.rows("capstone", "starter")[0]
    assert judge(s, outcome).scenario.hint == load_battery("capstone")[2]["crash_hint"]


def test_a_capstone_read_row_judged_on_another_read_gets_another_verdict():
    """The negative control of the capstone's recorded read row: the reference's answers with one URI
    outside the allowlist among the reads that reached the server are a wrong result naming it."""
    judge = dotted(t.expected("capstone")["judge"])
    s, outcome = next((s, outcome) for s, outcome in t.rows("capstone", "reference") if s.name.startswith("read"))
    assert judge(s, outcome).passed
    allowed, answers = set(load_battery("capstone")[2]["allowed"]), outcome.state["answers"]
    hostile = next(uri for uri in answers if uri not in allowed)
    assert hostile not in outcome.state["reads"] and len(outcome.state["reads"]) == 3
    verdict = judge(s, outcome.with_wire((), reads=[*outcome.state["reads"], hostile]))
    assert verdict.failure_class == o.WRONG_RESULT
    assert verdict.observed.startswith(f"1 URI(s) outside the allowlist reached the server, e.g. {hostile!r}")


def test_a_capstone_audit_row_is_judged_on_the_audits_recorded_lines():
    """The capstone's audit rows on their recorded lines: a page function the audit only warns about passes
    (its forged cursor served page 1 is a WARN, the card says no MUST line fails); the negative control,
    the reference's lines with one MUST line failing, is a wrong result, and with a logged crash, a crash."""
    from course_lib.audit.report import Line, Report
    from course_lib.grading.audited_server import card_lines

    judge = dotted(t.expected("capstone")["judge"])
    (s, lenient), _ = t.rows("capstone", "page_lenient")
    assert judge(s, lenient).passed
    lines = [Line(**x) for x in lenient.state["audit"]["lines"]]
    assert "cursor.forged" in {line.check for line in lines if line.verdict == "WARN"}
    report = Report([], lenient.state["audit"]["era"], lines)
    assert "no MUST line fails" in " ".join(card_lines(load_battery("capstone")[2], {"my_page": report}))
    s, outcome = t.rows("capstone", "reference")[-1]
    assert s.name == "audit: my_page (chapter 06)" and judge(s, outcome).passed
    audit = outcome.state["audit"]
    must = next(n for n, x in enumerate(audit["lines"]) if x["rule"].startswith("MUST") and x["era"] in (s.era, "all"))
    failed = {**audit, "lines": [{**x, "verdict": "FAIL"} if n == must else x for n, x in enumerate(audit["lines"])]}
    verdict = judge(s, outcome.with_wire((), audit=failed))
    assert verdict.failure_class == o.WRONG_RESULT and verdict.observed.startswith(audit["lines"][must]["check"])
    crash = t.encode(o.crash_from({"crashed": "KeyError", "message": "'x'"}))
    assert judge(s, outcome.with_wire((), audit=failed, crash=crash)).failure_class == o.CRASH
