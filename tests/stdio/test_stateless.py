"""The stateless era (2026-07-28) on the real SDK, as chapters 08 and 11 show it: eras on the wire,
error shapes, routing headers over HTTP, the response cache and its pitfalls, input_required,
request_state integrity."""
import json

import mcp_types as types
import pytest
from mcp import MCPError
from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore
from mcp import InputRequiredRoundsExceededError

from functools import partial

import course_lib
from course_lib import CourseError
from course_lib.labs import pid_alive as alive
from course_lib.loopback import serve_http
from course_lib.paths import fixture
from course_lib.raw import INITIALIZE, envelope, enveloped, error_of, raw_lines
from course_lib.stateless import call_by_hand, client_listing, read_state, tamper

from test_stateless_unit import assert_error, mcp_error

pytestmark = pytest.mark.anyio
LISTINGS = json.loads(fixture("stateless", "listings.json").read_text())
MRTR = json.loads(fixture("stateless", "mrtr.json").read_text())
HEADERS = json.loads(fixture("stateless", "http_headers.json").read_text())
# The course shares a few cores: give each request more than the default 10 s answer budget.
connect = partial(course_lib.connect, request_timeout=30)
ENVELOPE_KEYS = {"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
                 "io.modelcontextprotocol/clientInfo"}


# -- 1. the eras side by side --------------------------------------------------------------------

