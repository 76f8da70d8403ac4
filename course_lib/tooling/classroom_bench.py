"""How many students one machine serves: ``make bench BENCH_ARGS="--only classroom"``.

For each class size, one real hub (``make classroom``'s, on 127.0.0.1) and that many simulated
students, each a system user of its own: the bench starts every student's lab server through the
hub's REST API (``POST /hub/api/users/NAME/server``, as the button a student presses), opens a
kernel on it through the proxy, and runs chapter 01's code cells from the student's own copy, its
check included, over the kernel's websocket, all students at once. It prints, beside the machine's
size (cores, memory, load): the time to start the class's servers, the median and 95th-percentile
cell latency, the slowest student's chapter, and the memory per student (every process of that
student's user: lab server, kernel, the course's servers) sampled at its peak, plus the hub and
proxy. Students and their homes are removed afterwards; nothing is asserted (figures only).
"""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from course_lib.tooling import classroom, classroom_hub, classroom_install

CHAPTER = "01_pagination.ipynb"


def machine() -> str:
    import psutil

    one, five, _ = os.getloadavg()
    return (f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.1f} GiB memory, "
            f"load {one:.1f} {five:.1f}")


def _api(base: str, token: str, method: str, path: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def _wait(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:  # not listening yet, or the proxy's 404 before the hub's route is added
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {seconds:g} s")


async def _execute(ws, code: str, timeout: float) -> float:
    """Run one cell over the kernel's websocket; its latency (request → idle after the reply)."""
    msg_id = uuid.uuid4().hex
    message = {"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "bench",
                          "session": "bench", "version": "5.3"},
               "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
               "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                           "allow_stdin": False, "stop_on_error": True}}
    started = time.monotonic()
    await ws.write_message(json.dumps(message))
    replied = idle = False
    while not (replied and idle):
        raw = await asyncio.wait_for(ws.read_message(), timeout)
        if raw is None:
            raise ConnectionError("the kernel's websocket closed")
        if isinstance(raw, bytes):
            continue
        reply = json.loads(raw)
        if reply.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = reply["header"]["msg_type"]
        replied |= kind == "execute_reply"
        idle |= kind == "status" and reply["content"].get("execution_state") == "idle"
        if kind == "error":
            raise RuntimeError(f"{reply['content']['ename']}: {reply['content']['evalue']}"[:200])
    return time.monotonic() - started


async def _student(base: str, token: str, name: str, cells: list[str]) -> list[float]:
    """One simulated student: a kernel on their lab server, then the chapter's cells in order."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    kernel = await asyncio.to_thread(_api, base, token, "POST", f"/user/{name}/api/kernels", {"name": "python3"})
    url = base.replace("http://", "ws://") + f"/user/{name}/api/kernels/{kernel['id']}/channels"
    ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    try:
        return [await _execute(ws, code, 300) for code in cells]
    finally:
        ws.close()


def _sample(uids: dict[str, int], peak: dict[str, int], cpu: dict[int, tuple[str, float]]) -> None:
    """Each student's memory now (every process of their user), kept at its peak, and the CPU
    time of every process seen (a course server that exits keeps its last sample)."""
    import psutil

    now = {name: 0 for name in uids}
    by_uid = {uid: name for name, uid in uids.items()}
    for process in psutil.process_iter(["uids", "memory_info", "cpu_times"]):
        try:
            name = by_uid.get(process.info["uids"].real)
            if name:
                now[name] += process.info["memory_info"].rss
                times = process.info["cpu_times"]
                cpu[process.pid] = (name, times.user + times.system)
        except (psutil.Error, AttributeError, TypeError):
            pass
    for name, rss in now.items():
        peak[name] = max(peak.get(name, 0), rss)


def run_size(size: int, cells: list[str], tag: str) -> dict:
    """One hub, ``size`` students at once; the class's figures."""
    import psutil

    students = [f"mcpb{tag}{n:03d}" for n in range(size)]
    work = Path(tempfile.mkdtemp(prefix="course-classroom-bench-"))
    roster = work / "roster.txt"
    roster.write_text("\n".join(students) + "\n")
    token = secrets.token_hex(32)
    ports = [_free_port() for _ in range(3)]
    base = f"http://127.0.0.1:{ports[0]}"
    env = dict(os.environ, CLASSROOM_BENCH_TOKEN=token)
    log = open(work / "hub.log", "wb")
    hub = subprocess.Popen([sys.executable, "-m", "course_lib.tooling.classroom", "serve", str(roster),
                            "--port", str(ports[0]), "--hub-port", str(ports[1]), "--api-port", str(ports[2]),
                            "--instructor", f"mcpb{tag}t", "--state", str(work / "state"), "--idle-minutes", "30"],
                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                           start_new_session=True)
    figures: dict = {"size": size}
    try:
        _wait(f"{base}/hub/api/", 120)
        uids = {name: _uid(name) for name in students}
        started = time.monotonic()
        for name in students:
            _api(base, token, "POST", f"/hub/api/users/{name}/server")
        while True:
            ready = [_api(base, token, "GET", f"/hub/api/users/{name}")["servers"].get("", {}).get("ready")
                     for name in students]
            if all(ready):
                break
            if time.monotonic() - started > 60 + 20 * size:
                raise TimeoutError(f"{ready.count(True)} of {size} lab servers ready")
            time.sleep(0.5)
        figures["servers up"] = time.monotonic() - started
        peak: dict[str, int] = {}
        cpu: dict[int, tuple[str, float]] = {}
        _sample(uids, peak, cpu)
        before = {pid: seconds for pid, (_, seconds) in cpu.items()}  # the servers' start, not the chapter

        async def class_runs():
            async def sample():
                while True:
                    await asyncio.to_thread(_sample, uids, peak, cpu)
                    await asyncio.sleep(0.5)

            sampler = asyncio.create_task(sample())
            try:
                return await asyncio.gather(*(_student(base, token, name, cells) for name in students))
            finally:
                sampler.cancel()

        began = time.monotonic()
        latencies = asyncio.run(class_runs())
        figures["chapter"] = time.monotonic() - began
        flat = sorted(t for student in latencies for t in student)
        figures["median cell"] = statistics.median(flat)
        figures["p95 cell"] = flat[int(0.95 * (len(flat) - 1))]
        figures["slowest student"] = max(sum(student) for student in latencies)
        _sample(uids, peak, cpu)
        figures["memory per student"] = statistics.median(peak.values()) if peak else 0
        spent = {name: 0.0 for name in students}
        for pid, (name, seconds) in cpu.items():
            spent[name] += seconds - before.get(pid, 0.0)
        figures["cpu per student"] = statistics.median(spent.values())
        figures["load"] = os.getloadavg()[0]
        hub_tree = [psutil.Process(hub.pid), *psutil.Process(hub.pid).children(recursive=True)]
        figures["hub and proxy"] = sum(p.memory_info().rss for p in hub_tree
                                       if p.uids().real == 0 and p.is_running())
    finally:
        classroom_hub.stop_hub(hub, 60)
        log.close()
        for name in [*students, f"mcpb{tag}t"]:
            classroom.remove_user(name)
        shutil.rmtree(work, ignore_errors=True)
    return figures


def _uid(name: str) -> int:
    import pwd

    return pwd.getpwnam(name).pw_uid


def _free_port() -> int:
    from course_lib.tooling.lab_server import _free_port as free

    return free()


def chapter_cells() -> list[str]:
    """Chapter 01's code cells as the student copy has them (its check cell included)."""
    import nbformat

    from course_lib.tooling.student_copy import generate

    out = Path(tempfile.mkdtemp(prefix="course-bench-copy-"))
    try:
        generate(out)
        nb = nbformat.read(out / CHAPTER, as_version=4)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return [c.source for c in nb.cells if c.cell_type == "code"
            and "raises-exception" not in c.metadata.get("tags", [])]


def bench(sizes: list[int]) -> None:
    from course_lib.display import Table

    print(f"== classroom: simulated students through the hub's API, each running {CHAPTER} and its check")
    try:
        classroom.require_platform()
    except classroom.ClassroomUnsupported as exc:
        print(f"   skipped: {exc}")
        return
    classroom_install.install()
    cells = chapter_cells()
    print(f"   machine: {machine()}; {len(cells)} cells a student")
    columns = ["students", "servers up", "median cell", "p95 cell", "slowest chapter", "cpu/student",
               "memory/student", "hub+proxy", "load"]
    rows = []
    for size in sizes:
        figures = run_size(size, cells, secrets.token_hex(2))
        rows.append([size, f"{figures['servers up']:.1f} s", f"{figures['median cell'] * 1000:.0f} ms",
                     f"{figures['p95 cell'] * 1000:.0f} ms", f"{figures['slowest student']:.1f} s",
                     f"{figures['cpu per student']:.1f} s", f"{figures['memory per student'] / 2**20:.0f} MiB",
                     f"{figures['hub and proxy'] / 2**20:.0f} MiB", f"{figures['load']:.1f}"])
        print(f"   {size} students done ({machine()})", flush=True)
    print(Table(columns, rows, title=f"machine: {machine()}").text())


if __name__ == "__main__":
    bench([int(n) for n in (sys.argv[1] if len(sys.argv) > 1 else "2,4,8").split(",")])
