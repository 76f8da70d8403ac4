"""The graders' judging and the display helpers, without any server: expected values by hand."""
import signal
import time

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib import CatalogError
from course_lib.display import Table, cell_kind, error_line, fit_widths, wire_table, wrap_cell
from course_lib.grading import outcome as o
from course_lib.grading.core import CRASH, FAILURES, HANG, LAB, MISSING_REFUSAL, STARTER_HINT, WRONG_REFUSAL, \
    WRONG_RESULT, Scenario, Scorecard, Verdict, hint_for, judge_names, judge_on_wire, load_battery, observe
from course_lib.wire import Wire
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


def test_a_wide_table_wraps_its_widest_columns_inside_100_characters():
    hint = "stop when a cursor comes back: keep every cursor you sent in a set, and refuse a repeat"
    table = Table(["scenario", "era", "verdict", "observed", "hint"],
                  [["repeat", "legacy", "FAIL", "returned a partial catalog ['alpha'] instead of raising", hint],
                   ["normal", "2026-07-28", "PASS", "", ""]])
    # 92 characters for the cells: 25 for the three short columns, 67 shared by the two long ones
    # (33 each, the one spare character to the left one).
    assert table.text() == (
        "scenario  era         verdict  observed                            hint\n"
        "--------  ----------  -------  ----------------------------------  ---------------------------------\n"
        "repeat    legacy      FAIL     returned a partial catalog          stop when a cursor comes back:\n"
        "                               ['alpha'] instead of raising        keep every cursor you sent in a\n"
        "                                                                   set, and refuse a repeat\n"
        "normal    2026-07-28  PASS")
    assert max(len(line) for line in table.lines()) == 100
    assert table.text() == Table(table.columns, table.rows).text(), "deterministic"


def test_a_message_too_long_for_its_column_goes_under_the_table():
    message = ("MCPError -32602: Invalid cursor: the cursor was issued by another server process, whose "
               "catalog generation differs from this one; restart the walk from the first page and report "
               "which check refused it")
    table = Table(["case", "outcome", "why it matters"],
                  [["foreign", message, "a cursor is bound to the process that issued it and to its catalog"]],
                  "Cursors", notes=["Rows are in the order the cases ran."])
    # In a 45-character column the message needs 5 lines (more than 4): it moves under the table.
    assert table.text() == (
        "Cursors\n"
        "case     outcome   why it matters\n"
        "-------  --------  ------------------------------------------------------------------\n"
        "foreign  (note 1)  a cursor is bound to the process that issued it and to its catalog\n"
        "\n"
        "note 1: MCPError -32602: Invalid cursor: the cursor was issued by another server process, whose\n"
        "  catalog generation differs from this one; restart the walk from the first page and report which\n"
        "  check refused it\n"
        "Rows are in the order the cases ran.")
    shorter = Table(["case", "outcome"], [["foreign", message[:160]]])
    assert "(note" not in shorter.text(), "a message that fits in 4 lines stays in its cell"


def test_wrapping_helpers():
    assert wrap_cell("short", 10) == ["short"]
    assert wrap_cell("two words", 5) == ["two", "words"]
    assert wrap_cell("abcdefghij", 4) == ["abcd", "efgh", "ij"], "a word longer than its column is cut"
    assert wrap_cell("one\ntwo", 10) == ["one", "two"], "line breaks in a value are kept"
    assert fit_widths([3, 10, 50], [3, 4, 4], 100) == [3, 10, 50], "what fits stays natural"
    assert fit_widths([3, 40, 60], [3, 4, 4], 60) == [3, 29, 28], "the widest give way first, spare goes left"
    assert fit_widths([20, 20], [20, 20], 30) == [20, 20], "floors win: such a table stays wider"


