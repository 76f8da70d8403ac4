"""What the stateless-wire chapter (08) states beyond its own cells, held against the hand-written
oracle fixtures/stateless/wire_facts.json: how ``era="auto"`` answers each refusal of
``server/discover``, ``Client.call_tool`` after -32020 in each era, what SDK 2.3.0's tables say the
2026-07-28 revision retired, tasks as an extension, and what 2.3.0 still ships of HTTP+SSE."""
import json
import pkgutil
from functools import partial

import mcp.client.auth.extensions as auth_extensions
import pytest
from mcp import MCPError
from mcp_types import methods

import course_lib
from course_lib.paths import fixture
from course_lib.protocol import LEGACY_VERSION, MODERN_VERSION
from course_lib.raw import enveloped, error_of, raw_lines

pytestmark = pytest.mark.anyio

FACTS = json.loads(fixture("stateless", "wire_facts.json").read_text(encoding="utf-8"))
connect = partial(course_lib.connect, request_timeout=30)  # a shared machine: more than 10 s a reply


@pytest.mark.parametrize("row", FACTS["discover_refusals"], ids=lambda r: f"{r['mode']}-{r['era']}")
async def test_auto_answers_each_refusal_of_discover(row):
    from course_lib.servers.modern import DISCOVER_REFUSALS

    assert DISCOVER_REFUSALS[row["mode"]][1] == row["supported"]
    if row["before_tools_list"] is None:  # only versions the client lacks: auto stops, never lists
        with pytest.raises(MCPError) as caught:
            async with connect("modern", mode=row["mode"], era=row["era"]) as lab:
                await lab.client.list_tools()
        assert caught.value.error.code == row["outcome"]
        return
    async with connect("modern", mode=row["mode"], era=row["era"]) as lab:
        await lab.client.list_tools()
    requests = [r.method for r in lab.wire.requests()]
    assert requests == [*row["before_tools_list"], "tools/list"]
    assert lab.protocol_version == row["outcome"]


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_the_client_relists_and_resends_once_after_header_mismatch_only_at_2026(era):
    want = FACTS["header_mismatch_over_stdio"][era]
    async with connect("modern", mode="header-mismatch", era=era) as lab:
        if "code" in want:
            with pytest.raises(MCPError) as caught:
                await lab.client.call_tool("echo", {"text": "hi"})
            assert (caught.value.error.code, caught.value.error.message) == (want["code"], want["message"])
        else:
            assert (await lab.client.call_tool("echo", {"text": "hi"})).content[0].text == want["outcome"]
    assert [r.method for r in lab.wire.requests() if r.method.startswith("tools/")] == want["tool_requests"]


async def test_tasks_are_an_extension_and_no_era_dispatches_a_task_method():
    want = FACTS["tasks"]
    async with raw_lines("modern") as pipe:
        await pipe.request("tools/list", enveloped())
        modern = error_of(await pipe.request("tasks/get", enveloped({"taskId": "t-1"})))
    async with raw_lines("modern") as pipe:
        await pipe.handshake()
        legacy = error_of(await pipe.request("tasks/get", {"taskId": "t-1"}))
    for got in (modern, legacy):
        assert got is not None and got[:2] == (want["tasks_get"]["code"], want["tasks_get"]["message"])
    for method, version in (("initialize", LEGACY_VERSION), ("server/discover", MODERN_VERSION)):
        model = methods.SERVER_RESULTS[(method, version)].model_fields["capabilities"].annotation
        assert sorted(model.model_fields) == want["server_capability_fields"][version]
    assert sorted(m.name for m in pkgutil.iter_modules(auth_extensions.__path__)) == want["client_auth_extensions"]
