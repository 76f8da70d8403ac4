"""Fast launch of course servers: a pre-warmed parent forks a fresh server for every lab.

A cold ``python -m course_lib.servers NAME`` spends 1.5–2 s importing the SDK before it can
answer. Each process that starts labs (a kernel, a pytest worker) gets one fork server on its
first ``connect`` to a course server: a child process that has imported the SDK and
``course_lib`` once. For each lab the parent makes the stdin/stdout pipes itself and passes
them, with the stderr log file, over a Unix socket (``socket.send_fds``). The fork server forks
a child that becomes a session leader, takes the pipes as fds 0/1/2, the lab's explicit
environment, working directory and argv, and runs ``course_lib.servers`` as ``__main__``,
exactly what ``python -m course_lib.servers`` runs. So every lab talks to a real, separate,
fresh process over real pipes; the server module itself is imported after the fork. The fork
server writes the child's pid, and once it has reaped it, its exit status, to a status pipe
per lab: the lab sees the same pid, return code and process group as with a cold launch.

The fork server dies with its parent (end of file on the socket), and stops whatever children
are left. If it dies early, labs it forked still close (their exit status is lost:
``STATUS_LOST``) and it is started again once per process; a spawn that fails while it is alive
is retried once, with a warning. Otherwise, and when the fast path is off
(``COURSE_FAST_LAUNCH=0``), unavailable (no ``fork``), or the lab's environment changes what
only an interpreter start applies (``PYTHON*`` but ``PYTHONPATH``, locale, the run tag), the
server starts cold.

Not multiprocessing's forkserver: it would start with the kernel's environment (the leak
check reads a forked server's environment as its fork server was started, which must carry
the lab markers), and rebuild the parent's ``__main__``, working directory and ``sys.path`` in
every child. Everything here is POSIX (Linux and macOS); the parent's pipe ends are waited on
with anyio, so any anyio backend works.

Forked labs of one process share the fork server's string-hash seed. That cannot matter: a
cold start draws a random seed per launch, so no course server's output may depend on it (the
strict notebook checks would see it), and a lab that wants a seed sets ``PYTHONHASHSEED``,
which starts it cold.
"""
from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import warnings

import anyio
import anyio.abc

from course_lib._runtime.portable import pid_alive
from course_lib.paths import ROOT

SWITCH = "COURSE_FAST_LAUNCH"  # "0" turns the fast path off: every server starts cold
READY_TIMEOUT = 30.0  # for a pid: the first lab waits for the fork server's own imports
SHUTDOWN_GRACE = 1.0  # children get this long to exit by themselves when the fork server stops
STATUS_LOST = -255  # return code of a lab whose fork server died before reporting one
STARTS = 2  # fork servers per process: the first and one restart
_BOOT = "import sys; from course_lib._runtime.fastlaunch import serve; serve(int(sys.argv[1]))"


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0" and hasattr(os, "fork") and hasattr(socket, "send_fds")


def _fixed(env: dict[str, str]) -> dict[str, str]:
    """What only an interpreter start applies. ``PYTHONPATH`` is not: a lab on another copy of
    the course gets a child that forgets the pre-imported ``course_lib`` (``_use_course_copy``)."""
    return {k: v for k, v in env.items() if k != "PYTHONPATH" and (
        k.startswith(("PYTHON", "LC_")) or k in ("LANG", "COURSE_LAB_RUN", "COURSE_LAB_SERVER"))}


class _Pipe(anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream):
    """The parent's end of a lab's stdin or stdout pipe.

    ``aclose`` (from whichever task) wakes a task waiting on the pipe and lets it finish before
    the fd is closed: on asyncio, a waiter that cleans up after the number has been reused
    would remove the next file's registration, and that file's waiter would never wake.
    """

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
    """A lab's server forked by the fork server: pid, pipes, and its exit status when known."""

    launch_path = "fast"

    def __init__(self, stdin: int, stdout: int, status: int):
        self.pid: int | None = None
        self.stdin, self.stdout = _Pipe(stdin), _Pipe(stdout)
        self._status: int | None = status
        self._buffer = b""
        self._code: int | None = None
        os.set_blocking(status, False)

    def _line(self) -> bytes | None:
        """The next status line; b"" if the fork server is gone; None if none has come yet."""
        while b"\n" not in self._buffer:
            try:
                chunk = os.read(self._status, 64)
            except BlockingIOError:
                return None
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    async def _read_pid(self) -> bool:
        while (line := self._line()) is None:
            await anyio.wait_readable(self._status)
        if line:
            self.pid = int(line)
        return self.pid is not None

    @property
    def returncode(self) -> int | None:
        if self._code is None and self._status is not None:
            line = self._line()
            if line:
                self._code = int(line)
            elif line == b"" and not pid_alive(self.pid):
                self._code = STATUS_LOST  # reaped by whoever adopted it
        return self._code

    def release(self) -> None:
        if self._status is not None:
            os.close(self._status)
            self._status = None


