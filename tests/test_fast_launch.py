"""The fork server: a fresh, separate server process per lab, the same world as a cold start,
the cold start as fallback, and nothing left behind when the parent goes away."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import anyio
import mcp_types as types
import pytest

from course_lib import LaunchError, ServerCrashed, connect, walk
from course_lib._runtime import fastlaunch as forkserver
from course_lib.chapters import negative_controls as negative
from course_lib.tooling.pytest_plugin import surviving_servers
from course_lib.labs import pid_alive as alive
from course_lib.paths import ROOT
from course_lib.servers import catalog

pytestmark = pytest.mark.anyio

PER_PROCESS = ("pid", "ppid", "pgid", "sid")


@pytest.fixture(autouse=True)
def fast_path_on(monkeypatch):
    """These tests are about the fast path: it is on for them even in a run that switched it off."""
    monkeypatch.setenv(forkserver.SWITCH, "1")


@pytest.fixture
def own_fork_server():
    """For tests that kill, restart or share a fork server: one of this process's own, never
    the one the run's workers share."""
    forkserver.shutdown()  # leave the shared one (a connection only; it keeps running)
    saved = {name: os.environ.pop(name, None) for name in (forkserver.SHARED, "JUPYTER_PATH")}
    if saved["JUPYTER_PATH"] is not None:
        os.environ["JUPYTER_PATH"] = saved["JUPYTER_PATH"]
    yield
    forkserver.shutdown()
    for name, value in saved.items():  # ``share`` sets both
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def run_kernels(request):
    """Pid of the fork server that forks this run's kernels: the shared one, or in a run
    without workers, one of this process's own."""
    if forkserver.forked_kernels() is None:
        request.getfixturevalue("own_fork_server")
        forkserver.share()
    return int(os.environ[forkserver.SHARED].split()[1])


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
    assert fast["ppid"] == forkserver.running_pid()  # forked by the fork server, not by us
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


async def test_every_lab_gets_a_fresh_process_that_the_leak_check_can_see():
    async with connect("catalog") as one, connect("catalog") as two:
        assert one.launch_path == two.launch_path == "fast"
        assert one.pid != two.pid
        live = {pid for pid, _ in surviving_servers()}
        assert {one.pid, two.pid, forkserver.running_pid()} <= live
        # Module state is per process: the second server never issued the first one's cursor.
        first = await one.session.list_tools()
        with pytest.raises(Exception, match="not issued by this server process"):
            await two.session.list_tools(params=types.PaginatedRequestParams(cursor=first.next_cursor))
    assert not alive(one.pid) and not alive(two.pid)
    assert one.returncode == two.returncode == 0


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
    monkeypatch.setenv(forkserver.SWITCH, "0")
    cold_lab, cold = await _scenario(era)
    assert (fast_lab.launch_path, cold_lab.launch_path) == ("fast", "cold")
    assert fast == cold
    assert _masked(fast_lab) == _masked(cold_lab)


async def test_a_crashing_forked_server_reads_like_a_cold_one():
    with pytest.raises(ServerCrashed) as caught:
        async with connect("catalog", mode="no-such-mode"):
            pass
    assert forkserver.running_pid() is not None  # the fork server started it (and is still fine)
    assert caught.value.details["returncode"] == 2
    # argparse's own message, as `python -m course_lib.servers catalog --mode no-such-mode` prints it.
    choices = ", ".join(repr(mode) for mode in catalog.MODES)
    assert str(caught.value) == ("before it was ready: server exited with code 2: "
                                 "python -m course_lib.servers catalog: error: "
                                 f"argument --mode: invalid choice: 'no-such-mode' (choose from {choices})")


async def test_settings_only_a_fresh_interpreter_applies_start_cold():
    lab, facts = await probe(env={"PYTHONHASHSEED": "7"})
    assert lab.launch_path == "cold"
    assert facts["environ"]["PYTHONHASHSEED"] == "7"


async def test_when_the_fork_server_dies_labs_close_cleanly_and_start_cold_until_restart(own_fork_server):
    try:
        async with connect("catalog") as lab:
            os.kill(forkserver.running_pid(), signal.SIGKILL)
            assert (await walk(lab)).names == ["alpha", "beta", "gamma"]
        assert lab.launch_path == "fast" and not alive(lab.pid)
        assert lab.returncode == forkserver.STATUS_LOST  # nobody was left to report the exit code
        async with connect("catalog") as fallback:
            assert (await walk(fallback)).names == ["alpha", "beta", "gamma"]
        assert fallback.launch_path == "cold" and fallback.returncode == 0
    finally:
        forkserver.shutdown()
    async with connect("catalog") as restarted:
        pass
    assert restarted.launch_path == "fast"


