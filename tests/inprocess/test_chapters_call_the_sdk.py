"""Every chapter shows the MCP Python SDK itself, not only ``course_lib``: at least one visible code
cell (not a hidden reference solution) calls the SDK directly, so a student sees the calls a
robust client or server is made of."""
import re

import nbformat
import pytest

from course_lib.tooling import presentation as P

# What counts as a direct SDK call: a session or client method, the SDK's own imports, types,
# errors, transports and server class.
SDK_CALL = re.compile(r"(\bsession\.\w+\(|\.session\.\w+\(|\.client\.\w+\(|\bfrom mcp\b|\bimport mcp\b"
                      r"|\bmcp_types\b|\bMCPError\b|\bServer\(|\bstdio_client\b|\bClientSession\b)")


def visible_code(path):
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells
            if c.cell_type == "code" and "solution" not in c.metadata.get("tags", [])]


@pytest.mark.parametrize("path", P.chapters(), ids=lambda p: p.stem)
def test_the_chapter_calls_the_sdk_in_a_visible_cell(path):
    calls = [m.group(0) for source in visible_code(path) for m in SDK_CALL.finditer(source)]
    assert calls, f"{path.name}: no visible code cell calls the MCP SDK directly"


def test_the_pattern_tells_an_sdk_call_from_a_course_lib_call():
    assert SDK_CALL.search("page = await lab.session.list_tools(params=request)")
    assert SDK_CALL.search("from mcp import ClientSession, StdioServerParameters")
    assert not SDK_CALL.search("catalog = await walk(lab)")
    assert not SDK_CALL.search('async with connect("catalog") as lab:')
