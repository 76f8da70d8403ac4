"""Chapter 06's signed-cursor server, beyond the chapter's own cells, on real stdio servers.

The oracle is ``fixtures/servers/signed_cursors.json``, written by hand. The server is the chapter's
own text (``SERVER_TOP``, ``SERVER_LOOP``, ``MINT``, ``REFUSE``, ``READ``, copied from its cells as they
are): it pages the same cursors in both eras and a second process of it honours them; the course's
catalog server refuses what it refuses; the same rules written the SDK 1.29.0 way (decorator,
camelCase fields, ``McpError(ErrorData(...))``) and run by the real 1.29.0 interpreter answer the
same pages and refusals; 2.3.0 has neither the decorator nor ``McpError``; ``MCPServer`` does not page.
"""
import ast
import subprocess
import sys

import mcp.types as types
import nbformat
import pytest
from mcp import MCPError
from mcp.server import Server
from mcp.types import PaginatedRequestParams

from course_lib import connect, sdk129, walk
from course_lib.paths import NOTEBOOKS, fixture
from course_lib.protocol import BOTH_ERAS
from course_lib.scenarios import gather

pytestmark = pytest.mark.anyio
ORACLE = __import__("json").loads(fixture("servers", "signed_cursors.json").read_text(encoding="utf-8"))

# The chapter's server loop and refusal, as SDK 1.29.0 spelled them.
REFUSE_129 = """
import mcp.types as types
from mcp.shared.exceptions import McpError

def refuse(message, cursor):
    error = types.ErrorData(code=types.INVALID_PARAMS, message=message, data={"cursor": cursor})
    raise McpError(error)
"""
SERVER_LOOP_129 = """
catalog, served = Catalog(args.name, args.key.encode(), list(FIRST)), 0
server = Server(args.name, version="1.0")

@server.list_tools()
async def list_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
    global served
    if served == 1 and args.change:  # the catalog moves on before the second request
        catalog.generation, catalog.names = 2, CHANGES[args.change]
    served += 1
    cursor = request.params.cursor if request.params else None
    names, next_cursor = page(cursor, catalog)
    tools = [types.Tool(name=n, inputSchema={"type": "object"}) for n in names]
    return types.ListToolsResult(tools=tools, nextCursor=next_cursor)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


def chapter_texts() -> dict[str, str]:
    """The server texts the chapter's cells assign (``NAME = \"\"\"...\"\"\"``)."""
    nb = nbformat.read(NOTEBOOKS / "06_paginating_server.ipynb", as_version=4)
    texts = {}
    for cell in nb.cells:
        for node in ast.parse(cell.source).body if cell.cell_type == "code" else ():
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                texts[node.targets[0].id] = node.value.value
    return texts


def server_file(tmp_path, name: str, refuse: str, loop: str, python=sys.executable) -> list[str]:
    texts = chapter_texts()
    path = tmp_path / f"{name}.py"
    path.write_text(texts["MINT"] + refuse + texts["READ"] + texts["SERVER_TOP"] + loop, encoding="utf-8")
    return [str(python), str(path)]


def signed_server(tmp_path) -> list[str]:
    texts = chapter_texts()
    return server_file(tmp_path, "paging", texts["REFUSE"], texts["SERVER_LOOP"])


def tamper(cursor: str) -> str:  # the chapter's: its last character changed
    return cursor[:-1] + ("0" if cursor[-1] != "0" else "1")


async def answer(lab, cursor):
    """The page's names, or (code, message) of the error it got."""
    try:
        result = await lab.session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        return [t.name for t in result.tools]
    except MCPError as exc:
        return [exc.error.code, exc.error.message]


