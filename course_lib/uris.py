"""Resource URIs on the client side: template expansion, reading with a typed outcome, the
not-found answers real servers send (``not_found``), and the URL parsing SDK 1.29.0 applied to
every resource URI.

SDK 2.3.0 carries resource URIs as plain ``str`` end to end: what the caller passes is what
the server's handler receives. SDK 1.29.0 typed the same fields as
``Annotated[AnyUrl, UrlConstraints(host_required=False)]`` (pydantic), so both its client
(before sending) and its server (before the handler) replaced a URI with pydantic's
normalised form. ``sdk_1_29_uri`` applies exactly that parse with the pydantic installed here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated
from urllib.parse import quote

from mcp import MCPError

# The course's one rule for "no such resource" (``missing`` answers it, ``judge_missing`` holds it):
# an error whose data.uri names the URI as sent, with the era's code. 2026-07-28 (SEP-2164): -32602, a
# MUST, and -32002 MUST NOT be sent (retired, never reused). 2025-11-25: -32002, the spec's SHOULD;
# -32602 with data.uri (what MCPServer sends in both eras) is recognised too. A client accepts both
# codes in either era. Real servers also send -32602 without data, -32603 and 0 (``not_found``).
from course_lib.protocol import INTERNAL_ERROR, INVALID_PARAMS, MODERN_VERSION, RESOURCE_NOT_FOUND

_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(template: str, **values: str) -> str:
    """Fill ``{name}`` variables, percent-encoding each value as ONE path segment.

    Only the value is encoded (never the whole URI), every reserved character including
    ``/`` is encoded, and a space becomes ``%20`` (``+`` is form encoding, not URI encoding).
    """
    names = _VARIABLE.findall(template)
    if sorted(names) != sorted(values):
        raise ValueError(f"template {template!r} needs {sorted(names)}, got {sorted(values)}")
    return _VARIABLE.sub(lambda m: quote(values[m.group(1)], safe=""), template)


@lru_cache(maxsize=1)
def _anyurl_adapter():
    from pydantic import AnyUrl, TypeAdapter, UrlConstraints

    return TypeAdapter(Annotated[AnyUrl, UrlConstraints(host_required=False)])


def sdk_1_29_uri(uri: str) -> str:
    """The URI an SDK 1.29.0 peer would have used in place of ``uri`` (pydantic AnyUrl)."""
    return str(_anyurl_adapter().validate_python(uri))


@dataclass(frozen=True)
class NotFound:
    """How one server said "no such resource": the ``code`` it used, and whether a client can
    recognise that answer as not-found from the code and data alone (``recognisable``).

    ``kind`` is ``"resource-not-found"`` (-32002, the 2025-11-25 code), ``"invalid-params-uri"``
    (-32602 with ``data.uri``: SEP-2164, MCPServer, FastMCP), ``"invalid-params"`` (-32602 without
    ``data.uri``: the TypeScript SDK; the same code any bad parameter gets), ``"internal-error"``
    (-32603: server-everything 2025.12.18), ``"code-0"`` (Python SDK 1.x servers) or ``"other"``.
    Only the first two are recognisable; for the others only the message says it.
    """

    code: object
    kind: str
    message: str = ""

    @property
    def recognisable(self) -> bool:
        return self.kind in ("resource-not-found", "invalid-params-uri")


def not_found(error) -> NotFound:
    """Classify an error answer to ``resources/read`` (an ``MCPError``, its ``ErrorData`` or the wire's dict)."""
    if isinstance(error, MCPError):
        error = error.error
    if not isinstance(error, dict):
        error = {"code": getattr(error, "code", None), "message": getattr(error, "message", ""),
                 "data": getattr(error, "data", None)}
    code, data = error.get("code"), error.get("data")
    if code == RESOURCE_NOT_FOUND:
        kind = "resource-not-found"
    elif code == INVALID_PARAMS:
        kind = "invalid-params-uri" if isinstance(data, dict) and "uri" in data else "invalid-params"
    elif code == INTERNAL_ERROR:
        kind = "internal-error"
    elif code == 0 and type(code) is int:
        kind = "code-0"
    else:
        kind = "other"
    return NotFound(code, kind, str(error.get("message") or ""))


def is_not_found(exc: BaseException) -> bool:
    """True for the two recognisable spellings of "no such resource": -32002, or -32602 carrying
    ``data.uri``. ``not_found`` says which code a server used when it is neither."""
    if not isinstance(exc, MCPError):
        return False
    return not_found(exc).recognisable


def missing(uri: str, protocol_version: str | None) -> MCPError:
    """A server's answer to a ``resources/read`` of a URI it does not serve, by the course's rule:
    ``-32602`` at 2026-07-28, ``-32002`` before it, each with ``data.uri`` = the URI as sent."""
    code = INVALID_PARAMS if protocol_version == MODERN_VERSION else RESOURCE_NOT_FOUND
    return MCPError(code, "Resource not found", {"uri": uri})


def judge_missing(error, era: str, uri: str | None = None) -> str | None:
    """None when ``error`` (an error answer, as ``not_found`` takes it) is a not-found answer the
    rule accepts in ``era`` (``"legacy"`` or 2026-07-28) for ``uri``; else why not, in one line."""
    answer = not_found(error)
    modern = era == MODERN_VERSION
    if answer.kind == "resource-not-found" and modern:
        return "-32002 is retired at 2026-07-28 and MUST NOT be sent: not-found is -32602 with data.uri"
    if not answer.recognisable:
        return f"code {answer.code} ({answer.kind}) is not a not-found answer: -32002 or -32602 with data.uri"
    if uri is not None:
        data = error.error.data if isinstance(error, MCPError) else (
            error.get("data") if isinstance(error, dict) else getattr(error, "data", None))
        if not isinstance(data, dict) or data.get("uri") != uri:
            return f"data.uri must name the URI as sent ({uri!r}), not {data!r}"[:120]
    return None


@dataclass(frozen=True)
class ReadOutcome:
    """What one ``resources/read`` gave: contents, or a typed error."""

    uri: str
    contents_uri: str | None = None
    mime_type: str | None = None
    text: str | None = None
    code: int | None = None
    message: str | None = None
    not_found: bool = False

    @property
    def ok(self) -> bool:
        return self.code is None

    def label(self, names: dict[str, str]) -> str:
        """``ok:<document>`` (by the returned URI) or ``not-found`` or ``error <code>``."""
        if self.ok:
            return f"ok:{names.get(self.contents_uri, self.contents_uri)}"
        return "not-found" if self.not_found else f"error {self.code}"


async def read(session, uri: str) -> ReadOutcome:
    """Read one URI through a ``ClientSession``; a protocol error becomes part of the outcome."""
    try:
        result = await session.read_resource(uri)
    except MCPError as exc:
        return ReadOutcome(uri, code=exc.error.code, message=exc.error.message, not_found=is_not_found(exc))
    if len(result.contents) != 1:
        raise ValueError(f"expected one content item for {uri!r}, got {len(result.contents)}")
    item = result.contents[0]
    return ReadOutcome(uri, contents_uri=item.uri, mime_type=item.mime_type, text=getattr(item, "text", None))