@pytest.mark.parametrize("era, opening", [
    ("legacy", ["initialize", "notifications/initialized", "tools/list"]),
    ("2026-07-28", ["tools/list"]),
    ("auto", ["server/discover", "tools/list"]),
])
async def test_each_era_opens_as_documented(era, opening):
    async with connect("modern", era=era) as lab:
        names = [t.name for t in (await lab.client.list_tools()).tools]
        version = lab.protocol_version
        server_info = lab.client.server_info
    assert names == LISTINGS["working_tools"]
    methods = lab.wire.methods()
    if era == "auto" and methods[:2] == ["server/discover", "initialize"]:
        # A server slower to start than the SDK's fixed 10 s discover budget (a loaded machine):
        # the probe timed out client-side but locked the connection modern on the server, so the
        # fallback initialize gets -32022 and the client probes once more (mcp/client/_probe.py).
        refused = lab.wire.response_to(lab.wire.requests("initialize")[0]).message["error"]
        assert_error((refused["code"], refused["message"], refused.get("data")), "initialize_on_stateless")
        methods = [m for m in methods if m != "initialize"][1:]
    assert methods == opening
    assert version == ("2025-11-25" if era == "legacy" else "2026-07-28")
    enveloped_requests = [f for f in lab.wire.requests() if "_meta" in f.params]
    if era == "legacy":
        assert enveloped_requests == []
        assert server_info.name == "course-modern"
    else:
        # every request carries the envelope (the handshake of a slow start never does)
        assert enveloped_requests == [f for f in lab.wire.requests() if f.method != "initialize"]
        for request in enveloped_requests:
            assert set(request.params["_meta"]) == ENVELOPE_KEYS
            assert request.params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            reply = lab.wire.response_to(request).message["result"]
            assert reply["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "course-modern"
        # a pinned client never asked who the server is; auto learnt it from server/discover
        assert (server_info is None) == (era == "2026-07-28")


async def test_auto_falls_back_on_a_handshake_only_server_and_a_pinned_client_fails():
    async with connect("modern", mode="legacy-only", era="auto") as lab:
        names = [t.name for t in (await lab.client.list_tools()).tools]
        version = lab.protocol_version
    assert names == LISTINGS["working_tools"] and version == "2025-11-25"
    assert lab.wire.methods() == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
    discover = lab.wire.requests("server/discover")[0]
    reply = lab.wire.response_to(discover).message["error"]
    assert_error((reply["code"], reply["message"], reply.get("data")), "discover_on_handshake_only")

    with pytest.raises(MCPError) as caught:
        async with connect("modern", mode="legacy-only", era="2026-07-28") as lab:
            await lab.client.list_tools()
    assert_error(mcp_error(caught.value), "pinned_on_handshake_only")


# -- 2. error shapes, each triggered on the raw wire ------------------------------------------------

async def test_error_shapes_on_a_stateless_connection():
    async with raw_lines("modern") as pipe:
        first = await pipe.request("tools/list", enveloped())  # opens the connection in the 2026-07-28 era
        assert error_of(first) is None
        assert_error(error_of(await pipe.request("tools/list", enveloped(version="2099-01-01"))), "unsupported_version")
        assert_error(error_of(await pipe.request("tools/list", {})), "missing_envelope")
        assert_error(error_of(await pipe.request("initialize", INITIALIZE)), "initialize_on_stateless")
        assert_error(error_of(await pipe.request("reports/export", enveloped())), "unknown_method")
        await pipe.notify("notifications/initialized")
        assert await pipe.silence(0.5) == []  # a notification gets no reply, not even an error
        after = await pipe.request("tools/list", enveloped())
        assert error_of(after) is None and after["id"] == 6  # the connection still answers in order
        pid = pipe.pid
    assert not alive(pid)


async def test_enveloped_request_on_a_legacy_connection_is_refused():
    async with raw_lines("modern") as pipe:
        hello = await pipe.handshake()
        assert hello["result"]["protocolVersion"] == "2025-11-25"
        assert_error(error_of(await pipe.request("tools/list", enveloped())), "envelope_on_legacy")
        assert error_of(await pipe.request("tools/list", {})) is None


async def test_unexpected_exception_leaks_on_legacy_and_is_sanitised_at_2026(era):
    async with connect("modern", era=era) as lab:
        with pytest.raises(MCPError) as caught:
            await lab.client.call_tool("boom", {})
        assert (await lab.client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"
    assert_error(mcp_error(caught.value), "exception_legacy" if era == "legacy" else "exception_2026")
    assert ("/srv/billing.db" in caught.value.error.message) == (era == "legacy")


# -- 3. caching -------------------------------------------------------------------------------------

async def test_cache_hints_are_on_the_wire_only_at_2026_and_python_fills_defaults(era):
    async with connect("modern", era=era) as lab:
        page = await lab.client.list_tools()
    request = lab.wire.requests("tools/list")[0]
    wire = lab.wire.response_to(request).message["result"]
    if era == "legacy":
        assert "ttlMs" not in wire and "cacheScope" not in wire
        assert (page.ttl_ms, page.cache_scope) == (0, "private")  # defaults the server never sent
        assert "ttl_ms" not in page.model_fields_set
    else:
        assert (wire["ttlMs"], wire["cacheScope"]) == (60000, "private")
        assert (page.ttl_ms, page.cache_scope) == (60000, "private")
        assert "ttl_ms" in page.model_fields_set


async def test_stale_page_one_is_stitched_to_a_live_page_two_and_refresh_avoids_it():
    async with connect("modern", mode="catalog", era="2026-07-28") as lab:
        assert await client_listing(lab.client) == LISTINGS["version_1"]
        await lab.client.call_tool("bump", {})
        before = len(lab.wire.requests("tools/list"))
        stitched = await client_listing(lab.client)
        stale_fetches = len(lab.wire.requests("tools/list")) - before
        refreshed = await client_listing(lab.client, first_page="refresh")
    assert stitched == LISTINGS["stale_page_1_live_page_2"]
    assert stitched not in (LISTINGS["version_1"], LISTINGS["version_2"])  # a listing that never existed
    assert stale_fetches == 1  # only page 2 went to the server
    assert refreshed == LISTINGS["version_2"]


async def test_no_cache_or_versioned_cursors_avoid_the_stitched_listing():
    async with connect("modern", mode="catalog", era="2026-07-28", cache=None) as lab:
        await client_listing(lab.client)
        await lab.client.call_tool("bump", {})
        assert await client_listing(lab.client) == LISTINGS["version_2"]
    async with connect("modern", mode="versioned", era="2026-07-28") as lab:
        await client_listing(lab.client)
        await lab.client.call_tool("bump", {})
        with pytest.raises(MCPError) as caught:
            await client_listing(lab.client)
        assert caught.value.error.code == types.INVALID_PARAMS
        assert await client_listing(lab.client) == LISTINGS["version_2"]  # the SDK evicted page 1 on -32602


async def test_the_default_cache_stores_nothing_on_legacy():
    async with connect("modern", mode="catalog", era="legacy") as lab:  # CacheConfig(): default_ttl_ms=0
        await lab.client.list_tools()
        await lab.client.list_tools()
    assert CacheConfig().default_ttl_ms == 0
    assert len(lab.wire.requests("tools/list")) == 2  # a legacy result has no ttlMs: nothing was kept


async def test_a_cached_cursor_sent_to_another_process_is_refused():
    """Two processes of the catalog server share one store under one target_id: the second is served
    the first's page 1, and its cursor, which only the first process issued."""
    async def walk_twice(target_ids):
        store, outcomes = InMemoryResponseCacheStore(), []
        for target_id in target_ids:
            config = CacheConfig(store=store, partition="alice", target_id=target_id, default_ttl_ms=60_000)
            async with connect("catalog", era="legacy", cache=config) as lab:
                try:
                    outcomes.append(await client_listing(lab.client))
                except MCPError as exc:
                    outcomes.append(mcp_error(exc))
        return outcomes

    shared = await walk_twice(["catalog", "catalog"])
    assert shared[0] == ["alpha", "beta", "gamma"]
    assert_error(shared[1], "cursor_of_another_process")
    assert await walk_twice(["catalog-1", "catalog-2"]) == [["alpha", "beta", "gamma"]] * 2


async def test_list_changed_evicts_only_when_it_is_delivered():
    # legacy: hints are ignored, so cache by default_ttl_ms; the notification arrives and evicts
    async with connect("modern", mode="catalog", era="legacy", cache=CacheConfig(default_ttl_ms=60_000)) as lab:
        await client_listing(lab.client)
        await lab.client.call_tool("bump", {})
        assert await client_listing(lab.client) == LISTINGS["version_2"]
    assert "notifications/tools/list_changed" in [f.method for f in lab.wire if f.direction == "←"]
    # 2026-07-28 without listen(): the server's notification never reaches the wire
    async with connect("modern", mode="catalog", era="2026-07-28") as lab:
        await client_listing(lab.client)
        await lab.client.call_tool("bump", {})
        assert await client_listing(lab.client) == LISTINGS["stale_page_1_live_page_2"]
    assert not [f for f in lab.wire if f.direction == "←" and f.kind == "notification"]
    # 2026-07-28 with listen(): the event arrives and the Client evicts before we relist
    async with connect("modern", mode="catalog", era="2026-07-28") as lab:
        await client_listing(lab.client)
        async with lab.client.listen(tools_list_changed=True) as sub:
            await lab.client.call_tool("bump", {})
            async for event in sub:
                assert type(event).__name__ == "ToolsListChanged"
                break
            assert await client_listing(lab.client) == LISTINGS["version_2"]


async def _two_principals(mode: str, share_public: bool) -> tuple[dict, InMemoryResponseCacheStore]:
    store = InMemoryResponseCacheStore()
    seen = {}
    for who in ("alice", "bob"):
        config = CacheConfig(store=store, partition=who, target_id="hr-server", share_public=share_public)
        async with connect("modern", mode=mode, era="2026-07-28", args=("--principal", who), cache=config) as lab:
            names = [t.name for t in (await lab.client.list_tools()).tools]
        seen[who] = (names, len(lab.wire.requests("tools/list")))
    return seen, store


@pytest.mark.parametrize("mode, share_public, bob_sees, bob_fetches", [
    ("catalog", True, "bob_page_1", 1),   # private scope: never shared, whatever the client says
    ("public", False, "bob_page_1", 1),   # public label, but the client does not share: partitions hold
    ("public", True, "alice_page_1", 0),  # public label + share_public: bob is served alice's listing
])
async def test_partitions_and_share_public(mode, share_public, bob_sees, bob_fetches):
    seen, store = await _two_principals(mode, share_public)
    assert seen["alice"] == (LISTINGS["alice_page_1"], 1)
    assert seen["bob"] == (LISTINGS[bob_sees], bob_fetches)
    partitions = sorted(json.loads(key.partition)[-1] if len(json.loads(key.partition)) == 4 else "(shared)"
                        for key in store._entries)
    assert partitions == (["(shared)"] if bob_fetches == 0 else ["alice", "bob"])


# -- 4. input_required ------------------------------------------------------------------------------

def answers(questions: list):
    async def on_elicit(ctx, params):
        questions.append(params.message)
        if "region" in params.requested_schema.get("properties", {}):
            return types.ElicitResult(action="accept", content={"region": "eu-west"})
        return types.ElicitResult(action="accept", content={"ok": True})
    return on_elicit


async def test_input_required_callback_and_round_cap():
    questions: list[str] = []
    async with connect("modern", era="2026-07-28", elicitation_callback=answers(questions),
                       input_required_max_rounds=MRTR["round_cap"]) as lab:
        result = await lab.client.call_tool("provision", {"size": "small"})
        assert result.content[0].text == MRTR["provisioned_small"]
        assert questions == MRTR["questions"]
        with pytest.raises(InputRequiredRoundsExceededError):
            await lab.client.call_tool("forever", {})
    forever_calls = [f for f in lab.wire.requests("tools/call") if f.params["name"] == "forever"]
    assert len(forever_calls) == MRTR["calls_at_cap"]
    assert all("requestState" in f.params for f in forever_calls[1:])


async def test_input_required_needs_the_2026_era_and_a_callback(era):
    async with connect("modern", era=era) as lab:
        if era == "legacy":  # no input_required at 2025-11-25: a tool error says so, never a crash
            for tool, args in (("provision", {"size": "small"}), ("forever", {})):
                result = await lab.client.call_tool(tool, args)
                assert (result.is_error, result.content[0].text) == tuple(MRTR["legacy_answer"].values())
            assert "Traceback" not in lab.stderr
            return
        with pytest.raises(MCPError) as caught:
            await lab.client.call_tool("provision", {"size": "small"})
    assert_error(mcp_error(caught.value), "no_elicitation_callback")


async def test_input_required_returned_on_legacy_is_refused_by_the_sdk():
    """The era-blind mode returns input_required without looking at the era: on a 2025-11-25
    connection the SDK refuses to send it and answers -32603; the traceback stays on stderr."""
    async with connect("modern", mode="era-blind", era="legacy") as lab:
        with pytest.raises(MCPError) as caught:
            await lab.client.call_tool("provision", {"size": "small"})
    assert_error(mcp_error(caught.value), "input_required_on_legacy")
    assert "returned an invalid result\nTraceback" in lab.stderr
    async with connect("modern", mode="era-blind", era="2026-07-28") as lab:
        first = await lab.session.call_tool("provision", {"size": "small"}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)


async def region_then_approve(key, params):
    if key == "region":
        return types.ElicitResult(action="accept", content={"region": "us-east"})
    return types.ElicitResult(action="accept", content={"ok": True})


def cheaper(round_number: int, state: str) -> str:
    return tamper(state, price=0) if round_number == 2 else state


async def test_unsealed_state_is_tampered_and_the_sealed_one_is_verified():
    region = {"region": types.ElicitResult(action="accept", content={"region": "us-east"})}
    async with connect("modern", mode="modern", era="2026-07-28") as lab:
        honest, log = await call_by_hand(lab.session, "provision", {"size": "large"}, region_then_approve)
        forged, _ = await call_by_hand(lab.session, "provision", {"size": "large"}, region_then_approve,
                                       edit_state=cheaper)
        first = await lab.session.call_tool("provision", {"size": "small"}, allow_input_required=True)
        replayed = await lab.session.call_tool("provision", {"size": "large"}, allow_input_required=True,
                                               input_responses=region, request_state=first.request_state)
    assert [row[1] for row in log] == ["input_required", "input_required", "complete"]
    assert honest.content[0].text == MRTR["provisioned_large"]
    assert forged.content[0].text == MRTR["tampered_plain"]  # the defect: the server believed the client
    assert replayed.input_requests["approve"].params.message == MRTR["questions"][1]  # a small price, large order

    async with connect("modern", mode="sealed", era="2026-07-28") as lab:
        honest, _ = await call_by_hand(lab.session, "provision", {"size": "large"}, region_then_approve)
        with pytest.raises(MCPError) as caught:
            await call_by_hand(lab.session, "provision", {"size": "large"}, region_then_approve, edit_state=cheaper)
        # a genuine state from a small order, replayed on a large one, is refused too (bound to the call)
        first = await lab.session.call_tool("provision", {"size": "small"}, allow_input_required=True)
        with pytest.raises(MCPError) as replayed:
            await lab.session.call_tool("provision", {"size": "large"}, allow_input_required=True,
                                        input_responses=region, request_state=first.request_state)
    assert honest.content[0].text == MRTR["provisioned_large"]
    assert_error(mcp_error(caught.value), "state_tampered")
    assert_error(mcp_error(replayed.value), "state_tampered")
    assert read_state(first.request_state)["price"] == 10  # signed, not secret: the client can read it


async def test_manual_loop_is_bounded():
    async def never_done(key, params):
        return types.ElicitResult(action="accept", content={"ok": True})

    async with connect("modern", era="2026-07-28") as lab:
        with pytest.raises(CourseError) as caught:
            await call_by_hand(lab.session, "forever", {}, never_done, max_rounds=3)
    assert caught.value.reason == "input_rounds"
    assert len(lab.wire.requests("tools/call")) == 3


# -- 5. routing headers over Streamable HTTP ---------------------------------------------------------

async def test_routing_headers_exist_on_http_and_are_checked():
    from mcp import Client

    async with serve_http("modern") as site:
        assert site.url.startswith("http://127.0.0.1:")
        async with Client(site.url, mode="2026-07-28") as client:
            await client.list_tools()
            await client.call_tool("echo", {"text": "hi"})
        modern = list(site.headers())
        async with Client(site.url, mode="legacy") as client:
            await client.list_tools()
            await client.call_tool("echo", {"text": "hi"})
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": envelope()}}
        status, answer = await site.post(body, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                                "Mcp-Name": "boom"})
        pid = site.pid
    assert modern == HEADERS["2026-07-28"]
    assert site.headers()[len(modern):len(modern) + 4] == HEADERS["legacy"]
    assert status == 400
    assert_error((answer["error"]["code"], answer["error"]["message"], None), "header_mismatch")
    assert not alive(pid) and site.returncode is not None


async def test_no_server_outlives_a_failing_block():
    with pytest.raises(KeyError):
        async with raw_lines("modern") as pipe:
            await pipe.request("tools/list", enveloped())
            raise KeyError("student bug")
    assert not alive(pipe.pid) and pipe.returncode is not None
    with pytest.raises(KeyError):
        async with serve_http("modern") as site:
            raise KeyError("student bug")
    assert not alive(site.pid) and site.returncode is not None
