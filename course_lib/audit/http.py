"""The audit's frames over Streamable HTTP: the same two sessions as on stdio, one POST per frame.

``HttpClient`` stands where the strict line client (``LineClient``) stands: ``request(method,
params)`` returns a reply that passed the same envelope checks (``check_reply``), and an HTTP
answer that is no reply is a ``WireError`` of its own check: ``http_connect`` (nothing answers at
the URL), ``http_status`` (a status with no JSON-RPC reply for the request, such as a 500 with an
HTML page, or a 202 to a request), ``http_body`` (a 2xx body that is not JSON). The raw session
of the malformed frames POSTs through the same ``Exchanger`` (``rawwire.HttpRawSession``).

Every POST carries ``Accept: application/json, text/event-stream``; an answer is one JSON object
or an SSE stream (its events read until the reply). The headers follow the era's transport spec:
2025-11-25 carries the ``Mcp-Session-Id`` the ``initialize`` answer gave and, after it,
``MCP-Protocol-Version`` (the version negotiated), and the session is ended by a DELETE;
2026-07-28 has no session: every POST carries ``MCP-Protocol-Version: 2026-07-28``, ``Mcp-Method``
and, for ``tools/call``, ``resources/read`` and ``prompts/get``, ``Mcp-Name`` (base64 sentinel
when the value is not plain header-safe ASCII). Nothing here starts a process: the server is there.
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field

import anyio
import httpx

from course_lib.line_checks import CHECKS, WireError, check_reply
from course_lib.line_frames import CLIENT_INFO, MAX_LINE, Exchange
from course_lib.protocol import LEGACY, LEGACY_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, \
    META_PROTOCOL_VERSION, MODERN_VERSION

ACCEPT = "application/json, text/event-stream"
NAMED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}  # the Mcp-Name source
HEADER_SAFE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")


class HttpError(WireError):
    """A strict-client check failed, or an HTTP answer was no reply (``http_*``)."""

    CHECKS = CHECKS + ("http_connect", "http_status", "http_body")


def header_value(value: str) -> str:
    """``value`` as a header value: as it is when header-safe, else the spec's base64 sentinel."""
    if HEADER_SAFE.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


@dataclass
class Exchanger:
    """The headers of one era's POSTs, and reading an answer into JSON-RPC messages."""

    url: str
    era: str
    session_id: str | None = None
    version: str | None = None  # MCP-Protocol-Version once known (legacy: after initialize)

    def headers(self, message) -> dict[str, str]:
        out = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.session_id:
            out["Mcp-Session-Id"] = self.session_id
        if self.era == MODERN_VERSION:
            out["MCP-Protocol-Version"] = MODERN_VERSION
            method = message.get("method") if isinstance(message, dict) else None
            if isinstance(method, str):
                out["Mcp-Method"] = method
                params = message.get("params")
                name = params.get(NAMED.get(method, "")) if isinstance(params, dict) else None
                if isinstance(name, str):
                    out["Mcp-Name"] = header_value(name)
        elif self.version:
            out["MCP-Protocol-Version"] = self.version
        return out

    async def post(self, http: httpx.AsyncClient, body: bytes, message, until=None):
        """``(status, what it was, [messages])``: the answer to one POST; an SSE stream is read until
        ``until(message)`` or its end. Raises ``httpx.HTTPError`` when nothing answers."""
        async with http.stream("POST", self.url, content=body, headers=self.headers(message)) as response:
            if self.era == LEGACY and response.headers.get("mcp-session-id") and not self.session_id:
                self.session_id = response.headers["mcp-session-id"]
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            said = f"HTTP {response.status_code}" + (f" ({kind})" if kind else "")
            if kind == "text/event-stream":
                messages = []
                async for data in _events(response):
                    messages.append(data)
                    if until is not None and _is(data, until):
                        break
                    if until is not None and _is(data, _asks):
                        await self.answer(http, json.loads(data))
                return response.status_code, said, messages
            raw = b""
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) > MAX_LINE:
                    break
            return response.status_code, said, [raw] if raw.strip() else []

    async def answer(self, http: httpx.AsyncClient, request: dict) -> None:
        """Answer a request the server sent on a stream, as the line client does (a ``ping`` gets an
        empty result, anything else ``-32601``), so that a server waiting for it goes on."""
        answer = ({"result": {}} if request.get("method") == "ping" else
                  {"error": {"code": -32601, "message": "this client does not handle server requests"}})
        response = {"jsonrpc": "2.0", "id": request.get("id"), **answer}
        try:
            with anyio.move_on_after(2.0):
                await http.post(self.url, content=json.dumps(response).encode(), headers=self.headers(response))
        except httpx.HTTPError:
            pass  # the reply to the original request says what became of it

    async def delete(self, http: httpx.AsyncClient) -> None:
        """End a 2025-11-25 session (the spec's DELETE); whatever the answer."""
        if self.session_id:
            try:
                with anyio.move_on_after(2.0):
                    await http.delete(self.url, headers=self.headers(None))
            except httpx.HTTPError:
                pass


