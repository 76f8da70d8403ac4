"""The fork server: a fresh, separate server process per lab, the same world as a cold start,
the cold start as fallback, recovery when it fails, and nothing left behind when the parent
goes away."""
import json
import os
import re
import signal
import socket
import sys
import warnings

import anyio
import mcp_types as types
import psutil
import pytest

from course_lib import ServerCrashed, connect, walk
from course_lib._runtime import fastlaunch, forkserver
from course_lib.chapters import course_copy
from course_lib.labs import pid_alive as alive
from course_lib.paths import ROOT
from course_lib.servers import catalog
from course_lib.tooling.pytest_plugin import surviving_servers

pytestmark = pytest.mark.anyio

PER_PROCESS = ("pid", "ppid", "pgid", "sid")
NAMES = ["alpha", "beta", "gamma"]


@pytest.fixture(autouse=True)
def fast_path_on(monkeypatch):
    """These tests are about the fast path: it is on for them even in a run that switched it off."""
    monkeypatch.setenv(fastlaunch.SWITCH, "1")


@pytest.fixture
def fresh_fork_server(monkeypatch):
    """For tests that break the fork server: a fresh start (and restart, and warning) budget."""
    fastlaunch.shutdown()
    monkeypatch.setattr(fastlaunch, "_warned", False)
    yield
    fastlaunch.shutdown()


def kill_fork_server() -> int:
    pid = fastlaunch.running_pid()
    os.kill(pid, signal.SIGKILL)
    fastlaunch._servers[False].proc.wait(timeout=30)  # our own child: reaped here
    return pid


async def probe(**options) -> tuple:
    async with connect("probe", **options) as lab:
        result = await lab.client.call_tool("process", {})
    return lab, json.loads(result.content[0].text)


def world(lab, facts: dict) -> dict:
    """What a server sees of itself, minus what is per process or per lab by design."""
    assert facts["pid"] == lab.pid
    assert facts["pgid"] == facts["sid"] == facts["pid"]  # its own session and process group
    assert facts["environ"]["COURSE_LAB_DIR"] == str(lab.workdir)
    environ = dict(facts["environ"], COURSE_LAB_DIR="<lab dir>")
    return {key: value for key, value in dict(facts, environ=environ).items() if key not in PER_PROCESS}


async def test_fast_and_cold_servers_see_the_same_world():
    fast_lab, fast = await probe()
    assert fast_lab.launch_path == "fast"
    assert fast["ppid"] == fastlaunch.running_pid()  # forked by the fork server, not by us
    # The same server given as an argv list: a student's own command always starts cold.
    async with connect([sys.executable, "-m", "course_lib.servers", "probe"]) as cold_lab:
        result = await cold_lab.client.call_tool("process", {})
    cold = json.loads(result.content[0].text)
    assert cold_lab.launch_path == "cold"
    assert cold["ppid"] == os.getpid()
    # Same argv, cwd, sys.path[0], explicit environment, std streams, open descriptors, flags.
    assert world(fast_lab, fast) == world(cold_lab, cold)
    assert fast["environ"]["COURSE_LAB_RUN"] == os.environ["COURSE_LAB_RUN"]
    assert fast["threads"] == cold["threads"]
    assert sorted(fast["fds"].values()).count("socket") == 2  # asyncio's own pair; no fork server socket
    assert fast_lab.returncode == cold_lab.returncode == 0


async def test_every_lab_gets_a_fresh_process_that_the_leak_check_can_see():
    async with connect("catalog") as one, connect("catalog") as two:
        assert one.launch_path == two.launch_path == "fast"
        assert one.pid != two.pid
        live = {pid for pid, _ in surviving_servers()}
        assert {one.pid, two.pid, fastlaunch.running_pid()} <= live
        # Module state is per process: the second server never issued the first one's cursor.
        first = await one.session.list_tools()
        with pytest.raises(Exception, match="not issued by this server process"):
            await two.session.list_tools(params=types.PaginatedRequestParams(cursor=first.next_cursor))
    assert not alive(one.pid) and not alive(two.pid)
    assert one.returncode == two.returncode == 0