def test_the_html_form_highlights_verdicts_and_refusals():
    assert [cell_kind(v) for v in ("PASS", "FAIL", "refused: CatalogError(x): y", "CatalogError(page_budget)",
                                   "MCPError -32602: bad", "error", "-32002 Resource not found", "ok", "passed")] == \
        ["pass", "fail", "refused", "refused", "refused", "refused", "refused", None, None]
    table = Table(["name", "verdict"], [["a<b", "PASS"], ["it's", "FAIL"]], "T & co", notes=["see 'below'"])
    cell = "padding:2px 8px; text-align:left; vertical-align:top; font-family:monospace; white-space:nowrap"
    assert table._repr_html_() == (
        "<table class='course-table' style='border-collapse:collapse; margin:4px 0'>"
        "<caption style='text-align:left; font-weight:bold; padding:2px 0'>T &amp; co</caption>"
        "<thead><tr>"
        "<th style='padding:2px 8px; text-align:left; vertical-align:top; font-family:monospace; "
        "border-bottom:1px solid #999; white-space:nowrap'>name</th>"
        "<th style='padding:2px 8px; text-align:left; vertical-align:top; font-family:monospace; "
        "border-bottom:1px solid #999; white-space:nowrap'>verdict</th>"
        "</tr></thead><tbody>"
        f"<tr><td style='{cell}'>a&lt;b</td>"
        f"<td class='course-pass' style='{cell}; background:#e6f4ea; color:#137333; font-weight:bold'>PASS</td></tr>"
        f"<tr><td style='{cell}'>it's</td>"
        f"<td class='course-fail' style='{cell}; background:#fce8e6; color:#a50e0e; font-weight:bold'>FAIL</td></tr>"
        "</tbody></table>"
        "<div class='course-note' style='white-space:pre-wrap; margin:2px 0'>see 'below'</div>")


def test_a_long_column_wraps_in_html_and_a_short_one_never_does():
    long = "x " * 20
    html = Table(["k", "v"], [["a", long]]).html()
    assert f"white-space:pre-wrap; overflow-wrap:anywhere; min-width:30ch; max-width:60ch'>{long}</td>" in html
    assert "min-width:20ch" in Table(["k", "v"], [["a", "x" * 20]]).html(), "never wider than its widest cell"
    assert "white-space:nowrap'>a</td>" in html


def test_ipython_shows_a_table_as_text_and_as_html():
    from IPython.core.formatters import DisplayFormatter

    table = Table(["a"], [["PASS"]])
    data, _ = DisplayFormatter().format(table)
    assert data == {"text/plain": "a\n----\nPASS", "text/html": table.html()}


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

REPEATED = {"raises": True, "refusal": {"type": "CatalogError", "reason": "cursor_repeated"}, "requests": 2}
EXPIRED = {"raises": True, "refusal": {"type": "MCPError", "code": -32602}}
REPEAT_ERROR = CatalogError("cursor_repeated", "a cursor came back")
BUDGET_ERROR = CatalogError("page_budget", "no last page within 32 pages")
CURSOR_ERROR = MCPError(types.INVALID_PARAMS, "Invalid cursor")


def outcome_of(kind, value):
    return {"returned": lambda: o.returned(value), "raised": lambda: o.raised(value),
            "crashed": lambda: o.crashed(value), "hung": lambda: o.hung(1)}[kind]()


