"""In-process: the checks of tests/stdio/test_stateless.py's subject that start no process."""
import json

import mcp_types as types
import pytest
from mcp import MCPError

from functools import partial
from course_lib.paths import fixture
from course_lib.stateless import CHECKLIST, NOT_SHOWN, checklist_table

pytestmark = pytest.mark.anyio

ERRORS = json.loads(fixture("stateless", "errors.json").read_text())


def assert_error(got: tuple | None, name: str) -> None:
    """``got`` = (code, message, data) matches the fixed expectation ``name``."""
    want = ERRORS[name]
    assert got is not None, f"{name}: expected an error, got a result"
    code, message, data = got
    assert code == want["code"], f"{name}: code {code}"
    if "message" in want:
        assert message == want["message"], f"{name}: message {message!r}"
    else:
        assert message.startswith(want["message_starts"]), f"{name}: message {message!r}"
    if "data" in want:
        assert data == want["data"], f"{name}: data {data!r}"


def mcp_error(exc: MCPError) -> tuple:
    return exc.error.code, exc.error.message, exc.error.data


async def test_mcpserver_seals_request_state_itself():
    """MCPServer's RequestStateBoundary: the client sees an AES-GCM token, not the handler's JSON;
    the state the handler minted comes back to it in plain; an edited or client-made state is refused."""
    from mcp import Client
    from mcp.server import MCPServer
    from mcp.server.mcpserver import Context

    server = MCPServer("shop")
    approve = types.ElicitRequest(params=types.ElicitRequestFormParams(
        message="Approve?", requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}))

    @server.tool()
    async def provision(size: str, ctx: Context) -> str | types.InputRequiredResult:
        if ctx.request_state is None:
            return types.InputRequiredResult(input_requests={"approve": approve},
                                             request_state=json.dumps({"price": 80}))
        return f"charged {json.loads(ctx.request_state)['price']} credits"

    yes = {"approve": types.ElicitResult(action="accept", content={"ok": True})}
    async with Client(server, mode="2026-07-28") as client:
        call = partial(client.session.call_tool, "provision", {"size": "large"}, allow_input_required=True)
        first = await call()
        assert "price" not in first.request_state and first.request_state.startswith("v1.")
        done = await call(input_responses=yes, request_state=first.request_state)
        assert done.content[0].text == "charged 80 credits"
        for forged in (json.dumps({"price": 0}), first.request_state[:-2] + ("AA" if first.request_state[-2:] != "AA" else "BB")):
            with pytest.raises(MCPError) as caught:
                await call(input_responses=yes, request_state=forged)
            assert_error(mcp_error(caught.value), "mcpserver_state_refused")


# -- 6. the checklist --------------------------------------------------------------------------------

def test_checklist_links_only_course_chapters():
    chapters = {"00_orientation", "01_pagination", "02_cursor_failures", "06_paginating_server", "03_schema_cache",
                "04_resources_and_uris", "08_stateless_wire", "05_snapshot_bundles", "08_stateless_wire",
                "09_stateless_cache"}
    items = {item for item, _, _ in CHECKLIST}
    assert items == {"Authorise every call", "Least privilege and approval", "Untrusted input", "Untrusted output",
                     "Transport", "Limits and timeouts", "Supply chain", "Audit", "Recovery"}
    for _, _, lab in CHECKLIST:
        if lab == NOT_SHOWN:  # said plainly, never linked to a chapter that does not run it
            continue
        linked = {part.split(" (")[0].strip() for part in lab.split(",")}
        assert linked <= chapters, lab
    practices = {practice for _, practice, _ in CHECKLIST}
    # the items of the source article's checklist that no lab runs are there, labelled as such
    for topic in ("audience, scope, expiry", "TLS", "rate and concurrency", "idempotency keys"):
        rows = [lab for _, practice, lab in CHECKLIST if topic in practice]
        assert rows == [NOT_SHOWN], topic
    assert any("Origin" in p for p in practices) and any("pinned" in p for p in practices)


def test_checklist_fits_a_projector():
    lines = checklist_table().text().splitlines()
    assert max(len(line) for line in lines) <= 100
    assert sum(line.startswith("  ") for line in lines) == len(CHECKLIST)
