"""In-process: the checks of tests/stdio/test_stateless_wire.py's subject that start no process."""
import json
import typing
import mcp.client.sse
import mcp.server.sse
import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp_types import methods
from course_lib.paths import fixture
from course_lib.protocol import LEGACY_VERSION, MODERN_VERSION

pytestmark = pytest.mark.anyio

FACTS = json.loads(fixture("stateless", "wire_facts.json").read_text(encoding="utf-8"))


def test_what_the_revision_retires_in_the_sdks_tables():
    tables = {"roots/list": methods.SERVER_REQUESTS, "sampling/createMessage": methods.SERVER_REQUESTS,
              "elicitation/create": methods.SERVER_REQUESTS, "logging/setLevel": methods.CLIENT_REQUESTS,
              "notifications/message": methods.SERVER_NOTIFICATIONS}
    # the request types an input_required result may carry as its questions
    questions = typing.get_args(typing.get_args(typing.get_args(
        types.InputRequiredResult.model_fields["input_requests"].annotation)[0])[1])
    inside = {cls.model_fields["method"].default for cls in questions}
    docs = {**methods.MONOLITH_REQUESTS, **methods.MONOLITH_NOTIFICATIONS}
    for row in FACTS["retired_messages"]:
        message, table = row["message"], tables[row["message"]]
        doc = docs[message].__doc__ or ""
        says = ("deprecated" if "Deprecated in 2026-07-28" in doc
                else "removed" if "Removed in protocol 2026-07-28" in doc else "not marked")
        assert ((message, LEGACY_VERSION) in table, (message, MODERN_VERSION) in table, message in inside, says) \
            == (row["alone_2025"], row["alone_2026"], row["in_input_requests"], row["sdk_says"]), message
    assert types.LOG_LEVEL_META_KEY == FACTS["log_level_meta_key"]


def test_the_old_http_sse_transport_still_ships_and_holds_a_stream_per_session():
    want = FACTS["old_http_sse"]
    shipped = {"mcp.client.sse.sse_client": hasattr(mcp.client.sse, "sse_client"),
               "mcp.server.sse.SseServerTransport": hasattr(mcp.server.sse, "SseServerTransport"),
               "MCPServer.sse_app": hasattr(MCPServer, "sse_app"),
               "Server.sse_app": hasattr(Server, "sse_app"),
               "Server.streamable_http_app": hasattr(Server, "streamable_http_app")}
    assert shipped == want["shipped"]
    annotation = mcp.server.sse.SseServerTransport.__annotations__["_read_stream_writers"]
    assert str(annotation) == want["session_streams_annotation"]
    assert mcp.client.sse._extract_session_id_from_endpoint(want["endpoint"]) == want["session_id"]
