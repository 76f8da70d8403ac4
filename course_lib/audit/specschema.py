"""``frame.schema``: every frame the server sent, validated against its era's published JSON Schema.

The MCP specification publishes a JSON Schema of each version (``schema/<version>/schema.json`` in
its repository); the course pins a copy of each era's in ``fixtures/audit/spec-schema/`` (the
manifest names the repository, the path, the commit and each file's sha256). Every frame the
strict sessions of an era read (the replies to the audit's requests, errors included, and the
notifications and requests the server sent on its own) is validated, with the ``jsonschema``
library, against the schema's message type: ``JSONRPCResultResponse``, ``JSONRPCErrorResponse``,
``JSONRPCNotification`` or ``JSONRPCRequest``; then against the type the schema names for it:
the result of the request's method (``tools/list`` → ``ListToolsResult``: the request type's name,
``Result`` for ``Request``; 2026-07-28 names the whole response, ``ListToolsResultResponse``) and a
notification's own type (``notifications/message`` → ``LoggingMessageNotification``).

A FAIL names the first frame that fails (its method and id) and its first violation: the JSON path
in the frame and the validator's message, which quotes the server's value. An era without a
published schema is "not checked" (INFO), never a PASS.
"""
from __future__ import annotations

import json
from functools import lru_cache

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from course_lib.paths import FIXTURES
from course_lib.protocol import LEGACY, LEGACY_VERSION

SPEC_DIR = FIXTURES / "audit" / "spec-schema"
RULE = "MUST (spec {version}: schema.json, the protocol's published schema)"
ROOM = 160  # characters of the validator's message on the card


@lru_cache(maxsize=1)
def manifest() -> dict:
    return json.loads((SPEC_DIR / "manifest.json").read_text(encoding="utf-8"))


def version_of(era: str) -> str:
    """The protocol version whose schema judges ``era`` (``legacy`` is 2025-11-25)."""
    return LEGACY_VERSION if era == LEGACY else era


@lru_cache(maxsize=None)
def definitions(era: str) -> dict | None:
    """The ``$defs`` of the era's pinned schema, or None when the era has no published schema."""
    entry = manifest()["eras"].get(version_of(era))
    if entry is None:
        return None
    return json.loads((SPEC_DIR / entry["file"]).read_text(encoding="utf-8"))["$defs"]


@lru_cache(maxsize=None)
def validator(era: str, name: str) -> Draft202012Validator:
    """A validator of the schema's type ``name`` (its references resolve inside the pinned file)."""
    return Draft202012Validator({"$defs": definitions(era), "$ref": f"#/$defs/{name}"})


@lru_cache(maxsize=None)
def by_method(era: str) -> dict[str, str]:
    """``{method: type name}`` of the era: each request's result type, each notification's type."""
    defs, out = definitions(era) or {}, {}
    for name, schema in defs.items():
        method = ((schema.get("properties") or {}).get("method") or {}).get("const")
        if not isinstance(method, str):
            continue
        if name.endswith("Notification"):
            out[method] = name
        elif name.endswith("Request"):
            stem = name[: -len("Request")]
            for typed in (f"{stem}ResultResponse", f"{stem}Result"):
                if typed in defs:
                    out[method] = typed
                    break
    return out


def types_of(era: str, frame: dict, method: str | None) -> list[tuple[str, object, str]]:
    """``(type name, instance, JSON path of the instance)`` the frame is validated against, in order."""
    if not isinstance(frame, dict):
        return [("JSONRPCMessage", frame, "$")]
    if "method" in frame:
        envelope = "JSONRPCRequest" if "id" in frame else "JSONRPCNotification"
        method = frame.get("method")
    else:
        envelope = "JSONRPCErrorResponse" if "error" in frame else "JSONRPCResultResponse"
    out = [(envelope, frame, "$")]
    typed = by_method(era).get(method) if isinstance(method, str) else None
    if typed is None or envelope in ("JSONRPCErrorResponse", "JSONRPCRequest"):
        return out  # a server's request (roots/list, a ping): its envelope
    if typed.endswith("Notification") != (envelope == "JSONRPCNotification"):
        return out
    if typed.endswith("Result"):
        return out + [(typed, frame.get("result"), "$.result")]
    return out + [(typed, frame, "$")]


def violation(era: str, frame, method: str | None) -> tuple[str, str] | None:
    """``(type name, "path: message")`` of the frame's first violation, or None when it is valid."""
    for name, instance, path in types_of(era, frame, method):
        error = best_match(validator(era, name).iter_errors(instance))
        if error is not None:
            where = path + error.json_path[1:]
            message = " ".join(error.message.split())
            return name, f"{where}: {message[:ROOM]}{'…' if len(message) > ROOM else ''}"
    return None


def named(frame, method: str | None) -> str:
    """The frame as a reader finds it on the wire: a reply to a method and id, or a message."""
    if not isinstance(frame, dict):
        return f"a frame of type {type(frame).__name__}"
    if "method" in frame:
        kind = "request" if "id" in frame else "notification"
        return f"{kind} {frame.get('method')}" + (f" (id {json.dumps(frame.get('id'))})" if "id" in frame else "")
    kind = "error" if "error" in frame else "result"
    return f"the {kind} of {method} (id {json.dumps(frame.get('id'))})"


def run(ctx, era: str, report) -> None:
    """The ``frame.schema`` line of ``era``, from the frames its strict sessions read."""
    version = version_of(era)
    rule = RULE.format(version=version)
    if definitions(era) is None:
        report.add("frame.schema", "INFO", rule, era, f"not checked: no published schema for {version}")
        return
    frames = [(method, frame) for frame_era, method, frame in ctx.frames if frame_era == era]
    if not frames:
        report.add("frame.schema", "INFO", rule, era, "not checked: no frame was read in this era")
        return
    failing = sorted(((method, frame, found) for method, frame in frames  # probes run side by side:
                      if (found := violation(era, frame, method)) is not None),  # the first by method and id
                     key=lambda f: (f[0] or "", _id_order(f[1].get("id"))))
    commit = manifest()["commit"][:7]
    if failing:
        method, frame, (name, where) = failing[0]
        report.add("frame.schema", "FAIL", rule, era, f"{named(frame, method)} against {name}: {where} "
                   f"({len(failing)} of {len(frames)} frames fail schema {version} at {commit})")
        return
    typed = sorted({name for method, frame in frames for name, _, _ in types_of(era, frame, method)[1:]})
    report.add("frame.schema", "PASS", rule, era, f"{len(frames)} frames valid against schema {version} at "
               f"{commit}" + (f"; typed: {', '.join(typed)}" if typed else ""))


def _id_order(request_id) -> tuple:
    """Numeric ids in their order (5 before 10), then any other id by its JSON text."""
    number = isinstance(request_id, int) and not isinstance(request_id, bool)
    return (0, request_id, "") if number else (1, 0, json.dumps(request_id))
