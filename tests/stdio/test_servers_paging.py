"""The course servers that list resources, templates or prompts page them like the catalog pages tools.

The oracle is ``fixtures/servers/paging.json``, written by hand: with ``--pages 1,0,2`` every
list of atlas, shelf (classic) and snapshot comes in exactly three pages, and the walker reads
the complete list, in both eras. A cursor a list did not issue (made up, or issued by another
list of the same server) is -32602 and the list still serves its own cursors afterwards.
Without ``--pages`` every list is one page, as the chapters use them. Every server whose
capabilities name resources answers ``resources/templates/list``, never -32601.
"""
import json

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib import connect, servers, walk
from course_lib.paths import fixture
from course_lib.protocol import BOTH_ERAS
from course_lib.scenarios import gather
from course_lib.walker import WIRE_METHODS

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("servers", "paging.json").read_text(encoding="utf-8"))
LAYOUT = ",".join(str(size) for size in ORACLE["layout"])
PAGED = ORACLE["servers"]
ADVERTISE = ORACLE["advertise_resources"]
# One mode each of the servers that list no resources (schema needs a fixture to start).
NO_RESOURCES = {"catalog": {}, "modern": {}, "probe": {}, "hostile": {"mode": "grandchild"},
                "schema": {"fixture": fixture("schema", "active.json")}}
FOREIGN = "bm90LWlzc3VlZC1oZXJl"  # a well-formed token no server issued


def labs(server: str, fn) -> dict:
    """``fn(mode, era)`` for every mode of ``server`` in the oracle, in both eras."""
    return {(mode, era): (lambda mode=mode, era=era: fn(mode, era))
            for mode in PAGED[server]["modes"] for era in BOTH_ERAS}


@pytest.mark.parametrize("server", sorted(PAGED))
async def test_the_walker_reads_every_paged_list_in_both_eras(server):
    lists = PAGED[server]["lists"]

    async def run(mode, era):
        seen = {}
        async with connect(server, mode=mode, era=era, args=["--pages", LAYOUT]) as lab:
            for kind in lists:
                catalog = await walk(lab, kind)
                requests = len(lab.wire.requests(WIRE_METHODS[kind]))
                seen[kind] = {"names": catalog.names, "pages": list(catalog.page_sizes), "requests": requests}
        return seen

    expected = {kind: {**spec, "requests": len(spec["pages"])} for kind, spec in lists.items()}
    outcomes = await gather(labs(server, run))
    assert {key: expected for key in outcomes} == outcomes


@pytest.mark.parametrize("server", sorted(PAGED))
async def test_without_pages_every_list_is_one_page(server):
    lists = PAGED[server]["lists"]

    async def run(mode, era):
        async with connect(server, mode=mode, era=era) as lab:
            return {kind: list((await walk(lab, kind)).page_sizes) for kind in lists}

    outcomes = await gather(labs(server, run))
    assert {key: {kind: [len(spec["names"])] for kind, spec in lists.items()} for key in outcomes} == outcomes


def _code(exc: MCPError) -> int:
    return exc.error.code


@pytest.mark.parametrize("server", sorted(PAGED))
async def test_a_cursor_the_list_did_not_issue_is_refused(server):
    """-32602 for a made-up cursor and for another list's cursor; the list's own cursor still works."""
    kinds = list(PAGED[server]["lists"])
    methods = {"resources": "list_resources", "templates": "list_resource_templates", "prompts": "list_prompts"}

    async def run(mode, era):
        refused = {}
        async with connect(server, mode=mode, era=era, args=["--pages", LAYOUT]) as lab:
            issued = {kind: (await getattr(lab.session, methods[kind])()).next_cursor for kind in kinds}
            for kind in kinds:
                other = next(k for k in kinds if k != kind)
                for label, cursor in (("made up", FOREIGN), (f"from {other}", issued[other])):
                    try:
                        await getattr(lab.session, methods[kind])(params=types.PaginatedRequestParams(cursor=cursor))
                        refused[kind, label] = "answered"
                    except MCPError as exc:
                        refused[kind, label] = _code(exc)
                own = await getattr(lab.session, methods[kind])(params=types.PaginatedRequestParams(cursor=issued[kind]))
                refused[kind, "own"] = len(getattr(own, {"resources": "resources", "templates": "resource_templates",
                                                         "prompts": "prompts"}[kind]))
        return refused

    expected = {}
    for kind in kinds:
        other = next(k for k in kinds if k != kind)
        expected[kind, "made up"] = expected[kind, f"from {other}"] = types.INVALID_PARAMS
        expected[kind, "own"] = PAGED[server]["lists"][kind]["pages"][1]
    outcomes = await gather(labs(server, run))
    assert {key: expected for key in outcomes} == outcomes


async def test_every_server_that_lists_resources_answers_templates():
    assert sorted([*ADVERTISE, *NO_RESOURCES]) == servers.names()

    async def resources_server(server, mode, era):
        async with connect(server, mode=mode, era=era) as lab:
            advertised = lab.client.server_capabilities.resources is not None
            try:
                await lab.session.list_resource_templates()
                answer = "answered"
            except MCPError as exc:
                answer = _code(exc)  # -32601 would mean: no handler at all
        return advertised if era == "legacy" else None, answer

    async def other_server(server, era):
        async with connect(server, era=era, **NO_RESOURCES[server]) as lab:
            return lab.client.server_capabilities.resources is not None if era == "legacy" else None

    jobs = {(server, mode, era): (lambda s=server, m=mode, e=era: resources_server(s, m, e))
            for server, modes in ADVERTISE.items() for mode in modes for era in BOTH_ERAS}
    jobs |= {(server, era): (lambda s=server, e=era: other_server(s, e))
             for server in NO_RESOURCES for era in BOTH_ERAS}
    outcomes = await gather(jobs)
    expected = {key: ((True if key[2] == "legacy" else None, "answered") if len(key) == 3
                      else (False if key[1] == "legacy" else None)) for key in jobs}
    assert expected == outcomes
