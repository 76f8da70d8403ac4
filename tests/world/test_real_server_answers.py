"""What real third-party servers exposed in the course's tools, each fixed and held here.

- the strict line client reads a server's own notification as the reply (``server-everything``
  sends ``notifications/message`` after the handshake): it now records it and waits on;
- the strict client had no ``env=``/``cwd=`` and failed every server that logs to stderr;
- ``raw_lines`` started course servers only;
- ``is_not_found`` knew one family of answers; ``not_found`` names the code each server used;
- ``connect`` showed a forced stop only as a negative code, and a server without the 2026-07-28
  era as a bare ``-32602``/``-32603``.

The answers below were recorded from the real servers named (pinned versions in
the course's notes; server-everything 2025.12.18, pinned in fixtures/peers, runs here live).
"""
import sys

import psutil
import pytest
from mcp import MCPError

from course_lib._runtime.portable import pid_alive
from course_lib.chapters.peers_lab import everything_argv
from course_lib.errors import EraNotSupported
from course_lib.labs import connect
from course_lib.line_client import LineClient, WireError
from course_lib.raw import error_of, raw_lines
from course_lib.uris import not_found
from course_lib.walker import walk

pytestmark = pytest.mark.anyio


async def test_line_client_waits_past_a_servers_own_notification():
    """server-everything sends notifications/message right after the handshake: not the reply."""
    wire = LineClient(everything_argv(), stderr="info", exit_grace=0.5)
    async with wire:
        listed = await wire.result("tools/list")
        await wire.close(check=False)
    assert "echo" in [tool["name"] for tool in listed["tools"]]
    assert [m["method"] for m in wire.received] == ["notifications/message"]
    assert "id" not in wire.received[0] and wire.replies_checked == 2
    assert wire.exit.forced  # server-everything 2025.12.18 needs SIGTERM after stdin EOF
    assert "Starting" in wire.exit.stderr and not pid_alive(wire.pid)


async def test_line_client_takes_env_and_cwd_and_keeps_stderr_as_information(tmp_path):
    argv = [sys.executable, "-m", "course_lib.servers", "catalog"]
    async with LineClient(argv, env={"COURSE_AUDIT_PROBE": "on"}, cwd=str(tmp_path), stderr="info") as wire:
        process = psutil.Process(wire.pid)
        assert process.cwd() == str(tmp_path)
        assert process.environ()["COURSE_AUDIT_PROBE"] == "on"
    assert wire.exit.clean or wire.exit.returncode == 0
    with pytest.raises(WireError) as caught:  # the chapters' rule stays the default: stderr must be empty
        async with LineClient(everything_argv(), exit_grace=5.0) as wire:
            pass
    assert caught.value.check == "server_exit"  # judged first: it needed SIGTERM


async def test_raw_lines_starts_any_command_line(tmp_path):
    async with raw_lines(everything_argv(), cwd=tmp_path, timeout=30) as pipe:
        await pipe.handshake()
        answer = await pipe.request("resources/read", {"uri": "test://static/resource/no-such"})
    assert not_found(answer["error"]).kind == "internal-error"
    assert error_of(answer)[0] == -32603
    assert pipe.returncode is not None and pipe.swept == []


async def test_connect_says_a_stop_was_forced():
    async with connect(everything_argv()) as lab:
        await lab.session.list_tools()
    assert lab.forced_stop == "SIGTERM" and lab.returncode < 0
    from course_lib.lab_failures import describe_exit

    assert describe_exit(lab).startswith("server was stopped by force (SIGTERM)")


@pytest.mark.parametrize("server,kw,code", [("modern", {"mode": "legacy-only"}, -32602), (None, {}, -32603)],
                         ids=["python-legacy-only", "server-everything"])
async def test_connect_names_a_missing_2026_era(server, kw, code):
    with pytest.raises(EraNotSupported) as caught:
        async with connect(server or everything_argv(), era="2026-07-28", **kw) as lab:
            await walk(lab)
    assert caught.value.reason == "era_not_supported"
    assert str(caught.value).startswith("the server does not seem to speak 2026-07-28")
    assert isinstance(caught.value, MCPError) and caught.value.error.code == code  # old handlers still catch it


async def test_a_modern_servers_own_refusal_is_not_an_era_problem():
    with pytest.raises(MCPError) as caught:
        async with connect("catalog", era="2026-07-28") as lab:
            import mcp_types as types

            await lab.session.list_tools(params=types.PaginatedRequestParams(cursor="forged"))
    assert not isinstance(caught.value, EraNotSupported) and caught.value.error.code == -32602
