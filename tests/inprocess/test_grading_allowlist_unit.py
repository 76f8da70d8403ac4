"""In-process: the checks of tests/stdio/test_grading_allowlist.py's subject that start no process."""
import json
from urllib.parse import quote, unquote
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.allowlist import grade_read_handler, judge_read, judge_refusal
from course_lib.grading.battery import load_battery
from course_lib.grading.served import Failed
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio

LIBRARY = json.loads(fixture("grading", "read_library.json").read_text(encoding="utf-8"))
DOCS, BASE, MIME = LIBRARY["documents"], LIBRARY["base"], LIBRARY["mime_type"]
_, SCENARIOS, SPEC = load_battery("read_handler")
ROWS = list(dict.fromkeys(s.name for s in SCENARIOS))


def contents(uri, name, mime=None):  # (a default is evaluated where the function is defined: no global)
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime or MIME,
                                                                         text=DOCS[name])])


def another_style(ctx, params, library):
    """Correct, written differently: a plain def, the segment checked by re-encoding, the era's code."""
    segment = params.uri[len(library.base):] if params.uri.startswith(library.base) else "/"
    try:
        name = unquote(segment, errors="strict")
    except UnicodeDecodeError:
        name = None
    text = library.text_of(name) if name is not None and quote(name, safe="") == segment else None
    if text is None:
        raise MCPError(-32002 if ctx.protocol_version < "2026-07-28" else -32602, "not served", {"uri": params.uri})
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type=library.mime_type,
                                                                         text=text)])


# -- the starter and known-wrong handlers (recorded: fixtures/grading/transcripts/read_handler.expected.json;
# own_key_error, returns_text and no_data are graded on real stdio servers too, tests/stdio/test_grading_allowlist.py)

SERVED = {BASE + quote(name, safe=""): name for name in LIBRARY["listed"]}  # what the server lists


async def starter(ctx, params, library):
    raise NotImplementedError("write your read handler here")


def era_code(ctx):
    return -32602 if ctx.protocol_version == "2026-07-28" else -32002


def canonical_name(uri, base):
    """The name ``uri`` spells canonically under ``base``, else None (what the exercise asks for)."""
    if not uri.startswith(base):
        return None
    segment = uri[len(base):]
    try:
        name = unquote(segment, errors="strict")
    except UnicodeDecodeError:
        return None
    return name if quote(name, safe="") == segment else None


def read_refusing_with(code, params, library):
    """The right URIs read, every other one refused with ``code``, whatever the era."""
    name = canonical_name(params.uri, library.base)
    text = None if name is None else library.text_of(name)
    if text is None:
        raise MCPError(code, "Resource not found", {"uri": params.uri})
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type=library.mime_type,
                                                                         text=text)])


async def era_blind(ctx, params, library):  # right URIs, -32002 in every era
    return read_refusing_with(-32002, params, library)


async def always_invalid_params(ctx, params, library):  # -32602 in every era: the rule allows it
    return read_refusing_with(-32602, params, library)


async def listed_only(ctx, params, library):  # an exact dictionary of the listed URIs, era-aware
    if params.uri not in SERVED:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, SERVED[params.uri])


async def no_data(ctx, params, library):
    name = canonical_name(params.uri, library.base)
    if name is None or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found")
    return contents(params.uri, name)


async def decodes_first(ctx, params, library):  # the decoded name, whatever its spelling
    name = unquote(params.uri.removeprefix(library.base)) if params.uri.startswith(library.base) else None
    if name is None or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, name)


async def slash_kept(ctx, params, library):  # quote(name) keeps '/': design%2Fv2 is not its canonical URI
    name = unquote(params.uri.removeprefix(library.base), errors="replace")
    if not params.uri.startswith(library.base) or quote(name) != params.uri.removeprefix(library.base) \
            or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, name)


async def prefix_match(ctx, params, library):  # anything that starts with a listed URI
    for uri, name in SERVED.items():
        if params.uri.startswith(uri):
            return contents(params.uri, name)
    raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})