@pytest.mark.parametrize("expect, kind, value, verdict", [
    (NAMES, "returned", ["alpha", "beta"], (True, "returned ['alpha', 'beta']", None)),
    (NAMES, "returned", ["beta", "alpha"], (False, "returned ['beta', 'alpha']", WRONG_RESULT)),  # order matters
    (NAMES, "returned", (["alpha", "beta"], [1, 1]), (True, "returned ['alpha', 'beta']", None)),  # (items, sizes)
    (NAMES, "returned", "alpha beta", (False, "returned str, not a list of names", WRONG_RESULT)),
    (NAMES, "returned", None, (False, "returned NoneType, not a list of names", WRONG_RESULT)),
    (RAISES, "returned", ["alpha"], (False, "returned a partial catalog ['alpha'] instead of raising",
                                     MISSING_REFUSAL)),
    (RAISES, "returned", [], (False, "returned a partial catalog [] instead of raising", MISSING_REFUSAL)),
    (RAISES, "raised", REPEAT_ERROR, (True, "raised CatalogError(cursor_repeated): a cursor came back", None)),
    (REPEATED, "raised", REPEAT_ERROR, (True, "raised CatalogError(cursor_repeated): a cursor came back", None)),
    (REPEATED, "raised", BUDGET_ERROR, (False, "raised CatalogError(page_budget): no last page within 32 pages, "
                                               "not CatalogError(cursor_repeated)", WRONG_REFUSAL)),
    (REPEATED, "raised", CURSOR_ERROR, (False, "raised MCPError -32602: Invalid cursor, not "
                                               "CatalogError(cursor_repeated)", WRONG_REFUSAL)),
    (EXPIRED, "raised", CURSOR_ERROR, (True, "raised MCPError -32602: Invalid cursor", None)),
    (EXPIRED, "raised", MCPError(-32002, "gone"), (False, "raised MCPError -32002: gone, not MCPError -32602",
                                                   WRONG_REFUSAL)),
    (NAMES, "raised", REPEAT_ERROR, (False, "raised CatalogError(cursor_repeated): a cursor came back instead of "
                                            "returning", WRONG_REFUSAL)),
    # the student's own exception is a crash, never a refusal, whatever the scenario expects
    (RAISES, "raised", ValueError("x"), (False, "your code crashed: ValueError: x", CRASH)),
    (REPEATED, "raised", KeyError("cursor_repeated"), (False, "your code crashed: KeyError: 'cursor_repeated'",
                                                       CRASH)),
    (RAISES, "hung", None, (False, "no result within 1 s (stopped)", HANG)),
])
def test_judge_names(expect, kind, value, verdict):
    assert judge_names(expect, outcome_of(kind, value)) == verdict


def test_judge_names_reads_tools_and_catalogs():
    tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in ("alpha", "beta")]
    assert judge_names(NAMES, o.returned(tools)) == (True, "returned ['alpha', 'beta']", None)
    assert judge_names(NAMES, o.returned(Catalog("tools", tuple(tools), (2,)))) == \
        (True, "returned ['alpha', 'beta']", None)


class FakeFrame:
    def __init__(self, method):
        self.method = method


X = "raised CatalogError(cursor_repeated): a cursor came back"


@pytest.mark.parametrize("kind, value, n, passed, failure, observed", [
    ("raised", REPEAT_ERROR, 2, True, None, X),
    ("raised", REPEAT_ERROR, 3, False, WRONG_REFUSAL, f"{X} after 3 tools/list requests (expected 2)"),
    ("raised", REPEAT_ERROR, 1, False, WRONG_REFUSAL, f"{X} after 1 tools/list request (expected 2)"),
    ("returned", ["alpha"], 2, False, MISSING_REFUSAL, "returned a partial catalog ['alpha'] instead of raising"),
])
def test_a_refusal_is_judged_at_its_page_on_the_wire(kind, value, n, passed, failure, observed):
    s = scenario("repeated cursor", expect=REPEATED)
    sent = [FakeFrame("tools/list")] * n + [FakeFrame("tools/call")]
    verdict = judge_on_wire(s, outcome_of(kind, value).with_wire(sent))
    assert (verdict.passed, verdict.failure_class, verdict.observed) == (passed, failure, observed)


# -- observing a student's call under a budget -------------------------------------------------

async def test_observe_returns_refusals_crashes_and_hangs():
    async def returns():
        return ["alpha"]

    async def course_error():
        raise CatalogError("cursor_repeated", "the server sent a cursor it had already sent (page 2)")

    async def protocol_error():
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor")

    async def own_bug():
        raise NotImplementedError("write your walker here")

    async def value_error():
        raise ValueError("the server repeated a cursor")

    never = anyio.Event()

    async def hangs():
        await never.wait()

    assert await observe(returns, 5) == o.returned(["alpha"])
    refused = await observe(course_error, 5)
    assert (refused.kind, o.describe(refused), refused.error.reason) == \
        (o.REFUSED, "raised CatalogError(cursor_repeated): the server sent a cursor it had already sent (page 2)",
         "cursor_repeated")
    refused = await observe(protocol_error, 5)
    assert (refused.kind, o.describe(refused)) == (o.REFUSED, "raised MCPError -32602: Invalid cursor")
    crashed = await observe(own_bug, 5)
    assert (crashed.kind, o.describe(crashed)) == \
        (o.CRASHED, "your code crashed: NotImplementedError: write your walker here")
    assert isinstance(crashed.error, NotImplementedError)  # typed: the hint reads the type, not the words
    crashed = await observe(value_error, 5)
    assert (crashed.kind, o.describe(crashed)) == (o.CRASHED, "your code crashed: ValueError: the server repeated a cursor")
    stopped = await observe(hangs, 0.05)
    assert (stopped.kind, o.describe(stopped)) == (o.HUNG, "no result within 0.05 s (stopped)")


