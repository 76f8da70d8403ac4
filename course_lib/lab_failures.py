"""What a failed lab means: what escaped the SDK's task groups, mapped to one typed, one-line error.

A request past its budget is ``LabTimeout``, a closed connection ``ServerCrashed`` (with how the
server ended), a 2026-07-28 lab refused by a server without that era ``EraNotSupported``, and a
line the tap refused the ``ProtocolViolation`` it recorded.
"""
from __future__ import annotations

import mcp_types as types
from mcp import MCPError

from course_lib.errors import (CatalogError, CourseError, EraNotSupported, LabTimeout, ServerCrashed,
                               unwrap)
from course_lib.lab_state import Lab
from course_lib.protocol import META_SERVER_INFO, MODERN_VERSION


def describe_exit(lab: Lab) -> str:
    """How the server ended, in one line, with the last line it wrote to stderr."""
    last = [ln for ln in lab.stderr.splitlines() if ln.strip()]
    tail = f": {last[-1].strip()}" if last else ""
    if lab.forced_stop is not None:
        return (f"server was stopped by force ({lab.forced_stop}): it did not exit after its stdin closed "
                f"(code {lab.returncode}){tail}")
    return f"server exited with code {lab.returncode}{tail}"


# What a server without the 2026-07-28 era answers to its envelope: invalid request, unsupported version,
# or an internal error (server-everything 2025.12.18 serves the request before any handshake and fails).
_ERA_REFUSALS = (types.INVALID_REQUEST, -32022, types.INTERNAL_ERROR)


def _era_unsupported(lab: Lab, cause: BaseException) -> EraNotSupported | None:
    """A 2026-07-28 lab whose very first request failed, from a server that never answered as a
    2026-07-28 server does (every result stamped with its serverInfo): the era, not the request."""
    if lab.era != MODERN_VERSION:
        return None
    sent = [f for f in lab.wire.frames if f.direction == "→" and f.kind == "request"]
    answers = [f for f in lab.wire.frames if f.direction == "←" and f.kind in ("result", "error")]
    if len(sent) != 1 or len(answers) != 1:
        return None
    result = (answers[0].message or {}).get("result")
    if isinstance(result, dict) and META_SERVER_INFO in (result.get("_meta") or {}):
        return None
    if isinstance(cause, MCPError) and (cause.error.code in _ERA_REFUSALS or (
            cause.error.code == types.INVALID_PARAMS and not isinstance(cause.error.data, dict))):
        # -32602 with a dict in data (a cursor, a URI) is the server judging the request, not the era
        answer = f"{cause.error.code} {cause.error.message}"
    elif (isinstance(cause, CatalogError) and cause.reason == "bad_page") or type(cause).__name__ == "ValidationError":
        answer = f"a result without the 2026-07-28 fields ({str(cause).splitlines()[0][:80]})"
    else:
        return None
    message = (f"the server does not seem to speak {MODERN_VERSION}: it answered the first request of that era "
               f"with {answer}, and never as a {MODERN_VERSION} server does (connect with era='auto' to fall back "
               "to the handshake)")
    if isinstance(cause, MCPError):
        return EraRefused(message, cause.error, era=MODERN_VERSION, answer=answer)
    return EraNotSupported(message, era=MODERN_VERSION, answer=answer)


class EraRefused(EraNotSupported, MCPError):
    """``EraNotSupported`` whose answer was an error: still an ``MCPError`` (``.error`` is that answer),
    so code that caught the bare error keeps catching it."""

    def __init__(self, message: str, error: types.ErrorData, **details):
        Exception.__init__(self, message)
        self.details, self.error = details, error

    def __str__(self) -> str:  # MCPError's would be the bare answer
        return self.args[0]


def translate(exc: BaseException, lab: Lab, request_timeout: float, lab_timeout: float) -> BaseException:
    """Map what escaped the SDK's task groups to one typed, one-line error."""
    cause = unwrap(exc)
    if lab.violation is not None and (isinstance(cause, BaseExceptionGroup) or (
            isinstance(cause, MCPError) and cause.error.code == types.CONNECTION_CLOSED)):
        return lab.violation  # the tap closed the connection because of this line
    if isinstance(cause, BaseExceptionGroup):
        return cause
    unsupported = _era_unsupported(lab, cause)
    if unsupported is not None:
        return unsupported
    if isinstance(cause, MCPError) and cause.error.code == types.REQUEST_TIMEOUT:
        return LabTimeout(f"no answer within the {request_timeout:g} s request budget ({cause.error.message})",
                          budget="request")
    if isinstance(cause, MCPError) and cause.error.code == types.CONNECTION_CLOSED:
        if lab.returncode is not None:
            return ServerCrashed(describe_exit(lab), returncode=lab.returncode)
        return ServerCrashed("the server closed its stdout without exiting", returncode=None)
    if isinstance(cause, TimeoutError) and not isinstance(cause, CourseError):
        return LabTimeout(f"the lab ran past its {lab_timeout:g} s budget", budget="lab")
    return cause
