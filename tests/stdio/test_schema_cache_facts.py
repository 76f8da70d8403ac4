"""What chapter 03 (the output-schema cache) leaves to the tests: SDK 1.29.0 next to 2.3.0, the
response cache's part in the schema cache, the candidate written in the chapter's cells held to
both oracles, and the negative controls (every mutant killed at its named check, the probes under
``python -O``).

Expectations come from ``fixtures/schema/expected-facts.json`` (and the scenario oracles
``expected.json`` / ``expected-audits.json``), written by hand; nothing is derived from a run.
"""
import ast
import json
import subprocess
import sys
from contextlib import asynccontextmanager

import nbformat
import pytest

from course_lib import CatalogError, connect, sdk129, walk
from course_lib.chapters import negative_controls as negative, schema_lab, schema_mutants, schema_oracles
from course_lib.paths import FIXTURES, NOTEBOOKS
from course_lib.refresh import Ready

pytestmark = pytest.mark.anyio

FACTS = json.loads((FIXTURES / "schema" / "expected-facts.json").read_text(encoding="utf-8"))
LIST = {"op": "list_tools", "cursor": None}  # operations of the SDK 1.29.0 client
NEXT = {"op": "list_tools", "cursor": "next"}
CALL = {"op": "call_tool", "name": "alpha", "arguments": {}}
needs_sdk129 = pytest.mark.skipif(not sdk129.available(), reason="the SDK 1.29.0 environment is not installed")


def peer_call(entry: dict) -> dict:
    """A 1.29.0 client's call entry in the oracle's words."""
    if entry["ok"]:
        return {"ok": True, "structuredContent": entry["result"]["structuredContent"]}
    return {"ok": False, "type": entry["error"]["type"], "message": entry["error"]["message"]}


# -- SDK 1.29.0 next to 2.3.0 ----------------------------------------------------------------------

@needs_sdk129
@pytest.mark.parametrize("name", ["in_place_integer", "in_place_no_schema"])
async def test_sdk129_stores_the_rejected_refresh_too(name):
    """Pitfalls (a) and (b) are not new in 2.3.0: a 1.29.0 session stores the refresh's pages as well."""
    entries = await sdk129.client("schema", [LIST, LIST, NEXT, CALL], fixture=schema_oracles.fixture(name))
    assert peer_call(entries[3]) == FACTS["sdk129_in_place"][name]


@needs_sdk129
async def test_sdk129_never_prunes():
    """1.29.0 keeps a schema a complete single page no longer lists; 2.3.0 prunes it (expected.json)."""
    entries = await sdk129.client("schema", [LIST, LIST, CALL], fixture=schema_oracles.fixture("pruned"))
    listed = [[tool["name"] for tool in entry["result"]["tools"]] for entry in entries[:2]]
    assert listed == FACTS["sdk129_pruned"]["listed"]
    assert peer_call(entries[2]) == FACTS["sdk129_pruned"]["call"]
    pruned = await schema_lab.run("pruned")
    assert pruned.observed == schema_oracles.expected("pruned", "legacy")  # 2.3.0: accepted unvalidated


@needs_sdk129
async def test_both_sdks_list_page_one_only_for_an_unlisted_tool():
    """A call to a never-listed tool: each SDK lists page 1 itself (the fixture then wants page 2)."""
    fact = FACTS["implicit_page_1"]
    late = await sdk129.client("schema", [CALL, LIST], fixture=schema_oracles.fixture("page2"))
    assert peer_call(late[0]) == {"ok": True, "structuredContent": fact["call"]}
    error = late[1]["error"]
    assert {"code": error["code"], "message": error["message"]} == fact["then_tools_list"]
    with schema_lab.sdk_log() as logged:
        async with connect("schema", fixture=schema_oracles.fixture("page2")) as lab:
            call = await lab.session.call_tool("alpha", {})
            with pytest.raises(Exception) as caught:
                await lab.session.list_tools()
    assert call.structured_content == fact["call"]
    assert (caught.value.error.code, caught.value.error.message) == tuple(fact["then_tools_list"].values())
    assert logged == fact["logged_by_2.3.0"]


