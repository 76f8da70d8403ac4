"""Fast launch of course servers: one pre-warmed fork server per process forks each lab's server.

A cold ``python -m course_lib.servers NAME`` spends a second or more importing the SDK. A process
that starts labs (a kernel, a pytest worker) starts, on its first fast ``spawn``, a fork server
that has imported the SDK and ``course_lib``. Per lab, the parent makes the stdin, stdout and
status pipes and passes them with the stderr log over a Unix socket (``socket.send_fds``); what
the fork server does with them is :mod:`course_lib._runtime.forkserver`.

A spawn that fails while the fork server is alive is retried once, with one warning per
process; a dead fork server is started again once per process (labs it forked still close,
with return code ``STATUS_LOST``). Otherwise a server starts cold: when ``COURSE_FAST_LAUNCH=0``,
without ``fork`` or ``setproctitle`` (``ps`` must tell servers apart), or when the lab's environment
changes what only an interpreter start applies (``PYTHON*`` including which copy of the course,
locale, the run tag). POSIX only (Linux, macOS); the pipes are waited on through anyio (any backend).
"""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import warnings

import anyio
import anyio.abc

try:
    import setproctitle
except ImportError:  # the fallback: cold starts, whose command line is their own
    setproctitle = None

from course_lib._runtime.forkserver import NAME, optimized, send
from course_lib._runtime.portable import pid_alive
from course_lib.paths import ROOT

SWITCH = "COURSE_FAST_LAUNCH"  # "0" turns the fast path off: every server starts cold
READY_TIMEOUT = 30.0  # for a pid: the first lab waits for the fork server's own imports
STATUS_LOST = -255  # return code of a lab whose fork server died before reporting one
STARTS = 2  # fork servers per process: the first and one restart
_BOOT = ("import sys; from course_lib._runtime.forkserver import serve; "
         "serve(int(sys.argv[1]), int(sys.argv[2]))")


def _fixed(env: dict[str, str]) -> dict[str, str]:
    """What only an interpreter start applies."""
    return {k: v for k, v in env.items()
            if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "COURSE_LAB_RUN", "COURSE_LAB_SERVER")}


class _Pipe(anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream):
    """The parent's end of a lab's stdin or stdout pipe. ``aclose`` (from any task) wakes a
    task waiting on it and lets it finish before the fd is closed: on asyncio, a waiter cleaning
    up after the number was reused would remove the next file's registration."""

    def __init__(self, fd: int):
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._waiting: anyio.Event | None = None

    def _open(self) -> int:
        if self._fd is None:
            raise anyio.ClosedResourceError
        return self._fd

    async def _wait(self, wait) -> None:
        self._waiting = waiting = anyio.Event()
        try:
            await wait(self._open())
        finally:
            self._waiting = None
            waiting.set()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = os.read(self._open(), max_bytes)
            except BlockingIOError:
                await self._wait(anyio.wait_readable)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                view = view[os.write(self._open(), view):]
            except BlockingIOError:
                await self._wait(anyio.wait_writable)
            except BrokenPipeError:
                raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        if self._fd is not None:
            fd, self._fd, waiting = self._fd, None, self._waiting
            with anyio.CancelScope(shield=True):
                anyio.notify_closing(fd)
                if waiting is not None:
                    await waiting.wait()
                os.close(fd)


class Forked:
    """A forked lab server: pipes, pid, and its exit status when the fork server reports it."""

    launch_path = "fast"

    def __init__(self, stdin: int, stdout: int, status: int):
        self.stdin, self.stdout, self._status = _Pipe(stdin), _Pipe(stdout), status
        self.pid: int | None = None
        self._code: int | None = None
        os.set_blocking(status, False)

    def _next(self) -> int | bool | None:
        """The next number on the status pipe (pid, then exit status), None if none yet, False
        if the fork server is gone. Each is one 4-byte write, which a read never splits."""
        try:
            data = os.read(self._status, 4)
        except BlockingIOError:
            return None
        return struct.unpack("i", data)[0] if len(data) == 4 else False

    @property
    def returncode(self) -> int | None:
        if self._code is None and self._status is not None:
            code = self._next()
            if code is False:  # the fork server died: the child was adopted (and is reaped) elsewhere
                code = None if pid_alive(self.pid) else STATUS_LOST
            self._code = code
        return self._code

    def release(self) -> None:
        if self._status is not None:
            os.close(self._status)
            self._status = None