def _shown(pid: int) -> tuple[str, str]:
    """A process's command line as psutil and as ``ps`` report it."""
    import subprocess

    ps = subprocess.run(["ps", "-ww", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=True)
    return " ".join(psutil.Process(pid).cmdline()).strip(), ps.stdout.strip()


async def test_ps_names_a_server_by_its_course_name_and_mode(monkeypatch):
    expected = f"{sys.executable} -m course_lib.servers catalog --mode cycle"
    async with connect("catalog", mode="cycle") as fast:
        assert fast.launch_path == "fast"
        assert _shown(fast.pid) == (expected, expected)
        assert "course_lib fork server" in _shown(fastlaunch.running_pid())[0]
        assert [pid for pid, _ in surviving_servers() if pid == fast.pid] == [fast.pid]  # environment intact
    monkeypatch.setenv(fastlaunch.SWITCH, "0")
    async with connect("catalog", mode="cycle") as cold:
        assert cold.launch_path == "cold"
        assert _shown(cold.pid) == (expected, expected)


def _masked(lab) -> list[str]:
    return [f.direction + re.sub(r'"(cursor|nextCursor)":"[^"]*"', r'"\1":"<cursor>"', f.raw) for f in lab.wire]


async def _scenario(era: str) -> tuple:
    async with connect("catalog", era=era) as lab:
        names = (await walk(lab)).names
        outcome = await lab.client.call_tool("beta", {})
        with pytest.raises(Exception) as refused:
            await lab.session.list_tools(params=types.PaginatedRequestParams(cursor="forged"))
    return lab, (names, outcome.content[0].text, str(refused.value), lab.returncode, lab.stderr)


async def test_the_wire_is_the_same_on_both_paths(era, monkeypatch):
    fast_lab, fast = await _scenario(era)
    monkeypatch.setenv(fastlaunch.SWITCH, "0")
    cold_lab, cold = await _scenario(era)
    assert (fast_lab.launch_path, cold_lab.launch_path) == ("fast", "cold")
    assert fast == cold
    assert _masked(fast_lab) == _masked(cold_lab)


async def test_a_crashing_forked_server_reads_like_a_cold_one():
    with pytest.raises(ServerCrashed) as caught:
        async with connect("catalog", mode="no-such-mode"):
            pass
    assert fastlaunch.running_pid() is not None  # the fork server started it (and is still fine)
    assert caught.value.details["returncode"] == 2
    # argparse's own message (from the lab's stderr log), as a cold start prints it.
    choices = ", ".join(repr(mode) for mode in catalog.MODES)
    assert str(caught.value) == ("before it was ready: server exited with code 2: "
                                 "python -m course_lib.servers catalog: error: "
                                 f"argument --mode: invalid choice: 'no-such-mode' (choose from {choices})")


async def test_a_forked_server_that_will_not_stop_dies_with_its_lab():
    """It ignores SIGTERM and the end of its stdin: the lab's group kill ends it, as a cold one."""
    async with connect("hostile", mode="ignore-term", request_timeout=5) as lab:
        assert lab.launch_path == "fast"
        await walk(lab)
    assert lab.returncode == -signal.SIGKILL and not alive(lab.pid)


async def test_settings_only_a_fresh_interpreter_applies_start_cold():
    lab, facts = await probe(env={"PYTHONHASHSEED": "7"})
    assert lab.launch_path == "cold"
    assert facts["environ"]["PYTHONHASHSEED"] == "7"


IN_A_COPY = """
import anyio
from course_lib import connect, walk
async def main():
    async with connect("catalog") as lab:
        print(lab.launch_path, *(await walk(lab)).names)
anyio.run(main)
"""


async def test_a_copy_of_the_course_runs_the_copy(tmp_path):
    """What a negative control does: ``python -c`` in an edited copy of the course. Its labs
    fork from a fork server of its own, warmed from the copy; a lab of this process that names
    the copy starts cold. Either way the server runs the copy's code."""
    course_copy.copy_course(tmp_path)
    server = tmp_path / "course_lib" / "servers" / "catalog.py"
    server.write_text(server.read_text().replace('PAGES = (("alpha",),', 'PAGES = (("alpha-in-the-copy",),'))
    copied = ["alpha-in-the-copy", *NAMES[1:]]
    done = await anyio.run_process([sys.executable, "-c", IN_A_COPY], cwd=tmp_path, check=False,
                                   env=course_copy.probe_env(tmp_path))
    assert done.stdout.decode().split() == ["fast", *copied], done.stderr.decode()[-500:]
    async with connect("catalog", env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path) as lab:
        assert (await walk(lab)).names == copied
    assert lab.launch_path == "cold"
    async with connect("catalog") as lab:  # the next lab of this process: the course itself
        assert lab.launch_path == "fast" and (await walk(lab)).names == NAMES


async def test_a_dead_fork_server_is_started_again_once(fresh_fork_server):
    async with connect("catalog") as lab:
        first = kill_fork_server()
        assert (await walk(lab)).names == NAMES  # the lab goes on without it
    assert lab.launch_path == "fast" and not alive(lab.pid)
    assert lab.returncode == fastlaunch.STATUS_LOST  # nobody was left to report its exit status
    async with connect("catalog") as again:
        assert (await walk(again)).names == NAMES
    assert again.launch_path == "fast" and again.returncode == 0
    assert fastlaunch.running_pid() not in (None, first)
    kill_fork_server()
    async with connect("catalog") as cold:  # restarted once already: cold from now on
        assert (await walk(cold)).names == NAMES
    assert cold.launch_path == "cold" and cold.returncode == 0


async def test_a_failed_spawn_is_retried_once_with_one_warning(fresh_fork_server, monkeypatch):
    """The fork server gets a request it cannot read (every other one): it forks nothing, stays
    up, and the retry forks the server. The warning is given once per process."""
    encode, sent = forkserver._encode, []

    def garble_every_other(request: dict) -> bytes:
        sent.append(request)
        return b"{not json" if len(sent) % 2 else encode(request)

    monkeypatch.setattr(forkserver, "_encode", garble_every_other)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        labs = []
        for _ in range(2):
            async with connect("catalog") as lab:
                assert (await walk(lab)).names == NAMES
            labs.append(lab)
    assert len(sent) == 4 and [lab.launch_path for lab in labs] == ["fast", "fast"]
    assert [(w.category, str(w.message)) for w in caught] == [
        (RuntimeWarning, "fast launch: the fork server did not start a server; retrying once")]


PARENT = """
import os, signal, sys, anyio
from course_lib import connect
from course_lib._runtime import fastlaunch
async def main():
    killed = sys.argv[1] == "killed"
    # Killed, its lab's server is one that outlives the end of its stdin: only a kill ends it.
    async with connect("hostile", mode="ignore-term") if killed else connect("catalog") as lab:
        print(fastlaunch.running_pid(), lab.pid, lab.launch_path, fastlaunch._servers[False].address, flush=True)
        if killed:
            os.kill(os.getpid(), signal.SIGKILL)
anyio.run(main)
"""


@pytest.mark.parametrize("ending", ["exits", "killed"])
async def test_nothing_outlives_the_parent(ending):
    done = await anyio.run_process([sys.executable, "-c", PARENT, ending], check=False,
                                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == (-signal.SIGKILL if ending == "killed" else 0), done.stderr.decode()[-500:]
    fork_server, server, path, address = done.stdout.decode().split()
    assert path == "fast"
    fork_server, server = int(fork_server), int(server)
    gone, left = psutil.wait_procs([psutil.Process(p) for p in (fork_server, server) if alive(p)], timeout=10)
    assert left == [], f"still alive: {[p.pid for p in left]}"
    assert not os.path.exists(os.path.dirname(address)), "the fork server's address is left behind"


async def test_chapter_04s_tap_forks_its_server_and_ends_it(tmp_path):
    """A client's wire tap asks this process's fork server for the course server behind it (the
    address on its command line): the server is forked, answers through the tap, and is gone once
    the tap is; with no address, the tap starts it cold."""
    from course_lib._runtime.process import fork_address
    from course_lib.chapters import peers_lab

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    shown = " ".join(peers_lab.server_argv("catalog", "normal"))
    for forked in (True, False):
        argv = peers_lab.tapped_argv(tmp_path / f"tap-{forked}.jsonl", "catalog", "normal")
        assert argv[4:6] == ["--fork", fork_address()]
        if not forked:
            del argv[4:6]
        tap = await anyio.open_process(argv, stdin=-1, stdout=-1, stderr=-1)
        await tap.stdin.send((json.dumps(initialize) + "\n").encode())
        reply = json.loads((await tap.stdout.receive()).split(b"\n")[0])
        assert reply["id"] == 1 and "serverInfo" in reply["result"]
        below = psutil.Process(fastlaunch.running_pid() if forked else tap.pid).children()
        (server,) = [p for p in below if " ".join(p.cmdline()).strip() == shown]  # forked: a cold start's title
        await tap.stdin.aclose()
        assert await tap.wait() == 0
        with anyio.fail_after(5):
            while alive(server.pid):
                await anyio.sleep(0.05)