async def _events(response):
    """The data of each SSE event, as bytes."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield "\n".join(data).encode()
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data).encode()


def envelope(era: str, method: str, params: dict | None) -> dict | None:
    """``params`` as ``era`` sends them: in 2026-07-28 with the envelope in ``_meta``."""
    if era == LEGACY or method == "initialize":
        return params
    meta = {META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}
    return {**(params or {}), "_meta": meta}


def era_request(era: str, request_id, method: str, params: dict | None = None) -> bytes:
    """A well-formed request line of ``era`` (the raw sessions' ``request_line``, both transports)."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    params = envelope(era, method, params)
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def _is(raw: bytes, until) -> bool:
    try:
        return until(json.loads(raw))
    except ValueError:
        return False


def _asks(message) -> bool:
    """A request the server sent (it waits for an answer)."""
    return isinstance(message, dict) and "method" in message and "id" in message


def _reply_to(request_id):
    return lambda m: isinstance(m, dict) and "method" not in m and m.get("id") == request_id


def shown(raw: bytes) -> str:
    return repr(raw[:60].decode("utf-8", "replace"))


@dataclass
class HttpClient:
    """``async with HttpClient(url, era=...) as wire:`` then ``await wire.request(method, params)``;
    the attributes the audit reads are those of ``LineClient`` (no process: ``started`` is False)."""

    url: str
    era: str = LEGACY
    reply_timeout: float = 30.0
    exchanges: list[Exchange] = field(default_factory=list)
    replies_checked: int = 0
    received: list[dict] = field(default_factory=list)
    noise_lines: list[bytes] = field(default_factory=list)
    swept: list[int] = field(default_factory=list)
    exit: None = None
    started: bool = False
    max_line: int = MAX_LINE

    def __post_init__(self):
        self._next_id = 0
        self._wire = Exchanger(self.url, self.era)
        self._http: httpx.AsyncClient | None = None

    async def __aenter__(self) -> "HttpClient":
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=self.reply_timeout))
        if self.era == LEGACY:
            try:
                init = await self.request("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                                                         "clientInfo": CLIENT_INFO})
                result = init.get("result") if isinstance(init.get("result"), dict) else {}
                self._wire.version = str(result.get("protocolVersion") or LEGACY_VERSION)
                if "result" in init:
                    await self.notify("notifications/initialized")
            except BaseException:
                await self.close()
                raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self, check: bool = False) -> None:
        if self._http is not None:
            with anyio.CancelScope(shield=True):
                await self._wire.delete(self._http)
                await self._http.aclose()
            self._http = None

    async def _post(self, message: dict, until=None) -> tuple[int, str, list[bytes]]:
        what = f"request {message['id']} ({message['method']})" if "id" in message else message.get("method")
        try:
            return await self._wire.post(self._http, json.dumps(message).encode(), message, until)
        except httpx.HTTPError as exc:
            raise HttpError("http_connect", f"no HTTP answer to {what} at {self.url}: "
                            f"{type(exc).__name__} {str(exc)[:60]}".rstrip()) from None

    async def notify(self, method: str, params: dict | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        self.exchanges.append(Exchange(message))
        status, said, raw = await self._post(message)
        if status >= 400:
            raise HttpError("http_status", f"{said} to the notification {method}" +
                            (f": {shown(raw[0])}" if raw else ""))

    async def request(self, method: str, params: dict | None = None) -> dict:
        """Send one request and return its checked reply (``result`` or ``error`` inside)."""
        self._next_id += 1
        request_id = self._next_id
        message = json.loads(era_request(self.era, request_id, method, params))
        self.exchanges.append(Exchange(message))
        with anyio.move_on_after(self.reply_timeout):
            status, said, found = await self._post(message, _reply_to(request_id))
            reply = self._reply(request_id, method, status, said, found)
            self.replies_checked += 1
            self.exchanges[-1].reply = reply
            return reply
        raise HttpError("reply_timeout", f"no reply to request {request_id} ({method}) within "
                        f"{self.reply_timeout:g} s", request_id=request_id)

    def _reply(self, request_id: int, method: str, status: int, said: str, found: list[bytes]) -> dict:
        what = f"request {request_id} ({method})"
        parsed = []
        for raw in found:
            try:
                parsed.append((raw, json.loads(raw)))
            except ValueError:
                code = "http_status" if status >= 400 else "http_body"
                raise HttpError(code, f"{said} to {what}: the body is not JSON: {shown(raw)}") from None
        for raw, message in parsed:
            if isinstance(message, dict) and "method" in message:
                self.received.append(message)  # a notification (or request) the server sent on its own
                continue
            if status >= 400 and isinstance(message, dict) and message.get("id") is None and "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                raise HttpError("http_status", f"{said} to {what}: error {error.get('code')} "
                                f"{str(error.get('message'))[:60]}")
            return check_reply(raw, request_id)
        raise HttpError("http_status", f"{said} with no reply to {what}")