class _ForkServer:
    """This process's fork server: it ends when this process closes it or dies."""

    def __init__(self, env: dict[str, str]):
        self.env, self.owner, self.lock = env, os.getpid(), threading.Lock()
        self.sock, theirs = socket.socketpair()
        with theirs:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno())], env=env, cwd=ROOT,
                # Pipes, like a lab's, so that the children's sys.stdin/stdout suit them.
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()], start_new_session=True)
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.sock.settimeout(READY_TIMEOUT)  # a request never blocks forever on a stuck fork server

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()  # end of file: the fork server stops its children and exits
        try:
            self.proc.wait(timeout=SHUTDOWN_GRACE + 2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    async def fork(self, argv, env: dict[str, str], cwd, stderr) -> Forked | None:
        request = _encode({"argv": list(argv), "env": env, "cwd": os.fspath(cwd)})
        (stdin_r, stdin_w), (stdout_r, stdout_w), (status_r, status_w) = os.pipe(), os.pipe(), os.pipe()
        forked = Forked(stdin_w, stdout_r, status_r)
        try:
            with self.lock:  # one request at a time on the stream, whichever thread sends it
                socket.send_fds(self.sock, [struct.pack("!I", len(request))],
                                [stdin_r, stdout_w, stderr.fileno(), status_w])
                self.sock.sendall(request)
        except OSError:
            pass  # gone: no pid will come
        finally:
            for fd in (stdin_r, stdout_w, status_w):  # the child's ends live in the fork server now
                os.close(fd)
        try:
            with anyio.move_on_after(READY_TIMEOUT):
                if await forked._read_pid():
                    return forked
        finally:
            if forked.pid is None:  # closing our ends ends any child it forked meanwhile
                await forked.stdin.aclose()
                await forked.stdout.aclose()
                forked.release()
        return None


def _encode(request: dict) -> bytes:
    return json.dumps(request).encode()


_server: _ForkServer | None = None
_starts = 0
_warned = False
_lock = threading.Lock()


def _current(base_env: dict[str, str]) -> _ForkServer | None:
    """This process's fork server, started on first use and once more if it died."""
    global _server, _starts
    with _lock:
        if _server is not None and _server.owner != os.getpid():
            _server, _starts = None, 0  # a forked copy of this process starts its own
        if _server is not None and not _server.alive():
            _server.close()
            _server = None
        if _server is None and _starts < STARTS:
            _starts += 1
            try:
                _server = _ForkServer(base_env)
            except OSError:
                pass
        return _server


async def spawn(argv, env: dict[str, str], cwd, stderr, base_env: dict[str, str]) -> Forked | None:
    """Fork a course server; None means "start it cold". ``base_env`` is what every lab's
    environment shares: the fork server starts with it (and the leak check sees it)."""
    global _warned
    if not enabled():
        return None
    for attempt in range(2):
        server = _current(base_env)
        if server is None or _fixed(env) != _fixed(server.env):
            return None
        forked = await server.fork(argv, env, cwd, stderr)
        if forked is not None:
            return forked
        if not server.alive():
            continue  # started again (once per process) for the retry
        if attempt == 0:
            if not _warned:
                _warned = True
                warnings.warn("fast launch: the fork server did not start a server; retrying once",
                              RuntimeWarning, stacklevel=2)
        else:  # failed twice while alive: replace it (once per process), or start cold from now on
            _drop(server)
    return None


def _drop(server: _ForkServer) -> None:
    global _server
    with _lock:
        if _server is server:
            _server = None
    if server.owner == os.getpid():
        server.close()


def shutdown() -> None:
    """Stop this process's fork server; the next lab starts one again."""
    global _starts
    server, _starts = _server, 0
    if server is not None:
        _drop(server)


atexit.register(shutdown)


def running_pid() -> int | None:
    """Pid of this process's fork server, if it is running (for tests and the benchmark)."""
    server = _server
    return server.proc.pid if server is not None and server.owner == os.getpid() and server.alive() else None


# ---------------------------------------------------------------------------------------------
# The fork server (``python -c _BOOT FD``)

def _warm() -> None:
    """Import what every course server imports, and run one in-memory exchange per era, before
    any fork. No course server module is imported: each runs its module code in its own lab."""
    import mcp_types as types
    from mcp import Client
    from mcp.server import Server
    import mcp.server.stdio  # noqa: F401
    import course_lib.servers._base  # noqa: F401

    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="warm", input_schema={"type": "object"})])

    async def exchange() -> None:
        for mode in ("legacy", "2026-07-28"):
            async with Client(Server("warm-up", on_list_tools=on_list_tools), mode=mode) as client:
                await client.list_tools()

    with warnings.catch_warnings():  # leaves the "already warned" registries as they were
        warnings.simplefilter("ignore")
        anyio.run(exchange)


