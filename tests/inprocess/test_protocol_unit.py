"""In-process: the checks of tests/stdio/test_protocol.py's subject that start no process."""
from __future__ import annotations
import typing

import mcp_types
import pytest
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.server import Server
from mcp.shared import inbound
from mcp_types import version
from mcp_types._v2026_07_28 import RequestMetaObject

from course_lib import protocol


def test_versions_are_the_sdks_latest_of_each_era():
    assert protocol.LEGACY_VERSION == version.LATEST_HANDSHAKE_VERSION
    assert protocol.LEGACY_VERSION in version.HANDSHAKE_PROTOCOL_VERSIONS
    assert protocol.MODERN_VERSION == version.LATEST_MODERN_VERSION == version.LATEST_PROTOCOL_VERSION
    assert protocol.MODERN_VERSION in version.MODERN_PROTOCOL_VERSIONS


def test_eras_are_the_client_modes_the_sdk_accepts():
    named_modes = typing.get_args(typing.get_args(ConnectMode)[0])
    assert (protocol.LEGACY, protocol.AUTO) == named_modes
    assert set(protocol.ERAS) == {*named_modes, protocol.MODERN_VERSION}
    assert protocol.BOTH_ERAS == (protocol.LEGACY, protocol.MODERN_VERSION)
    for era in protocol.ERAS:
        assert Client(Server("vocabulary"), mode=era).mode == era
    with pytest.raises(ValueError, match="handshake-era version"):
        Client(Server("vocabulary"), mode=protocol.LEGACY_VERSION)


SDK_CODES = ["PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
             "UNSUPPORTED_PROTOCOL_VERSION", "CONNECTION_CLOSED", "REQUEST_TIMEOUT"]


@pytest.mark.parametrize("name", SDK_CODES)
def test_error_codes_are_the_sdks(name):
    assert getattr(protocol, name) == getattr(mcp_types, name)


def test_resource_not_found_is_a_retired_code_the_sdk_never_reuses():
    # The SDK names no constant for -32002: the 2026-07-28 allocation retired it. It must sit in
    # the JSON-RPC server-error band and collide with none of the codes the SDK does define.
    sdk_codes = {value for name, value in vars(mcp_types.jsonrpc).items()
                 if name.isupper() and type(value) is int}
    assert {-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32022} <= sdk_codes
    assert protocol.RESOURCE_NOT_FOUND not in sdk_codes
    assert -32099 <= protocol.RESOURCE_NOT_FOUND <= -32000


def test_envelope_keys_and_headers_are_the_sdks():
    assert protocol.META_PROTOCOL_VERSION == mcp_types.PROTOCOL_VERSION_META_KEY
    assert protocol.META_CLIENT_CAPABILITIES == mcp_types.CLIENT_CAPABILITIES_META_KEY
    assert protocol.META_CLIENT_INFO == mcp_types.CLIENT_INFO_META_KEY
    assert protocol.META_SERVER_INFO == mcp_types.SERVER_INFO_META_KEY
    fields = RequestMetaObject.model_fields.values()  # the 2026-07-28 schema's request ``_meta``
    assert {f.alias for f in fields if f.is_required()} < set(protocol.ENVELOPE_KEYS) < {f.alias for f in fields}
    assert protocol.HEADER_PROTOCOL_VERSION == inbound.MCP_PROTOCOL_VERSION_HEADER
    assert protocol.HEADER_METHOD == inbound.MCP_METHOD_HEADER
    assert protocol.HEADER_NAME == inbound.MCP_NAME_HEADER