async def test_a_call_that_never_gives_the_loop_back_is_stopped_and_the_watchdog_leaves():
    def previous_handler(signum, frame):
        pass

    async def spins():
        while True:
            pass

    async def swallows_everything():
        while True:
            try:
                while True:
                    pass
            except Exception:  # the watchdog's stop is not an Exception
                pass

    def sync_loop():
        while True:
            pass

    async def calls_sync_loop():
        return sync_loop()

    async def sleeps():
        time.sleep(30)  # a blocking call in a coroutine: the loop is held too

    before = signal.signal(signal.SIGALRM, previous_handler)
    try:
        for call in (spins, swallows_everything, calls_sync_loop, sleeps):
            started = time.monotonic()
            assert await observe(call, 0.5) == o.hung(0.5)
            assert time.monotonic() - started < 3, call.__name__
            assert signal.getsignal(signal.SIGALRM) is previous_handler, "the previous handler is back"
            assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), "and no timer is left running"
        assert await observe(lambda: anyio.sleep(0.3), 5) == o.returned(None), "a slow call is not stopped"
    finally:
        signal.signal(signal.SIGALRM, before)


async def test_a_timer_set_before_keeps_running():
    def previous_handler(signum, frame):
        raise AssertionError("the earlier timer must not fire during this test")

    before = signal.signal(signal.SIGALRM, previous_handler)
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        assert await observe(lambda: anyio.sleep(0.3), 5) == o.returned(None)
        remaining, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 99 < remaining < 99.8 and interval == 0
        assert signal.getsignal(signal.SIGALRM) is previous_handler
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


async def test_two_calls_side_by_side_one_spinning():
    results = {}

    async def spins():
        while True:
            pass

    async def slow_but_fine():
        await anyio.sleep(0.2)
        return "ok"

    async def run(name, call):
        results[name] = await observe(call, 1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "slow", slow_but_fine)
        tg.start_soon(run, "spins", spins)
    assert results == {"slow": o.returned("ok"), "spins": o.hung(1)}


# -- the scorecard -----------------------------------------------------------------------------

def scenario(name, era="legacy", expect=NAMES, hint="read every page", hints=None):
    return Scenario(name, era, "catalog", "normal", expect, hint, (), hints or {})


def test_a_scorecard_that_passes_is_short():
    card = Scorecard("Walker", [Verdict(scenario("normal"), True, "returned ['alpha', 'beta']"),
                                Verdict(scenario("normal", "2026-07-28"), True, "returned ['alpha', 'beta']")],
                     budget=20)
    assert card.passed and card.failures() == []
    assert card.text() == ("Walker\n"
                           "Time budget: 20 s a call; a call still running then is stopped.\n"
                           "scenario  legacy  2026-07-28\n"
                           "--------  ------  ----------\n"
                           "normal    PASS    PASS\n"
                           "2/2 scenarios pass — well done.")
    assert repr(card) == card.text()