class _ForkServer:
    def __init__(self, env: dict[str, str], optimize: bool = False):
        self.env, self.owner, self.lock = env, os.getpid(), threading.Lock()
        self.sock, theirs = socket.socketpair()
        # The address a process below this one (a chapter 07 wire tap) asks for a server at: a Unix
        # socket in a folder only this user can enter.
        # Without it (a path too long for a Unix socket, say), taps start their servers cold. The
        # fork server of ``python -O`` has none: no tap asks it (``address``).
        self.folder = tempfile.mkdtemp(prefix="course-fork-")
        self.address: str | None = None if optimize else os.path.join(self.folder, "socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.address:
                listener.bind(self.address)
                listener.listen(16)
        except OSError:
            self.address = None
        passed = [theirs.fileno(), *([listener.fileno()] if self.address else [])]
        with theirs, listener:  # stdin/stdout are pipes, as a lab's are: the children's sys.stdin/stdout suit them
            # SPT_NOENV: a title is written over the command line only, never over the environment
            self.proc = subprocess.Popen([sys.executable, *(["-O"] if optimize else []), "-c", _BOOT, str(theirs.fileno()),
                                          str(listener.fileno() if self.address else -1), NAME],
                                         env={**env, "SPT_NOENV": "1"}, cwd=ROOT,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         pass_fds=passed, start_new_session=True)
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.sock.settimeout(READY_TIMEOUT)  # a request never blocks for ever on a stuck fork server

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()  # end of file: it kills what is left of its children and exits
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    async def fork(self, argv, env: dict[str, str], cwd, stderr) -> Forked | None:
        request = {"argv": list(argv), "env": env, "cwd": os.fspath(cwd)}
        (stdin_r, stdin_w), (stdout_r, stdout_w), (status_r, status_w) = os.pipe(), os.pipe(), os.pipe()
        forked = Forked(stdin_w, stdout_r, status_r)
        try:
            with self.lock:  # one request at a time on the socket, from whichever thread
                send(self.sock, request, [stdin_r, stdout_w, stderr.fileno(), status_w])
        except OSError:
            pass  # it is gone: no pid will come
        finally:
            for fd in (stdin_r, stdout_w, status_w):  # the fork server holds its own copies now
                os.close(fd)
        try:
            with anyio.move_on_after(READY_TIMEOUT):
                while (pid := forked._next()) is None:
                    await anyio.wait_readable(status_r)
                forked.pid = pid or None
        finally:
            if forked.pid is None:  # closing our ends ends any child it forked meanwhile
                await forked.stdin.aclose()
                await forked.stdout.aclose()
                forked.release()
        return forked if forked.pid else None


_servers: dict[bool, _ForkServer] = {}  # by ``optimize``: the fork server of ``python`` and of ``python -O``
_starts = {False: 0, True: 0}
_warned = False
_lock = threading.Lock()


def _usable() -> bool:
    return (os.environ.get(SWITCH) != "0" and setproctitle is not None
            and hasattr(os, "fork") and hasattr(socket, "send_fds"))


def _current(base_env: dict[str, str], optimize: bool = False) -> _ForkServer | None:
    """This process's fork server (of ``python -O`` if ``optimize``), started if there is none and
    it has not been started twice already (under ``_lock``)."""
    server = _servers.get(optimize)
    if server is not None and (server.owner != os.getpid() or not server.alive()):
        server.sock.close()  # dead (started again, once), or the parent's in a forked copy of it
        del _servers[optimize]
        server = None
    if server is None and _starts[optimize] < STARTS:
        _starts[optimize] += 1
        try:
            server = _servers[optimize] = _ForkServer(base_env, optimize)
        except OSError:
            pass
    return server


async def spawn(argv, env: dict[str, str], cwd, stderr, base_env: dict[str, str]) -> Forked | None:
    """Fork a course server; None means "start it cold". ``base_env``, what every lab's
    environment shares, is the fork server's (and what the leak check sees of its children)."""
    global _warned
    if not _usable() or not os.path.isdir(cwd):
        return None  # (a missing folder: a cold start reports it)
    optimize = optimized(argv)
    for attempt in range(2):
        with _lock:
            server = _current(base_env, optimize)
        if server is None or _fixed(env) != _fixed(server.env):
            return None
        forked = await server.fork(argv, env, cwd, stderr)
        if forked is not None:
            return forked
        if not server.alive():
            continue  # the retry starts it again (once per process)
        if attempt == 1:  # failed twice while alive: replaced once per process, or cold from now on
            with _lock:
                if _servers.get(optimize) is server:
                    del _servers[optimize]
            server.close()
        elif not _warned:
            _warned = True
            warnings.warn("fast launch: the fork server did not start a server; retrying once", RuntimeWarning)
    return None


def address(base_env: dict[str, str]) -> str | None:
    """Where a process below this one asks this process's fork server for a course server (chapter
    04's wire tap, ``chapters/peer_tap.py``, with the requests ``fork`` sends), starting the fork
    server if it may run; None when servers start cold."""
    if not _usable():
        return None
    with _lock:
        server = _current(base_env)
    return None if server is None else server.address


def shutdown() -> None:
    """Stop this process's fork servers; the next lab starts one again (and may restart it once)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
        _starts.update({False: 0, True: 0})
    for server in servers:
        if server.owner == os.getpid():
            server.close()


atexit.register(shutdown)


def running_pid(optimize: bool = False) -> int | None:
    """Pid of this process's fork server, if it is running (for tests and the benchmark)."""
    server = _servers.get(optimize)
    return server.proc.pid if server is not None and server.owner == os.getpid() and server.alive() else None


# ---------------------------------------------------------------------------------------------
# The fork server (``python -c _BOOT FD``)