PARENT = """
import os, signal, sys, anyio
from course_lib import connect
from course_lib._runtime import fastlaunch as forkserver
async def main():
    async with connect("catalog") as lab:
        print(forkserver.running_pid(), lab.pid, flush=True)
        if sys.argv[1] == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
anyio.run(main)
"""


@pytest.mark.parametrize("ending", ["exits", "killed"])
async def test_nothing_outlives_the_parent(ending):
    env = {k: v for k, v in os.environ.items() if k != forkserver.SHARED}  # it starts its own
    done = await anyio.run_process([sys.executable, "-c", PARENT, ending], check=False,
                                   env=dict(env, PYTHONPATH=str(ROOT)))
    assert done.returncode == (-signal.SIGKILL if ending == "killed" else 0), done.stderr.decode()[-500:]
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(map(alive, pids)) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert not any(map(alive, pids)), f"still alive: {[p for p in pids if alive(p)]}"


async def test_a_missing_server_fails_before_any_fork():
    with pytest.raises(LaunchError, match="no course server named"):
        async with connect("nope"):
            pass


SHARING = """
import os, signal, sys, anyio
from course_lib import connect
from course_lib._runtime import fastlaunch as forkserver
async def main():
    async with connect("catalog") as lab:
        print(forkserver.running_pid(), lab.pid, lab.launch_path, flush=True)
        if sys.argv[1] == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
anyio.run(main)
"""


async def test_a_shared_fork_server_serves_another_process_and_outlives_none_of_its_servers(own_fork_server):
    """What a run with workers does: one process shares its fork server, another forks through
    it and dies; the servers it started go with it, the shared fork server stays."""
    forkserver.share()
    owner = forkserver.running_pid()
    address, pid, key = os.environ[forkserver.SHARED].split()
    assert int(pid) == owner
    try:
        done = await anyio.run_process([sys.executable, "-c", SHARING, "killed"], check=False,
                                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-500:]
        used, server, path = done.stdout.decode().split()
        assert (int(used), path) == (owner, "fast")  # it forked through the shared one
        deadline = time.monotonic() + 5
        while alive(int(server)) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert not alive(int(server)) and alive(owner)
    finally:
        forkserver.shutdown()
    assert not alive(owner)


def test_only_a_process_of_the_same_run_shares(monkeypatch):
    env = forkserver._base_env()
    monkeypatch.setenv(forkserver.SHARED, f"course-forkserver-x 1 {forkserver._key(env)}")
    assert forkserver._shared(env) == ("course-forkserver-x", 1)
    assert forkserver._shared(dict(env, PYTHONPATH="/tmp/a-copy-of-the-course")) == ("course-forkserver-x", 1)
    for other in ({"COURSE_LAB_RUN": "another-run"}, {"LANG": "C"}, {"PYTHONHASHSEED": "7"}):
        assert forkserver._shared(dict(env, **other)) is None
    monkeypatch.setenv(forkserver.SHARED, f"course-forkserver-x {os.getpid()} {forkserver._key(env)}")
    assert forkserver._shared(env) is None  # the process that shares it owns it


async def test_a_lab_on_another_copy_of_the_course_runs_that_copy(tmp_path):
    """What a negative control does: an edited copy of the course, named by PYTHONPATH. The
    forked server imports the copy's code, exactly as a cold start of the copy does."""
    negative._copy_course(tmp_path)
    server = tmp_path / "course_lib" / "servers" / "catalog.py"
    server.write_text(server.read_text().replace('PAGES = (("alpha",),', 'PAGES = (("alpha-in-the-copy",),'))
    names = {}
    for argv in ("catalog", [sys.executable, "-m", "course_lib.servers", "catalog"]):
        async with connect(argv, env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path) as lab:
            names[lab.launch_path] = (await walk(lab)).names
    assert names == {"fast": ["alpha-in-the-copy", "beta", "gamma"], "cold": ["alpha-in-the-copy", "beta", "gamma"]}
    async with connect("catalog") as lab:  # the next lab of the same fork server: the course itself
        assert lab.launch_path == "fast" and (await walk(lab)).names == ["alpha", "beta", "gamma"]


def _kernel():
    from jupyter_client.manager import start_new_kernel

    return start_new_kernel(kernel_name=forkserver.KERNEL_NAME, cwd=str(ROOT), startup_timeout=60)


