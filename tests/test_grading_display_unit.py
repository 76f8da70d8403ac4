"""The graders' judging and the display helpers, without any server: expected values by hand."""
import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib import CatalogError
from course_lib.display import Table, error_line, wire_table
from course_lib.grading.core import Scenario, Scorecard, Verdict, judge_names, observe
from course_lib.labs import Wire
from course_lib.walker import Catalog

pytestmark = pytest.mark.anyio

NAMES = {"names": ["alpha", "beta"]}
RAISES = {"raises": True}


# -- display ----------------------------------------------------------------------------------

def test_table_pads_columns_to_their_widest_cell_and_strips_line_ends():
    table = Table(["a", "long column"], [["x", None], ["wider", 3]], "Title")
    assert table.text() == ("Title\n"
                            "a      long column\n"
                            "-----  -----------\n"
                            "x\n"
                            "wider  3")
    assert repr(table) == table.text()
    assert Table(["only"], []).text() == "only\n----"


def test_error_line_has_the_type_the_reason_or_the_code_and_one_line():
    assert error_line(CatalogError("page_budget", "no last page within 2 pages")) == \
        "CatalogError(page_budget): no last page within 2 pages"
    assert error_line(MCPError(types.INVALID_PARAMS, "Invalid cursor")) == "MCPError -32602: Invalid cursor"
    assert error_line(KeyError("x")) == "KeyError: 'x'"


def test_wire_table_labels_cursors_in_order_of_appearance():
    wire = Wire()
    wire.record("→", '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')
    wire.record("←", '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"alpha"}],"nextCursor":"opaque-9"}}')
    wire.record("→", '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"opaque-9"}}')
    wire.record("←", '{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid cursor"}}')
    wire.record("←", "hello from print()")
    assert wire_table(wire).text() == (
        "#  dir  kind     method / id  summary\n"
        "-  ---  -------  -----------  -----------------------------\n"
        "0  →    request  tools/list\n"
        "1  ←    result   id=1         tools=['alpha'] nextCursor=c1\n"
        "2  →    request  tools/list   cursor=c1\n"
        "3  ←    error    id=2         error -32602: Invalid cursor\n"
        "4  ←    noise                 hello from print()")


# -- judging a walker's outcome ----------------------------------------------------------------

@pytest.mark.parametrize("expect, kind, value, verdict", [
    (NAMES, "returned", ["alpha", "beta"], (True, "returned ['alpha', 'beta']")),
    (NAMES, "returned", ["beta", "alpha"], (False, "returned ['beta', 'alpha']")),  # order matters
    (NAMES, "returned", (["alpha", "beta"], [1, 1]), (True, "returned ['alpha', 'beta']")),  # (items, sizes)
    (NAMES, "returned", "alpha beta", (False, "returned str, not a list of names")),
    (NAMES, "returned", None, (False, "returned NoneType, not a list of names")),
    (RAISES, "returned", ["alpha"], (False, "returned a partial catalog ['alpha'] instead of raising")),
    (RAISES, "returned", [], (False, "returned a partial catalog [] instead of raising")),
    (RAISES, "raised", None, (True, "raised CatalogError(duplicate_name): x")),
    (NAMES, "raised", None, (False, "raised CatalogError(duplicate_name): x")),
    (RAISES, "hung", None, (False, "no result within 1 s")),
])
def test_judge_names(expect, kind, value, verdict):
    observed = {"returned": "", "raised": "raised CatalogError(duplicate_name): x", "hung": "no result within 1 s"}
    assert judge_names(expect, kind, observed[kind], value) == verdict


def test_judge_names_reads_tools_and_catalogs():
    tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in ("alpha", "beta")]
    assert judge_names(NAMES, "returned", "", tools) == (True, "returned ['alpha', 'beta']")
    assert judge_names(NAMES, "returned", "", Catalog("tools", tuple(tools), (2,))) == \
        (True, "returned ['alpha', 'beta']")


# -- observing a student's call under a budget -------------------------------------------------

async def test_observe_returns_raises_and_hangs():
    async def returns():
        return ["alpha"]

    async def course_error():
        raise CatalogError("cursor_repeated", "the server sent a cursor it had already sent (page 2)")

    async def protocol_error():
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor")

    async def own_bug():
        raise NotImplementedError("write your walker here")

    never = anyio.Event()

    async def hangs():
        await never.wait()

    assert await observe(returns, 5) == ("returned", "", ["alpha"])
    kind, line, value = await observe(course_error, 5)
    assert (kind, line, value.reason) == \
        ("raised", "raised CatalogError(cursor_repeated): the server sent a cursor it had already sent (page 2)",
         "cursor_repeated")
    assert (await observe(protocol_error, 5))[:2] == ("raised", "raised MCPError -32602: Invalid cursor")
    assert (await observe(own_bug, 5))[:2] == ("raised", "raised NotImplementedError: write your walker here")
    assert await observe(hangs, 0.05) == ("hung", "no result within 0.05 s (a loop that never ends?)", None)


# -- the scorecard -----------------------------------------------------------------------------

def scenario(name, era="legacy", expect=NAMES, hint="read every page"):
    return Scenario(name, era, "catalog", "normal", expect, hint)


def test_a_scorecard_that_passes_is_short():
    card = Scorecard("Walker", [Verdict(scenario("normal"), True, "returned ['alpha', 'beta']"),
                                Verdict(scenario("normal", "2026-07-28"), True, "returned ['alpha', 'beta']")])
    assert card.passed and card.failures() == []
    assert card.text() == ("Walker\n"
                           "scenario  era         verdict\n"
                           "--------  ----------  -------\n"
                           "normal    legacy      PASS\n"
                           "normal    2026-07-28  PASS\n"
                           "2/2 scenarios pass — well done.")
    assert repr(card) == card.text()


def test_a_failing_scorecard_explains_each_failure_only():
    ok = Verdict(scenario("normal"), True, "returned ['alpha', 'beta']")
    bad = Verdict(scenario("repeat", expect=RAISES, hint="remember cursors"), False, "no result within 3 s")
    card = Scorecard("Walker", [ok, bad])
    assert not card.passed and card.failures() == [bad]
    assert card.verdict_of("repeat") is bad and card.verdict_of("normal", "legacy") is ok
    with pytest.raises(KeyError):
        card.verdict_of("normal", "2026-07-28")
    assert card.text() == (
        "Walker\n"
        "scenario  era     verdict  expected                   observed              hint\n"
        "--------  ------  -------  -------------------------  --------------------  ----------------\n"
        "normal    legacy  PASS\n"
        "repeat    legacy  FAIL     raises an error (no list)  no result within 3 s  remember cursors\n"
        "1/2 scenarios pass")