async def last_segment(ctx, params, library):  # the canonical last segment, whatever base came before it
    segment = params.uri.rpartition("/")[2]
    name = unquote(segment)
    if quote(name, safe="") != segment or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, name)


async def base_anywhere(ctx, params, library):  # the base found anywhere in the URI, not only at its start
    _, found, segment = params.uri.partition(library.base)
    name = canonical_name(library.base + segment, library.base) if found else None
    if name is None or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, name)


async def strips_whitespace(ctx, params, library):
    name = canonical_name(params.uri.strip(), library.base)
    if name is None or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, name)


async def own_key_error(ctx, params, library):  # no check: the lookup itself fails
    return contents(params.uri, SERVED[params.uri])


async def returns_text(ctx, params, library):  # the SDK cannot send a str as a result
    name = canonical_name(params.uri, library.base)
    if name is None or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return library.text_of(name)


async def wrong_mime(ctx, params, library):
    name = canonical_name(params.uri, library.base)
    if name is None or library.text_of(name) is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, name, mime="text/plain")


async def refuses_everything(ctx, params, library):
    raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})


def recorded(label):
    """A handler's verdicts on its recorded rows (fixtures/grading/transcripts/read_handler.json)."""
    from course_lib.tooling import transcripts as t
    from course_lib.tooling.served_judges import judge_read_handler

    return [judge_read_handler(s, outcome) for s, outcome in t.rows("read_handler", label)]


def test_the_era_blind_handlers_refusals_fail_at_2026_07_28_for_its_retired_code():
    failing = [v for v in recorded("era_blind") if not v.passed]
    assert failing and {v.scenario.era for v in failing} == {"2026-07-28"}
    assert all("-32002 is retired at 2026-07-28" in v.observed for v in failing)


def test_a_missing_refusals_hint_names_the_uri_that_was_served():
    from course_lib.tooling import transcripts as t

    named = 0
    for label in t.expected("read_handler")["solutions"]:
        for v in recorded(label):
            if v.failure_class == o.MISSING_REFUSAL:
                assert f"Your handler served {v.observed.split(' was')[0]}" in v.hint, v.hint
                named += 1
    assert named >= 6


async def test_a_handler_the_child_cannot_rebuild_is_told_so_without_a_server():
    card = await grade_read_handler(len, only=[ROWS[0]], eras=["legacy"])
    (verdict,) = card.verdicts
    assert verdict.failure_class == o.CRASH and "not a function defined with def" in verdict.observed


# -- the judges, on recorded replies -------------------------------------------------------------

URI = BASE + "missing"


@pytest.mark.parametrize("reply, kind", [
    ({"result": {"contents": []}}, o.MISSING_REFUSAL),
    ({"error": {"code": -32603, "message": "crashed: KeyError: 'x'", "data": {"crashed": "KeyError", "message": "'x'"}}}, o.CRASH),
    ({"error": {"code": -32603, "message": "Internal error"}}, o.WRONG_RESULT),  # the SDK's own failure
    ({"error": {"code": -32002, "message": "Resource not found", "data": {"uri": URI}}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32601, "message": "Method not found"}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32602, "message": "Resource not found"}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32602, "message": "Resource not found", "data": {"uri": unquote(URI) + "/"}}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32602, "message": "Resource not found", "data": [URI]}}, o.WRONG_REFUSAL),
])
def test_a_refusal_is_judged_by_its_code_and_data(reply, kind):
    with pytest.raises(Failed) as wrong:
        judge_refusal(URI, reply, "2026-07-28")
    assert wrong.value.outcome.failure == kind


