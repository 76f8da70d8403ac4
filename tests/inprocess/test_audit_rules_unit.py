"""The audit's rules in-process, on recorded exchanges (no process): each rule's verdicts, including
those no course server mode shows (a read answered under another URI, a refused canonical read).

A recorded exchange is what a real server answered to exactly that request; ``Recorded`` plays
them back in order of request, and fails on a request it has no answer for.
"""
import json

import anyio
import pytest

from course_lib.audit import cursor_edits, cursors, launch, lists, resources, tools
from course_lib.audit.report import Report

pytestmark = pytest.mark.anyio


class Recorded:
    """Answers recorded per ``(method, params)``; a list of answers is played in turn."""

    def __init__(self, answers: dict):
        self.answers = {k: list(v) if isinstance(v, list) else [v] for k, v in answers.items()}

    async def request(self, method, params=None):
        queue = self.answers[(method, json.dumps(params, sort_keys=True))]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return {"jsonrpc": "2.0", "id": 1, **answer}


def page(names, cursor=None):
    result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
    if cursor is not None:
        result["nextCursor"] = cursor
    return {"result": result}


def walked(answers: dict) -> tuple[str, str]:
    _, verdict, detail = anyio.run(lists.walk_list, Recorded(answers), "tools")
    return verdict, detail


def q(cursor):
    return ("tools/list", json.dumps(None if cursor is None else {"cursor": cursor}, sort_keys=True))


def test_a_cycle_fails_and_names_the_repeated_cursor():
    verdict, detail = walked({q(None): page(["a"], "c1"), q("c1"): page([], "c2"), q("c2"): page(["b"], "c1")})
    assert verdict == "FAIL" and detail == "cursor_repeated: page 3 sent cursor 'c1' again; the walk stopped"


@pytest.mark.parametrize("answers,verdict,start", [
    ({q(None): page(["a"], ""), q(""): page(["b"])}, "PASS", "2 tools in 2 pages"),  # "" is a cursor
    ({q(None): {"error": {"code": -32601, "message": "Method not found"}}}, "INFO", "not implemented"),
    ({q(None): {"error": {"code": -32603, "message": "boom"}}}, "FAIL", "page 1 refused"),
    ({q(None): page(["a"], "c1"), q("c1"): {"error": {"code": -32602, "message": "Expired cursor"}}}, "WARN",
     "incomplete: the server refused its own cursor on page 2"),
    ({q(None): {"result": {"tools": [{"name": "a"}]}}}, "FAIL", "page 1 is not a valid tools/list result"),
    ({q(None): {"result": {"tools": [], "next_cursor": "c"}}}, "FAIL", "misspelled_cursor"),
    ({q(None): page(["a"], "c1"), q("c1"): page(["a"])}, "FAIL", "duplicate_name"),
])
def test_walk_verdicts(answers, verdict, start):
    got, detail = walked(answers)
    assert (got, detail[:len(start)]) == (verdict, start)


def test_spellings_of_a_uri():
    assert resources.spellings("test://static/resource/1") == {
        "percent": "test://static/resource/%31", "dot-segment": "test://static/resource/./1",
        "dotdot-segment": "test://static/resource/course-audit/../1", "query": "test://static/resource/1?course-audit=1",
        "fragment": "test://static/resource/1#course-audit", "trailing-slash": "test://static/resource/1/",
        "upper-scheme": "TEST://static/resource/1"}


def read(uri, as_uri=None, text="t"):
    return {"result": {"contents": [{"uri": as_uri or uri, "text": text}]}}


def r(uri):
    return ("resources/read", json.dumps({"uri": uri}, sort_keys=True))


@pytest.mark.parametrize("answer,verdict,start", [
    (read("x://a"), "PASS", "1 listed resource read back under their own URI"),
    (read("x://a", as_uri="x://A"), "WARN", "1 of 1: x://a came back as x://A"),
    ({"error": {"code": -32603, "message": "Unknown"}}, "WARN", "1 of 1 listed resources refused"),
])
def test_the_canonical_read(answer, verdict, start):
    report = Report([], "all")
    anyio.run(resources.read_canonical, Recorded({r("x://a"): answer}), [{"uri": "x://a"}], "legacy", report)
    [line] = report.lines
    assert (line.check, line.verdict, line.detail[:len(start)]) == ("uri.canonical", verdict, start)


def test_odd_spellings_refused_served_as_canonical_or_otherwise():
    answers = {r(u): {"error": {"code": -32002, "message": "nf"}} for u in resources.spellings("x://h/a").values()}
    answers[r("x://h/./a")] = read("x://h/a")  # normalised: the canonical contents
    answers[r("x://h/a?course-audit=1")] = read("x://h/a", text="other")
    report = Report([], "all")
    anyio.run(resources.read_spellings, Recorded(answers), {"x://h/a": [("x://h/a", "t", None)]}, "legacy", report)
    got = {line.subject: (line.verdict, line.detail) for line in report.lines}
    assert got["dot-segment"] == ("INFO", "1 served as canonical")
    assert got["query"] == ("WARN", "1 served other contents")
    assert got["fragment"] == ("PASS", "1 refused (-32002)")