def test_a_failing_scorecard_lists_each_failing_scenario_once_under_the_table():
    ok = Verdict(scenario("normal"), True, "returned ['alpha', 'beta']")
    crash = "your code crashed: NotImplementedError: write your walker here"
    starter = o.crashed(NotImplementedError("write your walker here"))
    repeat = [Verdict(scenario("repeat", era, expect=REPEATED, hint="remember cursors"), False,
                      "no result within 3 s (stopped)", HANG) for era in ("legacy", "2026-07-28")]
    single = Verdict(scenario("single", expect={"names": ["alpha"]}), False, crash, CRASH, starter)
    empty = Verdict(scenario("empty", expect={"names": []}), False, crash, CRASH, starter)
    card = Scorecard("Walker", [ok, *repeat, single, empty], budget=3)
    assert not card.passed and card.failures() == [*repeat, single, empty]
    assert card.verdict_of("repeat") is repeat[0] and card.verdict_of("normal", "legacy") is ok
    with pytest.raises(KeyError):
        card.verdict_of("normal", "2026-07-28")
    assert card.text() == (
        "Walker\n"
        "Time budget: 3 s a call; a call still running then is stopped.\n"
        "scenario  legacy  2026-07-28\n"
        "--------  ------  ----------\n"
        "normal    PASS    -\n"
        "repeat    FAIL    FAIL\n"
        "single    FAIL    -\n"
        "empty     FAIL    -\n"
        "\n"
        "What failed (3 scenarios):\n"
        "1. repeat — failed in legacy, 2026-07-28\n"
        "   expected  raises CatalogError(cursor_repeated), after exactly 2 tools/list requests, then sends\n"
        "             nothing\n"
        "   observed  no result within 3 s (stopped)\n"
        "   hint      Your function never finished and was stopped: every loop needs a bound. remember\n"
        "             cursors\n"
        "2. single — failed in legacy\n"
        "   expected  returns ['alpha']\n"
        "   observed  your code crashed: NotImplementedError: write your walker here\n"
        "   hint      This is still the starter: replace `raise NotImplementedError(...)` with your code in\n"
        "             the exercise cell, run that cell, then run this check again.\n"
        "3. empty — failed in legacy: expected returns []; your code crashed the same way as in 2\n"
        "1/5 scenarios pass")
    assert max(len(line) for line in card.text().splitlines()) <= 100
    html = card._repr_html_()
    assert html.startswith("<div class='course-scorecard'><table class='course-table'")
    assert "class='course-pass'" in html and "class='course-fail'" in html and "course-failures" in html
    assert html.endswith("<div class='course-total' style='font-weight:bold; margin:4px 0; color:#a50e0e'>"
                         "1/5 scenarios pass</div></div>")


def test_a_failing_scorecard_with_long_messages_fits_100_characters():
    observed = ("raised CatalogError(cursor_repeated): the server sent a cursor it had already sent (page 2) "
                "after 3 tools/list requests (expected 2)")
    bad = Verdict(scenario("a scenario with a rather long name to see the table", expect=REPEATED,
                           hint="remember every cursor you sent and stop at a repeat " * 3), False, observed)
    card = Scorecard("Walker battery with a long title " * 4, [bad], budget=20)
    assert max(len(line) for line in card.text().splitlines()) <= 100
    assert " ".join(observed.split()) in " ".join(card.text().split())


@pytest.mark.parametrize("failure, seen, hint", [
    (CRASH, o.crashed(NotImplementedError("write it")), STARTER_HINT),
    (CRASH, o.crashed(KeyError("x")), "Refuse with CatalogError(cursor_repeated) here"),
    (CRASH, o.crashed(NameError("name 'page_params' is not defined", name="page_params")),
     "`page_params` is not defined where your function runs: if the chapter defines it, run the cells above first"),
    (CRASH, None, "Refuse with CatalogError(cursor_repeated) here"),
    (HANG, o.hung(3), "Your function never finished and was stopped"),
    (MISSING_REFUSAL, None, "remember cursors"),
    (WRONG_REFUSAL, None, "refuse at page 2"),
    (LAB, None, "The lab itself failed"),
])
def test_the_hint_matches_the_kind_of_failure(failure, seen, hint):
    s = scenario("repeat", expect=REPEATED, hint="remember cursors", hints={"wrong refusal": "refuse at page 2"})
    verdict = Verdict(s, False, "what the judge saw", failure, seen)
    assert verdict.failure_class == failure
    assert verdict.hint.startswith(hint) or hint in verdict.hint