@needs_sdk129
def test_sdk129_has_no_client_and_no_response_cache():
    find = ("import importlib.util, json, mcp; print(json.dumps({'mcp.Client': hasattr(mcp, 'Client'), "
            "'mcp.client.caching': importlib.util.find_spec('mcp.client.caching') is not None}))")
    seen = subprocess.run([str(sdk129.python()), "-c", find], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(seen.stdout) == FACTS["sdk129_has"]
    here = subprocess.run([sys.executable, "-c", find], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(here.stdout) == {"mcp.Client": True, "mcp.client.caching": True}


# -- the response cache's part (taught in chapter 09) ------------------------------------------------

async def test_the_client_answers_a_second_listing_from_its_cache_only_at_2026(era):
    """``modern`` labels tools/list ttlMs=60000: at 2026-07-28 the second Client listing never reaches
    the server; on legacy no hint crosses the wire and both do. (The re-absorbed stale schema is
    ``cache_reabsorb`` in tests/stdio/test_schema_lab.py::test_sdk2_scenario_matches_both_oracles.)"""
    async with connect("modern", era=era) as lab:
        first = await lab.client.list_tools()
        second = await lab.client.list_tools()
    sent = lab.wire.requests("tools/list")
    hint = lab.wire.response_to(sent[0]).message["result"]
    assert {"tools_list_sent": len(sent), "ttlMs": hint.get("ttlMs"),
            "cacheScope": hint.get("cacheScope")} == FACTS["response_cache"][era]
    assert [t.name for t in second.tools] == [t.name for t in first.tools]


# -- recovery, and the candidate written in the chapter's cells -------------------------------------

@pytest.mark.parametrize("name", ["in_place_integer", "in_place_no_schema"])
async def test_a_new_session_walked_first_undoes_a_failed_refresh(name):
    fact = FACTS["reconnect"][name]
    async with connect("schema", fixture=schema_oracles.fixture(name), **schema_lab.BUDGET) as lab:
        await walk(lab)
        with pytest.raises(CatalogError):
            await walk(lab)
        assert await schema_lab.call_outcome(lab) == fact["old_session"]
    async with connect("schema", fixture=schema_oracles.fixture(name), **schema_lab.BUDGET) as fresh:
        assert (await walk(fresh)).names == fact["new_session_walk"]
        assert await schema_lab.call_outcome(fresh) == fact["new_session"]


def cell_written_candidate():
    """``my_candidate`` exactly as chapter 03's cell defines it (the cell's demo lines are not run)."""
    nb = nbformat.read(NOTEBOOKS / "03_schema_cache.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "seed-candidate-in-cells"]
    (node,) = [n for n in ast.parse(cell.source).body
               if isinstance(n, ast.AsyncFunctionDef) and n.name == "my_candidate"]
    scope = {"asynccontextmanager": asynccontextmanager, "walk": walk, "Ready": Ready}
    exec(compile(ast.Module([node], []), "03_schema_cache:seed-candidate-in-cells", "exec"), scope)
    return scope["my_candidate"]


@pytest.mark.parametrize("scenario", [s for s in schema_lab.SEED_SCENARIOS if not s.startswith("in_place")])
async def test_the_cell_written_candidate_matches_both_oracles(era, scenario):
    """The candidate of the chapter's cells gives every observation and audit the oracles name, as
    ``course_lib.candidate`` does (tests/stdio/test_schema_lab.py::test_seed_scenario_matches_both_oracles)."""
    result = await schema_lab.run(scenario, era, refresh=cell_written_candidate())
    schema_oracles.check(result)  # case oracle, exact audits, every finalizer ran


async def test_the_cell_written_candidate_refuses_over_budget():
    fact = FACTS["cell_written_over_budget"]
    my_candidate = cell_written_candidate()
    opened = schema_lab.Opener("schema", fixture=schema_oracles.fixture("candidate_success"))
    async with connect("schema", fixture=schema_oracles.fixture("active"), **schema_lab.BUDGET) as active:
        await walk(active)
        frames, body_ran = len(active.wire), False
        with pytest.raises(CatalogError) as caught:
            async with my_candidate(opened, max_pages=1):
                body_ran = True
        assert {"reason": caught.value.reason, "closed": opened.closed, "body_ran": body_ran,
                "frames_on_active": len(active.wire) - frames} == fact


async def test_a_listing_in_two_pages_prunes_nothing(era):
    """Only a single uncursored page without nextCursor prunes: cursor pages only ever add."""
    fact = FACTS["pruned_two_pages"]
    async with connect("schema", fixture=schema_oracles.fixture("pruned_two_pages"), era=era,
                       **schema_lab.BUDGET) as lab:
        await walk(lab)
        assert (await walk(lab)).names == fact["second_walk"]
        assert await schema_lab.call_outcome(lab) == fact["call"]


# -- the negative controls ---------------------------------------------------------------------------

@pytest.mark.parametrize("mutant", schema_mutants.MUTANTS, ids=lambda m: m.name)
def test_every_mutant_is_killed_at_its_named_check(mutant):
    """Each known-wrong edit, run in a copy of the course, fails its probe at the check the oracle
    names, with the mutant's message (``audit_skips_cursor_pages`` only the exact audit sees)."""
    want = FACTS["mutants"][mutant.name]
    outcome = negative.run_mutant(mutant)
    assert (outcome.verdict, outcome.check) == (want["verdict"], want["check"]), outcome
    assert mutant.message in outcome.message, outcome
    assert set(FACTS["mutants"]) == {m.name for m in schema_mutants.MUTANTS}


def test_a_mutant_that_does_not_import_is_not_a_kill():
    broken = negative.Mutant("import_error", "course_lib/refresh.py",
                             "from course_lib.walker import Catalog, walk",
                             "from course_lib.walker import Catalog, walk, no_such_name",
                             "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_never_yields",
                             "yielded")
    outcome = negative.run_mutant(broken)
    assert outcome.verdict == FACTS["broken_mutant"]["verdict"]
    assert outcome.detail.startswith(FACTS["broken_mutant"]["detail_starts"]), outcome.detail


def test_the_probes_pass_under_python_O_and_the_control_fails_there():
    """The probes' checks are ``require`` calls, which ``-O`` keeps; the control counts on an
    ``assert`` and fails only there, which shows that the child really ran optimised."""
    names = list(FACTS["under_O"])
    specs = [f"course_lib.chapters.schema_lab:{name}" for name in names]
    for flag, optimize in (("python", False), ("python -O", True)):
        seen = [r.verdict if r.verdict == "passed" else r.check
                for r in negative.run_baselines(specs, optimize=optimize)]
        assert seen == [FACTS["under_O"][name][flag] for name in names], flag
