"""Find and end every process a lab's server left behind, read from /proc (Linux).

A server's process group dies with it (``connect`` signals the whole group), but a helper
that called ``setsid`` has left the group, and once the server has exited the helper's
parent is no longer the server. So a lab's processes are recognised by what they cannot
shed without trying hard:

* the server's pid, process group or session;
* ``COURSE_LAB_DIR=<this lab's directory>`` in the environment they were started with;
* an open file descriptor inside the lab directory (the server's stderr log, inherited);
* and every descendant (by parent pid) of a process recognised so far.

What this cannot find, and says so: a helper that double-forks into a new session, starts
with a fresh environment and closes every inherited descriptor has cut every link to its
lab; only a container or a cgroup around the lab could still tell where it came from.
Making the kernel or pytest process a child subreaper (``PR_SET_CHILD_SUBREAPER``) would
adopt such orphans, but not say which lab they belong to, and it would leave every orphan of
every other program started from a notebook as an unreaped zombie of the kernel.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

SWEEP_ROUNDS = 20  # a process that keeps forking is re-scanned until a scan finds nothing new
_POLL = 0.01


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str


def _stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode())


def _has_env(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry in f.read().split(b"\0")
    except OSError:
        return False


def _holds_file_in(pid: int, directory: str) -> bool:
    prefix = directory.rstrip("/") + "/"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                return True
        except OSError:
            continue
    return False


def lab_processes(server_pid: int | None, workdir: str | os.PathLike) -> set[int]:
    """Live (non-zombie) processes that belong to the lab of ``server_pid`` in ``workdir``."""
    if not os.path.isdir("/proc"):
        return set()
    workdir = str(Path(workdir))
    tag = f"COURSE_LAB_DIR={workdir}".encode()
    me = os.getpid()
    table: dict[int, Proc] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            proc = _stat(int(entry))
            if proc is not None and proc.state != "Z":
                table[proc.pid] = proc
    found = {p.pid for p in table.values()
             if server_pid is not None and server_pid in (p.pid, p.pgid, p.sid)}
    for proc in table.values():
        if proc.pid not in found and (_has_env(proc.pid, tag) or _holds_file_in(proc.pid, workdir)):
            found.add(proc.pid)
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found and child != me:
                found.add(child)
                stack.append(child)
    found.discard(me)
    return found


def _alive(pid: int) -> bool:
    proc = _stat(pid)
    return proc is not None and proc.state != "Z"


def _reap(pid: int) -> None:
    # Only a process that is our own child can be reaped here; anything else is reaped by its parent.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    except OSError:
        pass


async def sweep(server_pid: int | None, workdir: str | os.PathLike, *, grace: float = 2.0,
                spare: frozenset[int] = frozenset()) -> list[int]:
    """SIGKILL every process of the lab until a scan finds none; return the pids it killed.

    ``spare`` are pids this process must not reap itself (the server, which its own launcher
    reaps).
    """
    killed: list[int] = []
    deadline = time.monotonic() + grace
    for _ in range(SWEEP_ROUNDS):
        targets = lab_processes(server_pid, workdir)
        if not targets:
            break
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            if pid not in killed:
                killed.append(pid)
        while any(_alive(pid) for pid in targets) and time.monotonic() < deadline:
            for pid in targets - spare:
                _reap(pid)
            await anyio.sleep(_POLL)
        for pid in targets - spare:
            _reap(pid)
        if time.monotonic() >= deadline:
            break
    return killed
