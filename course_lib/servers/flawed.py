"""The flawed server: a server written without the SDK, correct but for the one lapse its mode names.

The audit's negative controls: each mode is a lapse real servers have, that an audit can miss.
``clean`` has none of them (the positive control). Its catalog: five tools in pages of two, one
resource, an empty list of resource templates; the 2025-11-25 handshake, and a 2026-07-28 request
answered with that era's result fields (``server/discover`` is ``-32601``).

=================  ====================================================================
``clean``          cursors signed (an edit is ``-32602``); every error where it is due
``unsigned-cursor`` cursors are base64 JSON offsets, ``{"o": 2}``: a malformed one is refused,
                   an edited one served (the page at that offset)
``success-error``  an unknown tool is answered with a result: ``isError: false``, text
                   ``Error: Unknown tool: NAME`` (an error reported as a success)
``any-uri``        with no template, any URI is served: ``No data`` (nothing is ever not found)
``silent-params``  a request whose ``params`` is not an object gets no reply at all
``linger``         on stdin EOF, a client whose stdout is gone (it died) is waited for, for ever
``size-as-text``   the resource's ``size`` is sent as text, ``"7"`` (the schema says an integer;
                   a client that coerces, as pydantic does, reads 7)
``bad-schema``     tool ``eel``'s ``inputSchema`` says ``"minLength": -1`` (not a JSON Schema)
``bad-name``       tool ``eel`` is listed as ``eel call`` (a space: outside the names' rule)
=================  ====================================================================
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import sys
import time

from course_lib.protocol import (INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSION, META_PROTOCOL_VERSION,
                                 METHOD_NOT_FOUND, PARSE_ERROR, RESOURCE_NOT_FOUND)
from course_lib.servers._base import lab_file, parser
from course_lib.servers.hostile import MODERN_FIELDS

MODES = {"clean": {}, "unsigned-cursor": {"cursor": "unsigned"}, "success-error": {"unknown_tool": "success"},
         "any-uri": {"missing_uri": "served"}, "silent-params": {"bad_params": "silent"},
         "linger": {"dead_client": "linger"}, "size-as-text": {"resource": {"size": "7"}},
         "bad-schema": {"eel": {"inputSchema": {"type": "object", "properties": {"text": {
             "type": "string", "minLength": -1}}, "required": ["text"]}}},
         "bad-name": {"eel": {"name": "eel call"}}}
TOOLS = [{"name": name, "description": f"Echoes its text ({name})",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
         for name in ("ant", "bee", "cat", "dog", "eel")]
PAGE = 2
README = "flawed://notes/readme"
KEY = secrets.token_bytes(16)  # this process's cursor key (clean)


def cursor_of(offset: int, lapse: dict) -> str:
    raw = json.dumps({"o": offset})
    if lapse.get("cursor") == "unsigned":
        return base64.b64encode(raw.encode()).decode()
    body = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    return f"{body}.{hmac.new(KEY, body.encode(), hashlib.sha256).hexdigest()[:16]}"


def offset_of(cursor, lapse: dict) -> int:
    """The offset a cursor names; ``ValueError`` for a cursor this server refuses."""
    if not isinstance(cursor, str):
        raise ValueError("the cursor is not a string")
    if lapse.get("cursor") == "unsigned":
        return int(json.loads(base64.b64decode(cursor, validate=True))["o"])
    body, _, mac = cursor.partition(".")
    if not hmac.compare_digest(mac, hmac.new(KEY, body.encode(), hashlib.sha256).hexdigest()[:16]):
        raise ValueError("the cursor's signature does not match")
    return int(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))["o"])


def tools_of(lapse: dict) -> list[dict]:
    """The catalog as this mode lists it (``eel`` as its lapse changes it)."""
    return TOOLS[:-1] + [{**TOOLS[-1], **lapse.get("eel", {})}]


def result_of(method, params: dict, lapse: dict) -> dict:
    """The result of one request; ``ValueError`` (its code, its message) for an error."""
    if method == "initialize":
        return {"protocolVersion": LEGACY_VERSION, "capabilities": {"tools": {}, "resources": {}},
                "serverInfo": {"name": "course-flawed", "version": "1.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        try:
            start = 0 if "cursor" not in params else offset_of(params["cursor"], lapse)
        except (ValueError, KeyError, TypeError):
            raise ValueError(INVALID_PARAMS, "Invalid cursor") from None
        page = {"tools": tools_of(lapse)[start:start + PAGE]}
        return {**page, "nextCursor": cursor_of(start + PAGE, lapse)} if start + PAGE < len(TOOLS) else page
    if method == "tools/call":
        name = params.get("name")
        if name not in {tool["name"] for tool in tools_of(lapse)}:
            if lapse.get("unknown_tool") == "success":
                return {"content": [{"type": "text", "text": f"Error: Unknown tool: {name}"}], "isError": False}
            raise ValueError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if not isinstance(arguments, dict):
            raise ValueError(INVALID_PARAMS, "arguments must be an object")
        text = arguments.get("text")
        return {"content": [{"type": "text", "text": str(text) if isinstance(text, str) else "text is required"}],
                "isError": not isinstance(text, str)}
    if method == "resources/list":
        return {"resources": [{"uri": README, "name": "readme", **lapse.get("resource", {})}]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "resources/read":
        uri = params.get("uri")
        if uri == README or lapse.get("missing_uri") == "served":
            return {"contents": [{"uri": uri, "text": "No data" if uri != README else "read me"}]}
        raise ValueError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
    raise ValueError(METHOD_NOT_FOUND, f"Method not found: {method}")


def reply_to(line: str, lapse: dict) -> dict | None:
    """The reply to one line (None: a notification, or a lapse's silence)."""
    try:
        message = json.loads(line)
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}}
    if not isinstance(message, dict):
        return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Invalid Request"}}
    if "id" not in message:
        return None
    request_id, params = message["id"], message.get("params", {})
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Invalid Request: id"}}
    if not isinstance(message.get("method"), str):
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_REQUEST, "message": "no method"}}
    if not isinstance(params, dict):
        if lapse.get("bad_params") == "silent":
            return None
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_PARAMS, "message": "params: an object"}}
    try:
        result = result_of(message["method"], params, lapse)
        if META_PROTOCOL_VERSION in (params.get("_meta") or {}):  # a 2026-07-28 request
            result.update(MODERN_FIELDS if message["method"].endswith("/list") else {"resultType": "complete"})
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    except ValueError as exc:
        error = dict(zip(("code", "message", "data"), exc.args))
        return {"jsonrpc": "2.0", "id": request_id, "error": error}


def main(argv: list[str]) -> int:
    args = parser("flawed", tuple(MODES)).parse_args(argv)
    lapse = MODES[args.mode]
    ready = lab_file("ready")
    if ready is not None:
        ready.touch()  # what _base.serve() tells connect(): about to serve
    try:
        for line in sys.stdin:
            reply = reply_to(line, lapse) if line.strip() else None
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()
        sys.stdout.write("\n")  # a blank line, which a client skips: is anyone still reading?
        sys.stdout.flush()
    except OSError:  # no one reads stdout: the client is gone
        while lapse.get("dead_client") == "linger":  # the lapse: waiting for a client that died
            time.sleep(1)
    os._exit(0)  # stdin closed: nothing to tear down
