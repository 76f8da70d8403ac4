"""Tools and methods: what a server answers to calls that must not run anything.

The audit never calls a tool with valid input (a real tool may act). It sends: an unknown tool
name; non-object ``arguments`` (to a listed tool only when its schema requires a property, so
that even a server that coerced the arguments would refuse them; else to the unknown name);
``{}`` to a listed tool whose schema requires a property (invalid input, which the spec wants
answered by an ``isError`` result); and an unknown method, which must get ``-32601``.
"""
from __future__ import annotations

import json
import re

from course_lib.audit.session import Context, Work, describe_error, error_of, in_sessions
from course_lib.protocol import INVALID_PARAMS, METHOD_NOT_FOUND

UNKNOWN_TOOL = "course-audit-no-such-tool"
UNKNOWN_METHOD = "course-audit/no-such-method"
MAX_INVALID = 3
PROTOCOL = "SHOULD (spec: tools, protocol errors)"
VALIDATE = "MUST (spec: tools, servers validate tool inputs)"
INPUT_ERROR = "SHOULD (spec: tools, input errors are tool results)"
METHOD = "MUST (JSON-RPC 2.0: method not found)"
AS_SUCCESS = "SHOULD (spec: tools, an error in a result sets isError)"
ERROR_WORDS = re.compile(r"\b(error|unknown|not found|no such|invalid|failed|does not exist)\b", re.I)


def requires_input(tool: dict) -> bool:
    """Whether ``{}`` is invalid input for this tool by its own schema (a required property)."""
    schema = tool.get("inputSchema")
    return isinstance(schema, dict) and isinstance(schema.get("required"), list) and bool(schema["required"])


def _text(result: dict) -> str:
    parts = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
    text = " ".join(" ".join(parts).split())
    return repr(text[:60] + ("…" if len(text) > 60 else ""))


def answer_kind(reply: dict) -> tuple[str, str]:
    """``(kind, text)``: kind is ``-32602`` / ``error`` / ``isError`` / ``result`` (the course's graders
    read a tool's answer this way too)."""
    error = error_of(reply)
    if error is not None:
        return ("-32602" if error.get("code") == INVALID_PARAMS else "error"), f"error {describe_error(error)}"
    result = reply.get("result") or {}
    return ("isError" if result.get("isError") is True else "result"), \
        "an isError result" if result.get("isError") is True else "a result (the call ran)"


def _said(reply: dict) -> tuple[str, str]:
    """``answer_kind`` in the server's words: a result's text is quoted, and a result whose text reports an
    error without ``isError`` is its own kind, ``as-success`` (nothing ran: an error told as a success)."""
    kind, said = answer_kind(reply)
    if kind not in ("isError", "result"):
        return kind, said
    result = reply.get("result") or {}
    if kind == "isError":
        return kind, f"an isError result: {_text(result)}"
    if ERROR_WORDS.search(_text(result)):
        return "as-success", f"an error reported as a success (isError {json.dumps(result.get('isError'))}): " \
                             f"{_text(result)}"
    return kind, f"a result reporting no error: {_text(result)}"


def _rule(kind: str, otherwise: str) -> str:
    return {"result": VALIDATE, "as-success": AS_SUCCESS}.get(kind, otherwise)


async def _protocol_error(wire, check: str, params: dict, era: str, subject: str, report) -> None:
    kind, said = _said(await wire.request("tools/call", params))
    verdict = {"-32602": "PASS", "error": "WARN", "isError": "WARN", "as-success": "WARN", "result": "FAIL"}[kind]
    report.add(check, verdict, _rule(kind, PROTOCOL), era, said, subject)


def work(ctx: Context, era: str) -> Work:
    """The tool probe of ``era``: an unknown method, then (when tools are listed) the calls."""
    listing = ctx.lists.get(era, {}).get("tools")
    tools = listing.items if listing is not None and listing.complete else []

    async def body(wire, report) -> None:
        reply = await wire.request(UNKNOWN_METHOD, {})
        error = error_of(reply)
        code = None if error is None else error.get("code")
        report.add("method.unknown", "PASS" if code == METHOD_NOT_FOUND else "FAIL", METHOD, era,
                   f"{UNKNOWN_METHOD}: " + ("a result" if error is None else describe_error(error)))
        if listing is None:
            return
        await _protocol_error(wire, "tool.unknown", {"name": UNKNOWN_TOOL, "arguments": {}}, era, UNKNOWN_TOOL, report)
        strict = [tool for tool in tools if requires_input(tool)]
        name = strict[0]["name"] if strict else UNKNOWN_TOOL
        await _protocol_error(wire, "tool.arguments", {"name": name, "arguments": "not-an-object"}, era, name, report)
        if not strict:
            report.add("tool.invalid-input", "INFO", INPUT_ERROR, era,
                       "not probed: no listed tool requires a property, so no input is safely invalid")
        for tool in strict[:MAX_INVALID]:
            kind, said = _said(await wire.request("tools/call", {"name": tool["name"], "arguments": {}}))
            verdict = {"isError": "PASS", "-32602": "WARN", "error": "WARN", "as-success": "WARN", "result": "FAIL"}[kind]
            report.add("tool.invalid-input", verdict, _rule(kind, INPUT_ERROR), era,
                       f"{{}} (required {', '.join(tool['inputSchema']['required'][:3])}): {said}", tool["name"])

    return Work("tools", body)


async def run(ctx: Context, era: str, report) -> None:
    await in_sessions(ctx, era, report, [work(ctx, era)])