def test_the_right_refusal_passes_in_its_era_only():
    retired = {"error": {"code": -32002, "message": "Resource not found", "data": {"uri": URI}}}
    current = {"error": {"code": -32602, "message": "Resource not found", "data": {"uri": URI}}}
    judge_refusal(URI, retired, "legacy")
    judge_refusal(URI, current, "legacy")       # the 2026-07-28 code is recognised at 2025-11-25 too
    judge_refusal(URI, current, "2026-07-28")
    with pytest.raises(Failed):
        judge_refusal(URI, retired, "2026-07-28")  # -32002 MUST NOT be sent at 2026-07-28


@pytest.mark.parametrize("item, ok", [
    ({"uri": URI, "mimeType": MIME, "text": "t"}, True),
    ({"uri": URI + "x", "mimeType": MIME, "text": "t"}, False),
    ({"uri": URI, "mimeType": "text/plain", "text": "t"}, False),
    ({"uri": URI, "mimeType": MIME, "text": "other"}, False),
    ({"uri": URI, "mimeType": MIME, "blob": "dA=="}, False),
])
def test_a_read_is_judged_by_uri_mime_and_text(item, ok):
    reply = {"result": {"contents": [item]}}
    if ok:
        judge_read(URI, reply, "t", MIME)
    else:
        with pytest.raises(Failed) as wrong:
            judge_read(URI, reply, "t", MIME)
        assert wrong.value.outcome.failure == o.WRONG_RESULT


# -- the serving engine, in process: the harness's crash and the grader's reading of it ----------

async def test_the_harness_answers_the_students_own_error_as_a_crash_and_passes_mcp_errors():
    from course_lib.grading.harness import called

    with pytest.raises(MCPError) as raised:
        await called(lambda: {}["missing"])
    assert (raised.value.error.code, raised.value.error.message) == (-32603, "crashed: KeyError: 'missing'")
    assert raised.value.error.data == {"crashed": "KeyError", "message": "'missing'"}
    refusal = MCPError(-32602, "no")
    with pytest.raises(MCPError) as passed:
        await called(lambda: (_ for _ in ()).throw(refusal))
    assert passed.value is refusal
    with pytest.raises(MCPError) as typed:
        await called(lambda: "text", lambda answer: f"returned {type(answer).__name__}, not a tuple")
    assert typed.value.error.message == "crashed: TypeError: returned str, not a tuple"

    async def coroutine():
        return 7
    assert await called(coroutine) == 7


async def test_the_harness_stops_a_call_at_its_budget_and_says_so_as_data(monkeypatch):
    """The one budget, on the server's side: a call that awaits forever or never gives the loop back is
    stopped at ``--budget`` and answered ``-32603 hung`` with ``{"hung": budget}``, which the grader
    reads as the row's hang (``served.crash_of``), not as a crash."""
    import time

    import anyio

    from course_lib.grading import harness
    from course_lib.grading.served import crash_of

    monkeypatch.setattr(harness, "BUDGET", 0.3)
    for forever in (lambda: anyio.sleep(60), lambda: time.sleep(60)):
        with pytest.raises(MCPError) as stopped:
            await harness.called(forever)
        assert (stopped.value.error.code, stopped.value.error.data) == (-32603, {"hung": 0.3})
        failed = crash_of(stopped.value)
        assert (failed.outcome.failure, failed.outcome.observed, failed.outcome.kind) == (
            o.HANG, "no result within 0.3 s (stopped)", o.HUNG)
    assert await harness.called(lambda: 7) == 7


