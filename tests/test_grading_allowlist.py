"""Chapter 8's grader, the read handler: the starter scores 0, the reference passes in both eras,
and each known-wrong handler fails at its scenario with its own failure kind (a wrong code, a
missing ``data.uri``, a URI served that must be refused, a wrong read, the handler's own crash,
the SDK's own error on a wrong return value, a hang, code the child cannot rebuild); and, in process,
the serving engine every server-side exercise shares (the harness's crash, its reading, its argv)."""
import json
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.allowlist import grade_read_handler, judge_read, judge_refusal
from course_lib.grading.battery import load_battery
from course_lib.grading.scorecard import STARTER_HINT
from course_lib.grading.served import Failed
from course_lib.paths import fixture
from course_lib.tooling.student_copy import NOTEBOOKS, solution_sources
from scorecard_checks import assert_flagged

pytestmark = pytest.mark.anyio

LIBRARY = json.loads(fixture("atlas", "documents.json").read_text(encoding="utf-8"))
DOCS, BASE, MIME = LIBRARY["documents"], LIBRARY["base"], LIBRARY["mime_type"]
SERVED = {BASE + quote(name, safe=""): name for name in DOCS}
_, SCENARIOS, SPEC = load_battery("read_handler")
ROWS = list(dict.fromkeys(s.name for s in SCENARIOS))
REFUSAL_ROWS = [r for r in ROWS if r != "listed documents read"]


def reference(tmp_path):
    """The hidden solution, run from a file so that the grader can read its source for the child."""
    import nbformat

    nb = nbformat.read(NOTEBOOKS / "04_resources_and_uris.ipynb", as_version=4)
    lines = [line for source in solution_sources(nb) for line in source.splitlines() if not line.startswith("await ")]
    path = tmp_path / "solution.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    namespace = {"__name__": "solution"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["reference_my_read_resource"]


def contents(uri, name, mime=None):  # (a default is evaluated where the function is defined: no global)
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime or MIME,
                                                                         text=DOCS[name])])


def era_code(ctx):
    return -32602 if ctx.protocol_version == "2026-07-28" else -32002


async def starter(ctx, params):
    raise NotImplementedError("write your read handler here")


async def era_blind(ctx, params):  # the chapter's handler: -32002 in every era
    if params.uri not in SERVED:
        raise MCPError(-32002, "Resource not found", {"uri": params.uri})
    return contents(params.uri, SERVED[params.uri])


async def always_invalid_params(ctx, params):  # -32602 in every era
    if params.uri not in SERVED:
        raise MCPError(-32602, "Resource not found", {"uri": params.uri})
    return contents(params.uri, SERVED[params.uri])


async def no_data(ctx, params):
    if params.uri not in SERVED:
        raise MCPError(era_code(ctx), "Resource not found")
    return contents(params.uri, SERVED[params.uri])


async def decodes_first(ctx, params):  # looks up the decoded string, and reports it
    uri = unquote(params.uri)
    found = {unquote(u): n for u, n in SERVED.items()}.get(uri)
    if found is None:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": uri})
    return contents(params.uri, found)


async def prefix_match(ctx, params):  # anything under the base that starts with a name
    for uri, name in SERVED.items():
        if params.uri.startswith(uri):
            return contents(params.uri, name)
    raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})


async def folds_case_and_space(ctx, params):
    uri = params.uri.strip().lower()
    if uri not in SERVED:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, SERVED[uri])


async def own_key_error(ctx, params):  # no allowlist check: the lookup itself fails
    return contents(params.uri, SERVED[params.uri])


async def returns_text(ctx, params):  # the SDK cannot send a str as a result
    if params.uri not in SERVED:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return DOCS[SERVED[params.uri]]


async def wrong_mime(ctx, params):
    if params.uri not in SERVED:
        raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})
    return contents(params.uri, SERVED[params.uri], mime="text/plain")


async def refuses_everything(ctx, params):
    raise MCPError(era_code(ctx), "Resource not found", {"uri": params.uri})