def test_a_failing_verdict_without_a_kind_is_a_wrong_result_whatever_its_words():
    s = scenario("repeat", expect=REPEATED, hint="remember cursors")
    verdict = Verdict(s, False, "your code crashed: no result within 3 s")  # words are never read
    assert (verdict.failure_class, verdict.hint) == (WRONG_RESULT, "remember cursors")


def test_a_hint_can_depend_on_the_era():
    s = {"hint": "fetch page 1 with cache_mode='refresh'",
         "hints": {"legacy": "walk again from page 1", "2026-07-28": {"wrong result": "refresh page 1"}}}
    legacy = Verdict(scenario("x", "legacy", hint=s["hint"], hints=s["hints"]), False, "returned []")
    modern = Verdict(scenario("x", "2026-07-28", hint=s["hint"], hints=s["hints"]), False, "returned []")
    assert (legacy.hint, modern.hint) == ("walk again from page 1", "refresh page 1")
    card = Scorecard("T", [legacy, modern])
    assert "hint legacy" in card.text() and "hint 2026-07-28" in card.text()


def test_a_row_of_every_era_names_no_era_in_its_failure():
    card = Scorecard("Allowlist", [Verdict(scenario("design", "any", expect={"value": True}), False, "returned False")])
    assert "1. design — failed\n   expected  returns True\n   observed  returned False" in card.text()


@pytest.mark.parametrize("battery", ["walk", "read_handler", "checked_tools"])
def test_a_legacy_row_never_hints_at_a_2026_07_28_setting(battery):
    _, scenarios, _ = load_battery(battery)
    modern_words = ("2026-07-28", "cache_mode", "ttl", "response cache", "stateless", "server/discover")
    for s in scenarios:
        if s.era in ("legacy", "any"):
            for failure in FAILURES:
                hint = hint_for(s, failure)
                assert not any(w in hint.lower() for w in modern_words), (s.name, failure, hint)


def test_stored_rows_reads_a_wrapped_table_back(tmp_path):
    import nbformat

    from course_lib.tooling.regen import stored_rows

    long = "remember every cursor you sent and stop when one comes back, whatever the page says next"
    message = " ".join(["a message far too long for any column of this table"] * 6)
    table = Table(["case", "verdict", "hint", "detail", "more"],
                  [["one", "FAIL", long, message, "x " * 30], ["two", "PASS", "", "", ""]], "Title")
    assert "(note 1)" in table.text() and "\n               stop when" in table.text()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("show(table)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=table.text() + "\n")]
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "t.ipynb")
    rows = stored_rows(tmp_path / "t.ipynb", "show(table)")
    assert rows == [{"case": "one", "verdict": "FAIL", "hint": long, "detail": message, "more": ("x " * 30).strip()},
                    {"case": "two", "verdict": "PASS", "hint": "", "detail": "", "more": ""}]


# -- a crash is told once, with the line of the student's code that raised it -------------------

def _student_function(catalog):
    return catalog["missing"]  # the student's bug: the line the card must point at


def test_a_crash_is_told_once_with_the_line_that_raised_it():
    try:
        _student_function({})
    except KeyError as exc:
        crash = o.crashed(exc)
    other = o.crashed(ValueError("another bug"))
    verdicts = [Verdict(Scenario(name, "legacy", "catalog", "normal", {"names": ["alpha"]}, "h"), False, o.describe(out), CRASH, out)
                for name, out in (("first", crash), ("second", crash), ("third", other), ("fourth", crash))]
    lines = Scorecard("my_walk", verdicts).failure_lines()
    said = "\n".join(lines)
    assert said.count("your code crashed: KeyError: 'missing'") == 1
    assert said.count("raised at") == 1  # the ValueError made here has no traceback: no line to show
    assert "   raised at line " in said and "return catalog[\"missing\"]" in said
    assert ("2. second — failed in legacy: expected returns ['alpha']; your code crashed the same way as in 1"
            in lines)
    assert ("4. fourth — failed in legacy: expected returns ['alpha']; your code crashed the same way as in 1"
            in lines)
    assert "your code crashed: ValueError: another bug" in said  # a different crash is told in full
