"""Chapter 04's grader, the read handler: the reference passes in both eras (the starter's 0 is its
stored card: tests/inprocess/test_exercises_unit.py), the chapter's visible allowlist cell copied
fails, and each known-wrong handler fails at its scenario
with its own failure kind (a retired code, a missing ``data.uri``, a URI served that must be refused,
a held document refused, a wrong read, the handler's own crash, the SDK's own error on a wrong
return value, a hang, code the child cannot rebuild); and, in process, the serving engine every
server-side exercise shares (the harness's crash, its reading, its argv)."""
import json
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
import nbformat
import pytest
from mcp import MCPError

from course_lib.grading import outcome as o
from course_lib.grading.allowlist import grade_read_handler
from course_lib.grading.battery import load_battery
from course_lib.paths import fixture
from course_lib.tooling.student_copy import NOTEBOOKS, solution_sources
from scorecard_checks import assert_flagged

from test_grading_allowlist_unit import another_style, contents

pytestmark = pytest.mark.anyio

LIBRARY = json.loads(fixture("grading", "read_library.json").read_text(encoding="utf-8"))
DOCS, BASE, MIME = LIBRARY["documents"], LIBRARY["base"], LIBRARY["mime_type"]
SERVED = {BASE + quote(name, safe=""): name for name in LIBRARY["listed"]}  # what the server lists
_, SCENARIOS, SPEC = load_battery("read_handler")
ROWS = list(dict.fromkeys(s.name for s in SCENARIOS))
READ_ROWS = {"listed documents read", "names the chapter never showed"}
REFUSAL_ROWS = [r for r in ROWS if r not in READ_ROWS]


def reference(tmp_path):
    """The hidden solution, run from a file so that the grader can read its source for the child."""
    nb = nbformat.read(NOTEBOOKS / "04_resources_and_uris.ipynb", as_version=4)
    lines = [line for source in solution_sources(nb) for line in source.splitlines() if not line.startswith("await ")]
    path = tmp_path / "solution.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    namespace = {"__name__": "solution"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["reference_my_read_resource"]


def visible_cell(tmp_path, own_rule=False):
    """The chapter's visible allowlist cell (``fix-server-handler``), copied as a student would copy
    it, with the exercise's signature: its ``on_read_resource`` answers for the library too. With
    ``own_rule`` its call of the unavailable ``missing`` is replaced by the rule written by hand."""
    nb = nbformat.read(NOTEBOOKS / "04_resources_and_uris.ipynb", as_version=4)
    source = {c.get("id"): c.source for c in nb.cells}
    if own_rule:
        call = "raise missing(params.uri, ctx.protocol_version)"
        assert call in source["fix-server-handler"]
        source["fix-server-handler"] = source["fix-server-handler"].replace(call, (
            'raise MCPError(-32602 if ctx.protocol_version == "2026-07-28" else -32002, "Resource not found", '
            '{"uri": params.uri})'))
    path = tmp_path / "copied.py"
    path.write_text(source["75e31536"] + "\n\n" + source["fix-server-handler"] + "\n\n"  # its imports cell, then it
                    "async def copied(ctx, params, library):\n    return await on_read_resource(ctx, params)\n",
                    encoding="utf-8")
    namespace = {"__name__": "copied"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["copied"]


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


async def era_blind(ctx, params, library):  # right URIs, -32002 in every era
    name = canonical_name(params.uri, library.base)
    text = None if name is None else library.text_of(name)
    if text is None:
        raise MCPError(-32002, "Resource not found", {"uri": params.uri})
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type=library.mime_type,
                                                                         text=text)])


async def always_invalid_params(ctx, params, library):  # -32602 in every era: the rule allows it
    name = canonical_name(params.uri, library.base)
    text = None if name is None else library.text_of(name)
    if text is None:
        raise MCPError(-32602, "Resource not found", {"uri": params.uri})
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type=library.mime_type,
                                                                         text=text)])


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


async def never_refuses(ctx, params, library):
    if params.uri not in SERVED:
        await anyio.sleep(3600)
    return contents(params.uri, SERVED[params.uri])


async def test_the_reference_passes_in_both_eras(tmp_path):
    card = await grade_read_handler(reference(tmp_path))
    assert card.passed and len(card.verdicts) == 2 * len(ROWS), card.text()


async def test_the_chapters_visible_allowlist_cell_copied_fails(tmp_path):
    card = await grade_read_handler(visible_cell(tmp_path))
    failed = {(v.scenario.name, v.scenario.era) for v in card.failures()}
    # It cannot serve what it does not list, and the rule's helper it calls is not the student's to use.
    assert {("names the chapter never showed", era) for era in ("legacy", "2026-07-28")} <= failed, card.text()
    assert {(row, era) for row in REFUSAL_ROWS for era in ("legacy", "2026-07-28")} <= failed, card.text()
    assert not card.passed and card.score <= 2


