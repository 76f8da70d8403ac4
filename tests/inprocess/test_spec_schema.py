"""In-process: the pinned copies of the specification's JSON Schema, and the two checks that read them
(frame.schema, tool.schema) on hand-written frames and tools; the audit runs them on real servers
in tests/stdio/test_audit_controls.py, tests/stdio/test_audit.py and tests/world/test_real_servers.py."""
import hashlib
import json
from types import SimpleNamespace

import pytest

from course_lib.audit import specschema, toolschema
from course_lib.audit.report import Report
from course_lib.protocol import LEGACY, MODERN_VERSION

MANIFEST = json.loads((specschema.SPEC_DIR / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("version", sorted(MANIFEST["eras"]))
def test_each_pinned_schema_is_the_published_file(version):
    entry = MANIFEST["eras"][version]
    data = (specschema.SPEC_DIR / entry["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    assert entry["path"] == f"schema/{version}/schema.json"
    assert json.loads(data)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert MANIFEST["repository"] == "https://github.com/modelcontextprotocol/modelcontextprotocol"
    assert len(MANIFEST["commit"]) == 40 and len(entry["last_changed"]) == 40


def test_every_era_the_audit_speaks_has_its_schema():
    assert set(MANIFEST["eras"]) == {specschema.version_of(LEGACY), MODERN_VERSION}


def test_the_result_type_is_the_one_the_schema_names_for_the_method():
    legacy, modern = specschema.by_method(LEGACY), specschema.by_method(MODERN_VERSION)
    assert legacy["tools/list"] == "ListToolsResult" and legacy["initialize"] == "InitializeResult"
    assert legacy["notifications/message"] == "LoggingMessageNotification"
    assert "ping" not in legacy  # PingRequest names no result type of its own: the envelope only
    assert modern["tools/list"] == "ListToolsResultResponse" and modern["server/discover"] == "DiscoverResultResponse"


def frame(result):
    return {"jsonrpc": "2.0", "id": 3, "result": result}


def test_a_violation_names_the_path_and_the_servers_value():
    tool = {"name": "echo", "inputSchema": {"type": "objekt"}}
    assert specschema.violation(LEGACY, frame({"tools": [tool]}), "tools/list") == (
        "ListToolsResult", "$.result.tools[0].inputSchema.type: 'object' was expected")
    assert specschema.violation(LEGACY, frame({"tools": [{**tool, "inputSchema": {"type": "object"}}]}),
                                "tools/list") is None
    error = {"jsonrpc": "2.0", "id": 4, "error": {"code": "bad", "message": "no"}}
    assert specschema.violation(LEGACY, error, "tools/call") == (
        "JSONRPCErrorResponse", "$.error.code: 'bad' is not of type 'integer'")
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x"}}
    assert specschema.violation(LEGACY, note, None) == (
        "LoggingMessageNotification", "$.params: 'level' is a required property")


def audit_of(era, frames=(), tools=None):
    ctx = SimpleNamespace(frames=[(era, method, f) for method, f in frames],
                          lists={era: {"tools": SimpleNamespace(items=tools)}} if tools is not None else {})
    report = Report(["srv"], "all")
    specschema.run(ctx, era, report)
    toolschema.run(ctx, era, report)
    return {line.check: (line.verdict, line.detail) for line in report.lines}


def test_an_era_without_a_published_schema_is_not_checked_never_a_pass():
    got = audit_of("2099-01-01", [("tools/list", frame({"tools": []}))])
    assert got["frame.schema"] == ("INFO", "not checked: no published schema for 2099-01-01")


def test_the_frame_line_names_the_first_failing_frame_and_counts_the_rest():
    bad = frame({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "nextCursor": 7})
    got = audit_of(LEGACY, [("tools/list", frame({"tools": []})), ("tools/list", bad), ("tools/list", bad)])
    assert got["frame.schema"] == ("FAIL", "the result of tools/list (id 3) against ListToolsResult: "
                                           "$.result.nextCursor: 7 is not of type 'string' (2 of 3 frames "
                                           "fail schema 2025-11-25 at b0f60ba)")


@pytest.mark.parametrize("era", [LEGACY, MODERN_VERSION])
def test_the_tool_lint_names_each_tool_and_its_fault(era):
    tools = [{"name": "ok", "inputSchema": {"type": "object"}},
             {"name": "list", "inputSchema": {"type": "array"}},
             {"name": "draft7", "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#",
                                                "type": "object", "required": "x"}},
             {"name": "out", "inputSchema": {"type": "object"}, "outputSchema": {"type": "string"}},
             {"name": "a b,c", "inputSchema": {"type": "object"}}]
    verdict, detail = audit_of(era, tools=tools)["tool.schema"]
    assert verdict == "FAIL"
    assert detail.startswith(f"{4 if era == LEGACY else 3} of 5 tools: tool \"list\": inputSchema has type "
                             "\"array\" at the top, not \"object\"; tool \"draft7\": inputSchema.required is not "
                             "valid http://json-schema.org/draft-07/schema#: 'x' is not of type 'array'; ")
    # 2025-11-25 restricts outputSchema to an object at the top; 2026-07-28 allows any schema there
    assert ('tool "out": outputSchema has type "string"' in detail) == (era == LEGACY)
    assert detail.endswith("(and 1 more)") == (era == LEGACY)
    named = audit_of(era, tools=[tools[0], tools[4], {"name": "x" * 129, "inputSchema": {"type": "object"}}])
    assert named["tool.schema"] == ("WARN", '2 of 3 tools: tool "a b,c": name has " ,", outside A-Z a-z 0-9 _ - .; '
                                            f'tool "{"x" * 38}…: name has 129 characters (1 to 128)')
    assert audit_of(era, tools=[])["tool.schema"] == ("INFO", "not checked: no tool was listed")
    unknown = {"name": "u", "inputSchema": {"$schema": "https://example.com/dialect", "type": "object"}}
    assert audit_of(era, tools=[unknown])["tool.schema"] == (
        "PASS", '1 tools: schemas valid, an object at the top, names legal; 1 schema(s) not checked: inputSchema: '
                'dialect "https://example.com/dialect" not known to the validator, not checked')