def _receive(control: socket.socket) -> tuple[dict | None, list[int]] | None:
    """The next request and its four fds (request None if unreadable); None at end of file."""
    head, fds, _, _ = socket.recv_fds(control, 4, 4)
    while head and len(head) < 4:
        head += control.recv(4 - len(head))
    if len(head) < 4:
        return None
    size, body = struct.unpack("!I", head)[0], b""
    while len(body) < size and (chunk := control.recv(size - len(body))):
        body += chunk
    try:
        return (json.loads(body) if len(fds) == 4 else None), fds
    except ValueError:
        return None, fds


def _use_course_copy(warmed: str, wanted: str) -> None:
    """Put a lab's other ``PYTHONPATH`` where the interpreter would, and forget every
    ``course_lib`` module imported before the fork, so the server imports the copy's code. The
    SDK stays: copies of the course share it, and it never imports ``course_lib``."""
    import importlib

    old = [p for p in warmed.split(os.pathsep) if p]
    sys.path[1:] = [p for p in wanted.split(os.pathsep) if p] + [p for p in sys.path[1:] if p not in old]
    for name in [n for n in sys.modules if n == "course_lib" or n.startswith("course_lib.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _become(request: dict, fds: list[int], closing: list[int]) -> None:
    """In the forked child: become the lab's server process. Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in closing:  # the fork server's socket, wake-up pipe and other labs' status pipes
            os.close(fd)
        os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        os.chdir(request["cwd"])
        warmed = os.environ.get("PYTHONPATH", "")
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = os.getcwd()  # what ``python -m`` puts first
        if os.environ.get("PYTHONPATH", "") != warmed:
            _use_course_copy(warmed, os.environ.get("PYTHONPATH", ""))
        sys.argv = [request["argv"][0], *request["argv"][3:]]
    except BaseException:
        sys.excepthook(*sys.exc_info())  # lands in the lab's stderr log once fd 2 is moved
        os._exit(127)
    runpy.run_module("course_lib.servers", run_name="__main__", alter_sys=True)  # never returns
    os._exit(1)


def serve(control_fd: int) -> None:
    """Fork a server for each request until the parent closes the socket (or dies)."""
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the parent's business
    _warm()
    gc.collect()
    gc.freeze()  # spares each child the copy-on-write faults of collecting what it inherited
    if threading.active_count() != 1:
        return  # cannot fork safely: end of file tells the parent
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}  # pid -> the lab's status pipe

    def reap() -> None:
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            fd = children.pop(pid, None)
            if fd is None:
                continue
            try:
                os.write(fd, f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass  # the lab is gone
            os.close(fd)

    while True:
        ready = select.select([control, wake_r], [], [])[0]
        if wake_r in ready:
            os.read(wake_r, 4096)
            reap()
        if control not in ready:
            continue
        received = _receive(control)
        if received is None:
            break
        request, fds = received
        try:
            pid = os.fork() if request is not None else -1
        except OSError:
            pid = -1
        if pid == 0:
            _become(request, fds, [control.detach(), wake_r, wake_w, *children.values()])
        if pid > 0:
            children[pid] = fds.pop()
            os.write(children[pid], f"{pid}\n".encode())
        for fd in fds:  # without a pid on its status pipe, the parent retries or starts cold
            os.close(fd)
        reap()
    # The parent is gone or done: what is left gets a moment to finish, then its group is killed.
    deadline = time.monotonic() + SHUTDOWN_GRACE
    while children and select.select([wake_r], [], [], max(0.0, deadline - time.monotonic()))[0]:
        os.read(wake_r, 4096)
        reap()
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while children:
        children.pop(os.waitpid(-1, 0)[0], None)
