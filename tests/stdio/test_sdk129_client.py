"""What changed for a client between SDK 1.29.0 and 2.3.0, and what did not (chapters 00-02).

Each name is asked of both interpreters: the course's second environment ``.venv-sdk129`` (1.29.0)
and this one (2.3.0); the 1.29.0 client is a real ``ClientSession`` (``course_lib.sdk129.client``).
The expectations are the hand-written ``fixtures/sdk129/client.json``. ``fixtures/sdk_changes/00.json``,
``01.json`` and ``02.json`` name these tests, one row a change.
"""
from __future__ import annotations

import functools
import inspect
import json
import subprocess
import sys

import pytest
from mcp import ClientSession, MCPError, types

from course_lib import connect, sdk129
from course_lib.paths import FIXTURES

ORACLE = json.loads((FIXTURES / "sdk129" / "client.json").read_text())

HAS = """import importlib, json, sys
def has(module, path):
    try:
        obj = importlib.import_module(module)
        for part in path.split("."):
            obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
        return True
    except (ImportError, AttributeError, KeyError):
        return False
print(json.dumps([has(*name.split(":")) for name in sys.argv[1:]]))"""


def present(interpreter, names: list[str]) -> dict[str, bool]:
    out = subprocess.run([str(interpreter), "-c", HAS, *names], capture_output=True, text=True, check=True)
    return dict(zip(names, json.loads(out.stdout)))


@functools.cache
def _both() -> dict[str, list[bool]]:
    """Every name of the oracle, asked of each interpreter once (an interpreter start imports mcp)."""
    names = list(ORACLE["names"])
    old, new = present(sdk129.python(), names), present(sys.executable, names)
    return {name: [old[name], new[name]] for name in names}


def in_both(*names: str) -> dict[str, list[bool]]:
    return {name: _both()[name] for name in names}


def expected(*names: str) -> dict[str, list[bool]]:
    return {name: ORACLE["names"][name] for name in names}


def test_mcperror_replaces_mcperror_of_1_29_0():
    assert in_both("mcp:McpError", "mcp:MCPError") == expected("mcp:McpError", "mcp:MCPError")


def test_low_level_handlers_are_constructor_arguments_not_decorators():
    assert in_both("mcp.server.lowlevel:Server.list_tools") == expected("mcp.server.lowlevel:Server.list_tools")
    from mcp.server import Server
    assert "on_list_tools" in inspect.signature(Server).parameters


def test_fastmcp_is_now_mcpserver():
    names = ("mcp.server.fastmcp:FastMCP", "mcp.server:MCPServer")
    assert in_both(*names) == expected(*names)


def test_the_client_class_is_new_in_2_3_0():
    assert in_both("mcp:Client") == expected("mcp:Client")


def test_python_fields_are_snake_case_and_the_wire_stays_camel_case():
    names = ("mcp.types:ListToolsResult.model_fields.next_cursor",
             "mcp.types:ListToolsResult.model_fields.nextCursor")
    assert in_both(*names) == expected(*names)
    from mcp import types
    wire = types.ListToolsResult(tools=[], next_cursor="c").model_dump(by_alias=True, exclude_none=True)
    assert wire["nextCursor"] == "c" and "next_cursor" not in wire


def parameters(signature) -> list[str]:
    return [name for name in signature.parameters if name != "self"]


@pytest.mark.anyio
async def test_list_tools_takes_only_params_in_2_3_0():
    (api, _) = await sdk129.client("catalog", [{"op": "api"}])
    old = api["result"]["list_tools"]  # the 1.29.0 signature, as text
    old_names = [p.split(":")[0].strip() for p in old.split(" -> ")[0].strip("()").split(", ")
                 if p.split(":")[0].strip() not in ("self", "*")]
    assert {"1.29.0": old_names, "2.3.0": parameters(inspect.signature(ClientSession.list_tools))} \
        == ORACLE["list_tools_parameters"]


@pytest.mark.anyio
async def test_neither_sdk_has_a_call_that_drains_all_pages():
    (api, _) = await sdk129.client("catalog", [{"op": "api"}])
    assert {"1.29.0": api["result"]["list_all_tools"], "2.3.0": hasattr(ClientSession, "list_all_tools")} \
        == ORACLE["list_all_tools"]


@pytest.mark.anyio
async def test_a_1_29_0_session_sends_the_empty_string_cursor_back_as_2_3_0_does():
    (walked, _) = await sdk129.client("catalog", [{"op": "walk_tools"}], mode="empty-token")
    pages = walked["result"]["pages"]
    assert {"tools": [page["tools"] for page in pages], "cursor_of_page_1": pages[0]["nextCursor"]} \
        == ORACLE["empty_token_pages"]


async def trusting_2_3_0(mode: str) -> dict:
    async with connect("catalog", mode=mode) as lab:
        names, cursor, ends = [], None, "no end"
        try:
            for _ in range(50):
                page = await lab.session.list_tools(params=None if cursor is None else
                                                    types.PaginatedRequestParams(cursor=cursor))
                names += [tool.name for tool in page.tools]
                if (cursor := page.next_cursor) is None:
                    ends = names
                    break
        except MCPError as exc:
            ends = exc.error.code
    return {"requests": len(lab.wire.requests("tools/list")), "ends": ends}


async def trusting_1_29_0(mode: str) -> dict:
    (run, _) = await sdk129.client("catalog", [{"op": "walk_tools", "max_pages": 50}], mode=mode)
    pages, error = (run["result"] or {}).get("pages", []), run["error"]
    if error:
        return {"requests": len(pages) + 1, "ends": error["code"], "type": error["type"]}
    ends = [n for page in pages for n in page["tools"]] if pages[-1]["nextCursor"] is None else "no end"
    return {"requests": len(pages), "ends": ends}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", list(ORACLE["trusting_loop"]))
async def test_neither_sdk_checks_cursors_or_names(mode):
    want = ORACLE["trusting_loop"][mode]
    assert await trusting_2_3_0(mode) == want
    old = await trusting_1_29_0(mode)
    assert old.pop("type", "McpError") == "McpError"  # 1.29.0's name for the same error
    assert old == want