@pytest.mark.parametrize("crashed, message, said, error", [
    ("NotImplementedError", "write it", "NotImplementedError: write it", NotImplementedError),
    ("NameError", "name 'x' is not defined", "NameError: name 'x' is not defined", NameError),
    ("Unavailable", "course_lib.x.y is unavailable in this exercise: write that part yourself",
     "Unavailable: course_lib.x.y is unavailable in this exercise: write that part yourself", Exception),
    ("KeyError", "'x'", "KeyError: 'x'", None),
])
def test_a_crash_on_the_wire_is_rebuilt_by_type_for_the_hint(crashed, message, said, error):
    from course_lib.grading.served import crash_of
    from course_lib.grading.unavailable import Unavailable

    data = {"crashed": crashed, "message": message, **({"unavailable": "course_lib.x.y"} if crashed == "Unavailable" else {})}
    failed = crash_of({"code": -32603, "message": "crashed: " + said, "data": data})
    assert (failed.outcome.failure, failed.outcome.observed, failed.outcome.kind) == (o.CRASH, "your code crashed: " + said, o.CRASHED)
    if crashed == "Unavailable":
        assert isinstance(failed.outcome.error, Unavailable) and failed.outcome.error.dotted == "course_lib.x.y"
    else:
        assert type(failed.outcome.error) is error if error else type(failed.outcome.error).__name__ == crashed
    assert crash_of({"code": -32603, "message": "Internal error"}) is None  # the SDK's own failure
    assert crash_of(MCPError(-32602, "crashed: no", {"crashed": "KeyError"})) is None  # a refusal


def test_every_exercise_harness_is_started_by_the_fork_server():
    from course_lib._runtime.process import is_harness
    from course_lib.grading import served

    with served.written(another_style, "read_handler", "read") as ex:
        assert ex.card is None and ex.path.read_text(encoding="utf-8").count("def another_style(") == 1
        argv = ex.argv(ex.config("settings", {}))
    assert argv[1:4] == ["-m", "course_lib.grading.harness", "read"] and is_harness(argv)


@pytest.mark.parametrize("reply, said", [
    ({"result": None}, "0 content item(s)"),
    ({"result": {"contents": None}}, "0 content item(s)"),
    ({"result": {"contents": [{"uri": URI, "text": "a"}, {"uri": URI, "text": "b"}]}}, "2 content item(s)"),
])
def test_a_served_uri_is_told_with_what_it_carried_even_when_malformed(reply, said):
    with pytest.raises(Failed) as wrong:
        judge_refusal(URI, reply, "2026-07-28")
    assert wrong.value.outcome.failure == o.MISSING_REFUSAL and said in wrong.value.outcome.observed


def test_an_error_without_a_body_is_a_wrong_refusal():
    with pytest.raises(Failed) as wrong:
        judge_refusal(URI, {"error": None}, "2026-07-28")
    assert wrong.value.outcome.failure == o.WRONG_REFUSAL and "answered None None" in wrong.value.outcome.observed


@pytest.mark.parametrize("reply, kind, said", [
    ({"error": {"code": -32602, "message": "Resource not found"}}, o.WRONG_REFUSAL, "refused the listed"),
    ({"error": None}, o.WRONG_REFUSAL, "refused the listed"),
    ({"error": {"code": -32603, "message": "crashed: KeyError: 'x'", "data": {"crashed": "KeyError", "message": "'x'"}}}, o.CRASH,
     "your code crashed: KeyError: 'x'"),
    ({"result": None}, o.WRONG_RESULT, "got []"),
    ({"result": {"contents": None}}, o.WRONG_RESULT, "got []"),
    ({"result": {"contents": [{"uri": URI, "mimeType": "text/plain", "text": "t"}]}}, o.WRONG_RESULT,
     f"got [({URI!r}, 'text/plain', 'the text')]"),
    ({"result": {"contents": [{"uri": URI, "mimeType": MIME, "text": "other"}]}}, o.WRONG_RESULT,
     f"got [({URI!r}, {MIME!r}, 'another text')]"),
    ({"result": {"contents": [{"uri": URI, "mimeType": MIME, "blob": "dA=="}]}}, o.WRONG_RESULT,
     f"got [({URI!r}, {MIME!r}, None)]"),
])
def test_a_listed_uri_that_does_not_read_is_told_by_what_came_back(reply, kind, said):
    with pytest.raises(Failed) as wrong:
        judge_read(URI, reply, "t", MIME)
    assert wrong.value.outcome.failure == kind and said in wrong.value.outcome.observed, wrong.value.outcome.observed
