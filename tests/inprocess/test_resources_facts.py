"""Facts chapter 04 states and no longer proves in its cells, each against a fixed oracle:
the one rule for "not found" (``course_lib.uris.missing`` / ``judge_missing``, the spec's text), the
chapter's visible allowlist handler against the hand-written URI rows in both eras, ``MCPServer``'s
one-page lists and its not-found, ``ctx.protocol_version`` per era, and the ``str`` URI fields of
SDK 2.3.0. The in-memory ``Client(server)`` pair runs the SDK's real server code."""
import json
import logging

import mcp_types as types
import nbformat
import pytest
from mcp import Client, MCPError
from mcp.server import Server

from course_lib.paths import NOTEBOOKS, fixture
from course_lib.uris import is_not_found, judge_missing, missing

pytestmark = pytest.mark.anyio

EXPECTED = json.loads(fixture("atlas", "expected.json").read_text(encoding="utf-8"))
NAMES = {r["uri"]: r["name"] for r in EXPECTED["resources"]}
BASE = "project://atlas/docs/"
ERAS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


# -- the one rule ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version, code", [("2025-11-25", -32002), ("2026-07-28", -32602), (None, -32002)])
def test_the_server_answer_is_the_eras_code_with_data_uri(version, code):
    error = missing(BASE + "x", version).error
    assert (error.code, error.message, error.data) == (code, "Resource not found", {"uri": BASE + "x"})


@pytest.mark.parametrize("era, code, data, verdict", [
    ("legacy", -32002, {"uri": BASE + "x"}, None),
    ("legacy", -32602, {"uri": BASE + "x"}, None),          # MCPServer's answer, recognised in both eras
    ("2026-07-28", -32602, {"uri": BASE + "x"}, None),
    ("2026-07-28", -32002, {"uri": BASE + "x"}, "MUST NOT"),  # retired at 2026-07-28
    ("legacy", -32602, None, "not a not-found answer"),     # a bad cursor, say
    ("legacy", -32603, {"uri": BASE + "x"}, "not a not-found answer"),
    ("legacy", -32002, {"uri": BASE + "y"}, "data.uri must name the URI as sent"),
])
def test_the_rule_judges_every_answer(era, code, data, verdict):
    said = judge_missing(MCPError(code, "Resource not found", data), era, BASE + "x")
    assert (said is None) if verdict is None else (verdict in said), said


def test_a_client_recognises_both_codes():
    assert is_not_found(MCPError(-32002, "Resource not found", {"uri": BASE}))
    assert is_not_found(MCPError(-32602, "Resource not found", {"uri": BASE}))
    assert not is_not_found(MCPError(-32602, "Invalid cursor", {"cursor": "c1"}))


# -- the chapter's visible handler ----------------------------------------------------------------

def chapter_handler():
    """The chapter's cell ``fix-server-handler``, run as the chapter runs it (its imports cell first)."""
    nb = nbformat.read(NOTEBOOKS / "04_resources_and_uris.ipynb", as_version=4)
    source = {c.get("id"): c.source for c in nb.cells}
    namespace: dict = {}
    exec(source["75e31536"], namespace)  # the imports cell: json, types, MCPError, missing, BASE, DOCS ...
    exec(source["fix-server-handler"], namespace)
    return namespace["cell_server"]


@pytest.mark.parametrize("era", list(ERAS))
async def test_the_chapters_allowlist_handler_answers_every_row_as_written_by_hand(era):
    rows = [row for row in EXPECTED["uri_rows"] if row["group"] != "normalised"]
    assert len(rows) == 14
    async with Client(chapter_handler(), mode=era) as client:
        for row in rows:
            try:
                result = await client.read_resource(row["uri"])
            except MCPError as exc:
                assert row["sdk_2_3_0"] == "not-found", row["uri"]
                assert judge_missing(exc, era, row["uri"]) is None, (row["uri"], exc.error)
                assert exc.error.code == EXPECTED["not_found"]["classic"][era]
            else:
                assert row["sdk_2_3_0"] == "ok:" + NAMES[result.contents[0].uri], row["uri"]


# -- MCPServer, ctx.protocol_version, the uri fields -------------------------------------------------

@pytest.mark.parametrize("era", list(ERAS))
async def test_mcpserver_lists_sixty_in_one_page_and_answers_minus_32602_with_data_uri(era):
    from mcp.server import MCPServer
    from mcp.server.mcpserver.prompts import Prompt
    from mcp.server.mcpserver.resources import TextResource

    high = MCPServer("atlas-high-level")
    for n in range(60):
        high.add_resource(TextResource(uri=f"{BASE}n{n}", name=f"n{n}", text=f"document {n}"))
        high.add_prompt(Prompt.from_function(lambda: "review", name=f"review-{n}"))
    logging.getLogger("mcp.server.mcpserver").setLevel(logging.WARNING)
    async with Client(high, mode=era) as client:
        resources, prompts = await client.list_resources(), await client.list_prompts()
        with pytest.raises(MCPError) as missed:
            await client.read_resource(BASE + "missing")
    assert (len(resources.resources), len(prompts.prompts)) == (60, 60)
    assert (resources.next_cursor, prompts.next_cursor) == (None, None)
    assert (missed.value.error.code, missed.value.error.data) == (-32602, {"uri": BASE + "missing"})
    assert judge_missing(missed.value, era, BASE + "missing") is None  # the rule allows it in both eras


@pytest.mark.parametrize("era, version", list(ERAS.items()))
async def test_ctx_protocol_version_names_the_requests_era(era, version):
    async def on_read(ctx, params) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=ctx.protocol_version)])

    async with Client(Server("era-in-a-handler", on_read_resource=on_read), mode=era) as client:
        assert (await client.read_resource(BASE + "design")).contents[0].text == version


def test_resource_uris_are_plain_str_in_sdk_2_3_0():
    for model in (types.ReadResourceRequestParams, types.Resource, types.TextResourceContents):
        assert model.model_fields["uri"].annotation is str, model