async def never_refuses(ctx, params):
    if params.uri not in SERVED:
        await anyio.sleep(3600)
    return contents(params.uri, SERVED[params.uri])


def another_style(ctx, params):
    """Correct, written differently: a plain def, a tuple of pairs, the era from the version string."""
    for uri, name in tuple(SERVED.items()):
        if uri == params.uri:
            return contents(uri, name)
    raise MCPError(-32002 if ctx.protocol_version < "2026-07-28" else -32602, "not served", {"uri": params.uri})


async def test_another_correct_style_passes():
    card = await grade_read_handler(another_style, eras=["2026-07-28"])
    assert card.passed, card.text()


async def test_the_chapters_era_blind_handler_fails_only_in_2026_07_28():
    card = await grade_read_handler(era_blind)
    for v in card.verdicts:
        modern_refusal = v.scenario.era == "2026-07-28" and v.scenario.name in REFUSAL_ROWS
        assert v.passed != modern_refusal, v
        if modern_refusal:
            assert v.failure_class == o.WRONG_REFUSAL and "not-found in 2026-07-28 is -32602" in v.observed


@pytest.mark.parametrize("handler, era, row, kind, observed", [
    (always_invalid_params, "legacy", "missing document", o.WRONG_REFUSAL, "'project://atlas/docs/missing': answered -32602"),
    (no_data, "legacy", "audit's missing URI", o.WRONG_REFUSAL, "'project://course-audit-missing"),
    (decodes_first, "2026-07-28", "other spellings of a name", o.MISSING_REFUSAL, "'project://atlas/docs/%64esign' was served"),
    (decodes_first, "legacy", "traversal", o.WRONG_REFUSAL, "'project://atlas/docs/%2e%2e%2fprivate': answered -32002 with"),
    (prefix_match, "legacy", "missing document", o.MISSING_REFUSAL, "'project://atlas/docs/design/extra' was served"),
    (folds_case_and_space, "2026-07-28", "query, fragment, whitespace", o.MISSING_REFUSAL, "' project://atlas/docs/design' was"),
    (own_key_error, "legacy", "traversal", o.CRASH, "your code crashed: KeyError"),
    (returns_text, "2026-07-28", "listed documents read", o.WRONG_RESULT, "the server could not answer: -32603"),
    (wrong_mime, "legacy", "listed documents read", o.WRONG_RESULT, "read 'project://atlas/docs/requirements': got"),
    (refuses_everything, "2026-07-28", "listed documents read", o.WRONG_REFUSAL, "refused the listed"),
])
async def test_a_wrong_handler_fails_at_its_row_with_its_kind(handler, era, row, kind, observed):
    control = "listed documents read" if row != "listed documents read" else "missing document"
    card = await grade_read_handler(handler, only=[row, control], eras=[era])
    verdict = assert_flagged(card, row, control, observed)
    assert verdict.failure_class == kind, card.text()


async def test_odd_spellings_decoded_fail_the_audits_probe_as_well():
    card = await grade_read_handler(folds_case_and_space, only=["audit's odd spellings"], eras=["legacy"])
    verdict = card.verdict_of("audit's odd spellings")
    assert verdict.failure_class == o.MISSING_REFUSAL and "PROJECT://" in verdict.observed, card.text()


async def test_a_handler_that_never_answers_is_stopped_and_the_rest_not_asked():
    card = await grade_read_handler(never_refuses, only=["listed documents read", "missing document", "traversal"],
                                    eras=["legacy"], budget=2)
    listed, missing, traversal = (card.verdict_of(n) for n in ("listed documents read", "missing document",
                                                               "traversal"))
    assert listed.passed, card.text()
    assert (missing.failure_class, missing.observed) == (o.HANG, "no result within 2 s (stopped)")
    assert traversal.failure_class == o.HANG and traversal.observed.startswith("not asked")


async def test_a_handler_the_child_cannot_rebuild_is_told_so_without_a_server():
    card = await grade_read_handler(len, only=[ROWS[0]], eras=["legacy"])
    (verdict,) = card.verdicts
    assert verdict.failure_class == o.CRASH and "not a function defined with def" in verdict.observed