async def test_the_visible_cell_with_the_rule_written_in_still_serves_too_little(tmp_path):
    card = await grade_read_handler(visible_cell(tmp_path, own_rule=True))
    failed = {v.scenario.name for v in card.failures()}
    # A dictionary of the chapter's documents: the library's texts are not its texts, and it holds more.
    assert failed == {"listed documents read", "names the chapter never showed"}, card.text()


async def test_another_correct_style_and_the_2026_code_in_both_eras_pass():
    for handler in (another_style, always_invalid_params):
        card = await grade_read_handler(handler)
        assert card.passed, card.text()


async def test_the_era_blind_handler_fails_only_its_2026_07_28_refusals():
    card = await grade_read_handler(era_blind)
    for v in card.verdicts:
        modern_refusal = v.scenario.era == "2026-07-28" and v.scenario.name in REFUSAL_ROWS
        assert v.passed != modern_refusal, v
        if modern_refusal:
            assert v.failure_class == o.WRONG_REFUSAL and "-32002 is retired at 2026-07-28" in v.observed


@pytest.mark.parametrize("handler, era, row, kind, observed", [
    (listed_only, "legacy", "names the chapter never showed", o.WRONG_REFUSAL, "refused the listed 'project://atlas/docs/caf%C3%A9"),
    (no_data, "legacy", "audit's missing URI", o.WRONG_REFUSAL, "'project://course-audit-missing"),
    (decodes_first, "2026-07-28", "other spellings of a name", o.MISSING_REFUSAL, "'project://atlas/docs/%64esign' was served"),
    (slash_kept, "legacy", "names the chapter never showed", o.WRONG_REFUSAL, "refused the listed 'project://atlas/docs/design%2Fv2'"),
    (prefix_match, "legacy", "missing document", o.MISSING_REFUSAL, "'project://atlas/docs/design/extra' was served"),
    (last_segment, "legacy", "another base, or the base encoded", o.MISSING_REFUSAL,
     "'project://atlas/notes/design' was served"),
    (base_anywhere, "2026-07-28", "another base, or the base encoded", o.MISSING_REFUSAL,
     "'x-project://atlas/docs/design' was served"),
    (strips_whitespace, "2026-07-28", "query, fragment, whitespace", o.MISSING_REFUSAL, "' project://atlas/docs/design' was"),
    (own_key_error, "legacy", "traversal", o.CRASH, "your code crashed: KeyError"),
    (returns_text, "2026-07-28", "listed documents read", o.WRONG_RESULT, "the server could not answer: -32603"),
    (wrong_mime, "legacy", "listed documents read", o.WRONG_RESULT, "read 'project://atlas/docs/requirements': got"),
    (refuses_everything, "2026-07-28", "listed documents read", o.WRONG_REFUSAL, "refused the listed"),
])
async def test_a_wrong_handler_fails_at_its_row_with_its_kind(handler, era, row, kind, observed):
    control = "audit's missing URI" if row in READ_ROWS else "listed documents read"
    card = await grade_read_handler(handler, only=[row, control], eras=[era])
    verdict = assert_flagged(card, row, control, observed)
    assert verdict.failure_class == kind, card.text()
    if kind == o.MISSING_REFUSAL:  # the hint names the URI that was served
        assert f"Your handler served {observed.split(' was')[0]}" in verdict.hint, verdict.hint


async def test_odd_spellings_decoded_fail_the_audits_probe_as_well():
    card = await grade_read_handler(decodes_first, only=["audit's odd spellings"], eras=["legacy"])
    verdict = card.verdict_of("audit's odd spellings")
    assert verdict.failure_class == o.MISSING_REFUSAL and "%" in verdict.observed, card.text()


async def test_a_handler_that_never_answers_is_stopped_and_the_rest_not_asked():
    card = await grade_read_handler(never_refuses, only=["listed documents read", "missing document", "traversal"],
                                    eras=["legacy"], budget=2)
    listed, missing, traversal = (card.verdict_of(n) for n in ("listed documents read", "missing document",
                                                               "traversal"))
    assert listed.passed, card.text()
    assert (traversal.failure_class, traversal.observed) == (o.HANG, "no result within 2 s (stopped)")
    assert missing.failure_class == o.HANG and missing.observed.startswith("not asked")  # asked after traversal


# -- the judges, on recorded replies -------------------------------------------------------------

URI = BASE + "missing"