def on_129(source: str) -> str:
    """What ``source`` prints in the real SDK 1.29.0 interpreter."""
    done = subprocess.run([str(sdk129.python()), "-c", source], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def test_a_1_29_0_server_keeps_the_same_rules_in_its_own_spelling(tmp_path):
    servers = {"2.3.0": signed_server(tmp_path),
               "1.29.0": server_file(tmp_path, "paging_129", REFUSE_129, SERVER_LOOP_129, sdk129.python())}

    async def run(sdk, name):
        async with connect(servers[sdk], args=["--change", "remove"] if name == "expired" else []) as lab:
            if name == "walk":
                catalog = await walk(lab)
                return {"names": catalog.names, "pages": list(catalog.page_sizes)}
            first = (await lab.session.list_tools()).next_cursor
            return await answer(lab, {"forged": "not-a-cursor", "tampered": tamper(first), "expired": first}[name])

    names = ["walk", *ORACLE["refused"]]
    runs = await gather({(sdk, name): (lambda s=sdk, n=name: run(s, n)) for sdk in servers for name in names}, limit=2)
    expected = {"walk": ORACLE["walk"], **ORACLE["refused"]}
    assert runs == {(sdk, name): expected[name] for sdk in servers for name in names}


def test_the_list_handler_is_a_constructor_argument_not_a_decorator():
    assert "on_list_tools" in __import__("inspect").signature(Server).parameters
    assert not hasattr(Server, "list_tools")  # 1.29.0's @server.list_tools() is gone
    assert on_129("from mcp.server.lowlevel import Server; print(callable(Server.list_tools))") == "True"


def test_fields_are_snake_case_in_python_and_camel_case_on_the_wire():
    result = types.ListToolsResult(tools=[types.Tool(name="a", input_schema={"type": "object"})], next_cursor="c")
    assert (result.next_cursor, result.tools[0].input_schema) == ("c", {"type": "object"})
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert wire["nextCursor"] == "c" and wire["tools"][0]["inputSchema"] == {"type": "object"}
    assert on_129("import mcp.types as t; r = t.ListToolsResult(tools=[], nextCursor='c'); "
                  "print(r.nextCursor, hasattr(r, 'next_cursor'))") == "c False"


def test_a_refusal_is_mcperror_with_code_message_data():
    error = MCPError(types.INVALID_PARAMS, "Invalid cursor", {"cursor": "x"}).error
    assert (error.code, error.message, error.data) == (-32602, "Invalid cursor", {"cursor": "x"})
    import mcp.shared.exceptions as exceptions
    assert not hasattr(exceptions, "McpError")  # 1.29.0's McpError(ErrorData(...)) is gone
    assert on_129("from mcp.shared.exceptions import McpError; from mcp.types import ErrorData; "
                  "print(McpError(ErrorData(code=-32602, message='m')).error.code)") == "-32602"


async def test_the_signed_server_sends_the_same_pages_and_cursors_in_both_eras(tmp_path):
    argv = signed_server(tmp_path)

    async def pages(era):
        async with connect(argv, era=era) as lab:
            out, cursor = [], None
            while True:
                params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
                result = await lab.session.list_tools(params=params)
                out.append(([t.name for t in result.tools], result.next_cursor))
                if (cursor := result.next_cursor) is None:
                    return out

    both = await gather({era: (lambda e=era: pages(e)) for era in BOTH_ERAS}, limit=2)
    legacy, modern = both.values()
    assert legacy == modern  # the same cursors, byte for byte
    assert [[names, nxt is not None] for names, nxt in legacy] == ORACLE["pages"]


async def test_a_signed_cursor_is_honoured_by_a_second_process_of_the_same_server(tmp_path):
    argv = signed_server(tmp_path)
    async with connect(argv) as first:
        cursor = (await first.session.list_tools()).next_cursor
    async with connect(argv) as second:
        assert await answer(second, cursor) == ORACLE["second process"]


async def test_replay_is_stable_on_the_catalog_server_and_the_signed_server(tmp_path):
    for server in ("catalog", signed_server(tmp_path)):
        async with connect(server) as lab:
            cursor = (await lab.session.list_tools()).next_cursor
            page_2 = await lab.session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            page_2_again = await lab.session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        assert page_2_again.model_dump() == page_2.model_dump(), server  # the same page, the same next cursor


async def test_the_catalog_server_refuses_what_the_signed_server_refuses_and_another_process_s_cursor():
    spec = ORACLE["catalog server"]
    async with connect("catalog") as other:
        carried = (await other.session.list_tools()).next_cursor

    async def run(name):
        async with connect("catalog", mode="change" if name == "expired" else "normal") as lab:
            if name == "walk":
                return (await walk(lab)).names
            first = (await lab.session.list_tools()).next_cursor
            cursor = {"forged": "not-a-cursor", "tampered": tamper(first), "expired": first}.get(name, carried)
            return (await answer(lab, cursor))[0]

    runs = await gather({name: (lambda n=name: run(n)) for name in ["walk", *spec["refused"]]}, limit=2)
    assert runs == {"walk": spec["walk"], **{name: spec["code"] for name in spec["refused"]}}