# -- the judges, on recorded replies -------------------------------------------------------------

URI = BASE + "missing"


@pytest.mark.parametrize("reply, kind", [
    ({"result": {"contents": []}}, o.MISSING_REFUSAL),
    ({"error": {"code": -32603, "message": "crashed: KeyError: 'x'", "data": {"crashed": "KeyError"}}}, o.CRASH),
    ({"error": {"code": -32603, "message": "Internal error"}}, o.WRONG_RESULT),  # the SDK's own failure
    ({"error": {"code": -32002, "message": "Resource not found", "data": {"uri": URI}}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32601, "message": "Method not found"}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32602, "message": "Resource not found"}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32602, "message": "Resource not found", "data": {"uri": unquote(URI) + "/"}}}, o.WRONG_REFUSAL),
    ({"error": {"code": -32602, "message": "Resource not found", "data": [URI]}}, o.WRONG_REFUSAL),
])
def test_a_refusal_is_judged_by_its_code_and_data(reply, kind):
    with pytest.raises(Failed) as wrong:
        judge_refusal(URI, reply, -32602, "2026-07-28")
    assert wrong.value.kind == kind


def test_the_right_refusal_passes_in_its_era_only():
    reply = {"error": {"code": -32002, "message": "Resource not found", "data": {"uri": URI}}}
    judge_refusal(URI, reply, -32002, "legacy")
    with pytest.raises(Failed):
        judge_refusal(URI, reply, -32602, "2026-07-28")


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
        assert wrong.value.kind == o.WRONG_RESULT


# -- the serving engine, in process: the harness's crash and the grader's reading of it ----------

async def test_the_harness_answers_the_students_own_error_as_a_crash_and_passes_mcp_errors():
    from course_lib.grading.harness import called

    with pytest.raises(MCPError) as raised:
        await called(lambda: {}["missing"])
    assert (raised.value.error.code, raised.value.error.message) == (-32603, "crashed: KeyError: 'missing'")
    assert raised.value.error.data == {"crashed": "KeyError"}
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


@pytest.mark.parametrize("crashed, said, error", [
    ("NotImplementedError", "NotImplementedError: write it", NotImplementedError),
    ("NameError", "NameError: name 'x' is not defined", NameError),
    ("Unavailable", "Unavailable: course_lib.x.y is unavailable in this exercise", Exception),
    ("KeyError", "KeyError: 'x'", None),
])
def test_a_crash_on_the_wire_is_rebuilt_by_type_for_the_hint(crashed, said, error):
    from course_lib.grading.served import crash_of
    from course_lib.grading.unavailable import Unavailable

    failed = crash_of({"code": -32603, "message": "crashed: " + said, "data": {"crashed": crashed}})
    assert (failed.kind, failed.observed) == (o.CRASH, "your code crashed: " + said)
    if error is None:
        assert failed.outcome is None
    elif crashed == "Unavailable":
        assert isinstance(failed.outcome.error, Unavailable) and failed.outcome.error.dotted == "course_lib.x.y"
    else:
        assert type(failed.outcome.error) is error
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
        judge_refusal(URI, reply, -32602, "2026-07-28")
    assert wrong.value.kind == o.MISSING_REFUSAL and said in wrong.value.observed


def test_an_error_without_a_body_is_a_wrong_refusal():
    with pytest.raises(Failed) as wrong:
        judge_refusal(URI, {"error": None}, -32602, "2026-07-28")
    assert wrong.value.kind == o.WRONG_REFUSAL and "answered None None" in wrong.value.observed


@pytest.mark.parametrize("reply, kind, said", [
    ({"error": {"code": -32602, "message": "Resource not found"}}, o.WRONG_REFUSAL, "refused the listed"),
    ({"error": None}, o.WRONG_REFUSAL, "refused the listed"),
    ({"error": {"code": -32603, "message": "crashed: KeyError: 'x'", "data": {"crashed": "KeyError"}}}, o.CRASH,
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
    assert wrong.value.kind == kind and said in wrong.value.observed, wrong.value.observed