def _say(kc, code: str) -> str:
    out = []
    reply = kc.execute_interactive(code, timeout=30, output_hook=lambda m: out.append(m["content"].get("text", ""))
                                   if m["msg_type"] == "stream" else None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(out).strip()


FACTS = "import os, sys; print(os.getpid(), os.getppid(), 'mcp' in sys.modules)"


def test_a_kernel_of_the_run_is_forked_warm_and_goes_with_the_process_jupyter_started(run_kernels):
    """A notebook kernel of a run with workers: a real ipykernel in a process of its own, forked
    with the SDK already imported; an interrupt reaches it, and when the process Jupyter
    started (the launcher standing in for it) is killed, the kernel goes too."""
    km, kc = _kernel()
    try:
        launcher = km.provisioner.process.pid
        pid, ppid, warm = _say(kc, FACTS).split()
        assert (int(ppid), warm) == (run_kernels, "True") and int(pid) != launcher
        kc.execute("import time; print('sleeping', flush=True); time.sleep(60)")
        while kc.get_iopub_msg(timeout=10)["content"].get("text") != "sleeping\n":
            pass
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=10)["content"]
        assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt")
        os.kill(launcher, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while alive(int(pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(int(pid))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_forked_kernel_killed_by_a_signal_ends_its_launcher_with_that_signal(run_kernels):
    km, kc = _kernel()
    try:
        pid = int(_say(kc, FACTS).split()[0])
        launcher = km.provisioner.process
        os.kill(pid, signal.SIGKILL)
        assert launcher.wait(timeout=10) == -signal.SIGKILL  # what Jupyter sees of a killed kernel
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_without_a_fork_server_the_kernelspec_starts_a_normal_kernel(tmp_path, monkeypatch):
    monkeypatch.delenv(forkserver.SHARED, raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(forkserver.kernel_spec(tmp_path)))
    km, kc = _kernel()
    try:
        pid, _, warm = _say(kc, FACTS).split()
        assert (int(pid), warm) == (km.provisioner.process.pid, "False")  # exec'd in place, cold
    finally:
        kc.stop_channels()
        km.shutdown_kernel()
    assert not alive(int(pid))


def _forked_run(argv: list[str], cwd, timeout: float | None = None) -> tuple[int | None, str, int]:
    with open(os.devnull, "rb") as nothing, open(cwd / "output", "w+b") as output:
        forked = forkserver.fork(argv, dict(os.environ), cwd, [nothing.fileno(), output.fileno(), output.fileno()])
        assert forked is not None
        code = forkserver.wait(forked, timeout)
        output.seek(0)
        return code, output.read().decode(), forked[0]


def test_a_python_c_child_of_the_run_behaves_like_python_c(run_kernels, tmp_path):
    """What the negative controls' probes use: ``python -c CODE ARGS``, forked or fresh."""
    code = ("import os, sys; print(__name__, sys.argv, repr(sys.path[0]), os.getcwd()); "
            "sys.stderr.write('to stderr\\n'); sys.exit(3)")
    argv = [sys.executable, "-c", code, "a", "b"]
    forked = _forked_run(argv, tmp_path)[:2]
    cold = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert forked == (3, cold.stdout + cold.stderr) == (cold.returncode, "__main__ ['-c', 'a', 'b'] '' "
                                                        f"{tmp_path}\nto stderr\n")
    code, _, pid = _forked_run([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path, timeout=0.5)
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert code is None and not alive(pid)  # past its budget: stopped with its connection


async def test_closing_a_pipe_another_task_waits_on_leaves_no_stale_wait_behind():
    """A lab's stdout reader waits in its own task; the lab closes the pipe from another. The
    next file that gets the same fd number (the next lab's status socket) must still wake its
    waiter: a registration left on the closed fd once hung a lab start for the full reply budget."""
    r, w = os.pipe()
    reader = forkserver._PipeReader(r)
    closed = []

    async def read():
        try:
            await reader.receive()
        except anyio.ClosedResourceError:
            closed.append(True)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.sleep(0.05)  # the reader now waits on the fd, from its own task
            await reader.aclose()
            first, second = socket.socketpair()
            with first, second:
                reused, other = (first, second) if first.fileno() == r else (second, first)
                assert reused.fileno() == r  # the new socket took the closed pipe's number
                other.send(b"x")
                with anyio.fail_after(2):
                    await anyio.wait_readable(reused)
    finally:
        os.close(w)
    assert closed == [True]  # and the reader was told its pipe is closed