@pytest.mark.parametrize("error,verdict,start", [
    ({"code": -32002, "message": "Resource not found"}, "PASS", "not found: code -32002 (resource-not-found)"),
    ({"code": -32602, "message": "Unknown", "data": {"uri": "x"}}, "PASS", "not found: code -32602 (invalid-params-uri)"),
    ({"code": -32602, "message": "Resource x not found"}, "WARN", "code -32602 (invalid-params): not recognisable"),
    ({"code": 0, "message": "Unknown resource"}, "WARN", "code 0 (code-0)"),
])
def test_a_missing_uri(error, verdict, start):
    report = Report([], "all")
    missing = r(f"x://{resources.MISSING_PATH}")
    anyio.run(resources.read_missing, Recorded({missing: {"error": error}}), "x://a", [], "legacy", report)
    [line] = report.lines
    assert (line.verdict, line.detail[:len(start)]) == (verdict, start)


def test_cursor_outcomes_and_tool_inputs():
    assert cursors.outcome({"error": {"code": -32602, "message": "Invalid cursor"}}) == (True, "error -32602 Invalid cursor")
    assert cursors.outcome({"result": {"tools": [{}, {}]}}) == (False, "served a page of 2 items")
    assert tools.requires_input({"inputSchema": {"type": "object", "required": ["city"]}})
    assert not tools.requires_input({"inputSchema": {"type": "object", "required": []}})
    assert not tools.requires_input({"inputSchema": {"type": "object"}})
    assert tools.answer_kind({"result": {"isError": True}})[0] == "isError"
    assert tools.answer_kind({"result": {"content": []}})[0] == "result"
    said = {"result": {"content": [{"type": "text", "text": "Error: Unknown tool: x"}], "isError": False}}
    assert tools.answer_kind(said)[0] == "result"  # the graders' reading is unchanged
    assert tools._said(said) == ("as-success", "an error reported as a success (isError false): "
                                               "'Error: Unknown tool: x'")
    assert tools._said({"result": {"content": [{"type": "text", "text": "ran x"}]}}) == (
        "result", "a result reporting no error: 'ran x'")
    assert tools._said({"result": {"isError": True, "content": [{"type": "text", "text": "no"}]}}) == (
        "isError", "an isError result: 'no'")
    assert tools.answer_kind({"error": {"code": -32602, "message": "x"}})[0] == "-32602"


def test_launch_classifies_stdout_lines():
    assert launch.classify(b'{"jsonrpc": "2.0", "id": 1, "result": {}}') == "message"
    assert launch.classify(b"Starting server...") == "noise"
    assert launch.classify(b"[1, 2]") == "noise"
    assert launch.classify(b"x" * (launch.MAX_FRAME + 1)) == "oversized"


@pytest.mark.parametrize("cursor,others,want", [
    # FastMCP's base64 JSON offset: the number changed, the field renamed; written back padded, as it came
    ("eyJvIjogMn0=", [], [("the cursor's field 'o' changed from 2 to 3", "eyJvIjogM30="),
                          ("the cursor's field 'o' renamed", "eyJveCI6IDJ9")]),
    # server-everything's base64 number, and another list's cursor
    ("MTA=", ["MTA=", "cmVz"], [("the cursor's number 10 changed to 11", "MTE="),
                                ("a cursor another list of this server issued", "cmVz")]),
    ("12", [], [("the cursor's number 12 changed to 13", "13")]),
    # base64url JSON without padding, with a text field
    ("eyJvIjoyLCJsIjoidG9vbHMifQ", [], [("the cursor's field 'o' changed from 2 to 3", "eyJvIjozLCJsIjoidG9vbHMifQ"),
                                        ("the cursor's field 'l' changed", "eyJvIjoyLCJsIjoidG9vbHN4In0")]),
    # what cannot be read (a signed token, a word) gets its last character changed
    ("Xk3_abcdEFGH.1a2b", [], [(cursor_edits.OPAQUE, "Xk3_abcdEFGH.1a2A")]),
    ("page-A", [], [(cursor_edits.OPAQUE, "page-B")]),
])
def test_well_formed_edits_of_a_cursor(cursor, others, want):
    assert cursor_edits.edits(cursor, others) == want


def _tamper_report(answers: dict, cursor: str) -> tuple[str, str]:
    report = Report([], "all")
    anyio.run(cursors._tampered, Recorded(answers), "tools", "legacy", cursor, [], {"a"}, report)
    [line] = report.lines
    return line.verdict, line.detail


def test_an_edited_cursor_served_fails_and_says_what_came_back():
    refused = {"error": {"code": -32602, "message": "Invalid cursor"}}
    assert _tamper_report({q("MTE="): page(["a", "b"])}, "MTA=") == (
        "FAIL", "the cursor's number 10 changed to 11: served a page of 2 items (a, b), 1 of them on page 1 too")
    assert _tamper_report({q("MTE="): refused}, "MTA=") == ("PASS", "the cursor's number 10 changed to 11: -32602")
    # an opaque cursor's edit served: what a forged cursor gets, a warning
    assert _tamper_report({q("xyB"): page(["a"])}, "xyA")[0] == "WARN"


@pytest.mark.parametrize("templates,verdict,start", [
    ([], "WARN", "x://course-audit-missing/no-such-resource was served: 'No data', though no template matches"),
    (["y://{path}"], "WARN", "x://course-audit-missing/no-such-resource was served: 'No data', though no template of 1"),
    (["x://{+path}"], "INFO", "x://course-audit-missing/no-such-resource was served: 'No data' (the template"),
])
def test_a_missing_uri_served(templates, verdict, start):
    report = Report([], "all")
    missing = r(f"x://{resources.MISSING_PATH}")
    served = {"result": {"contents": [{"uri": "x", "text": "No data"}]}}
    anyio.run(resources.read_missing, Recorded({missing: served}), "x://a", templates, "legacy", report)
    [line] = report.lines
    assert (line.verdict, line.detail[:len(start)]) == (verdict, start)
