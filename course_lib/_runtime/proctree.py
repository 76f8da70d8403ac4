"""Find and end every process a lab's server left behind (Linux and macOS, through ``psutil``).

A server's process group dies with it (``ServerProcess.stop`` signals the whole group), but a helper
that called ``setsid`` has left the group, and once the server has exited the helper's
parent is no longer the server. So a lab's processes are recognised by what they cannot
shed without trying hard:

* the server's pid, process group or session;
* ``COURSE_LAB_DIR=<this lab's directory>`` in the environment they were started with;
* an open file inside the lab directory (the server's stderr log, inherited);
* and every descendant (by parent pid) of a process recognised so far.

What this cannot find, and says so: a helper that double-forks into a new session, starts
with a fresh environment and closes every inherited descriptor has cut every link to its
lab; only a container or a cgroup around the lab could still tell where it came from.
Making the kernel or pytest process a child subreaper (``PR_SET_CHILD_SUBREAPER``, Linux
only) would adopt such orphans, but not say which lab they belong to, and it would leave
every orphan of every other program started from a notebook as an unreaped zombie of the kernel.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import psutil

from course_lib._runtime.portable import pid_alive

SWEEP_ROUNDS = 20  # a process that keeps forking is re-scanned until a scan finds nothing new
_POLL = 0.01
_CLOCK_SLACK = 1.0  # process start times are kept in clock ticks: compare with a second to spare


def _in_group_of(pid: int, leader: int) -> bool:
    try:
        return leader in (os.getpgid(pid), os.getsid(pid))
    except OSError:
        return False


def _marked(proc: psutil.Process, workdir: str, inside: tuple[str, ...]) -> bool:
    """The lab's directory in the process's environment, or a file inside it held open."""
    try:
        return (proc.environ().get("COURSE_LAB_DIR") == workdir
                or any(f.path.startswith(inside) for f in proc.open_files()))
    except psutil.Error:
        return False


def lab_processes(server_pid: int | None, workdir: str | os.PathLike, since: float | None = None) -> set[int]:
    """Live (non-zombie) processes that belong to the lab of ``server_pid`` in ``workdir``.

    ``since`` (a ``time.time()`` taken before the server started) skips the costly look at the
    environment and open files of every process created before it: nothing the lab started can be
    older than the lab."""
    workdir = str(Path(workdir))
    # Open files are listed by their resolved path (macOS's temporary directory is behind a symlink).
    inside = tuple({os.path.join(workdir, ""), os.path.join(os.path.realpath(workdir), "")})
    me = os.getpid()
    table: dict[int, psutil.Process] = {}
    children: dict[int, list[int]] = {}
    young: set[int] = set()
    for proc in psutil.process_iter(["ppid", "status", "create_time"]):
        if proc.pid != me and proc.info["status"] not in (None, psutil.STATUS_ZOMBIE):
            table[proc.pid] = proc
            children.setdefault(proc.info["ppid"], []).append(proc.pid)
            if since is None or (proc.info["create_time"] or 0) >= since - _CLOCK_SLACK:
                young.add(proc.pid)
    found = {pid for pid in young
             if server_pid is not None and (pid == server_pid or _in_group_of(pid, server_pid))
             or _marked(table[pid], workdir, inside)}
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _reap(pid: int) -> None:
    # Only a process that is our own child can be reaped here; anything else is reaped by its parent.
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:  # not our child, or already reaped
        pass


async def sweep(server_pid: int | None, workdir: str | os.PathLike, *, grace: float = 2.0,
                spare: frozenset[int] = frozenset(), since: float | None = None) -> list[int]:
    """SIGKILL every process of the lab until a scan finds none; return the pids it killed.

    ``spare`` are pids this process must not reap itself (the server, which its own launcher
    reaps).
    """
    killed: list[int] = []
    deadline = time.monotonic() + grace
    for _ in range(SWEEP_ROUNDS):
        targets = lab_processes(server_pid, workdir, since)
        if not targets:
            break
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            if pid not in killed:
                killed.append(pid)
        while any(pid_alive(pid) for pid in targets) and time.monotonic() < deadline:
            for pid in targets - spare:
                _reap(pid)
            await anyio.sleep(_POLL)
        for pid in targets - spare:
            _reap(pid)
        if time.monotonic() >= deadline:
            break
    return killed
