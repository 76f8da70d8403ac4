"""Fast launch of course servers: one pre-warmed fork server per process forks each lab's server.

A cold ``python -m course_lib.servers NAME`` spends a second or more importing the SDK. A process
that starts labs (a kernel, a pytest worker) starts, on its first fast ``spawn``, a fork server
that has imported the SDK and ``course_lib``. Per lab, the parent makes the stdin, stdout and
status pipes and passes them with the stderr log over a Unix socket (``socket.send_fds``). The
fork server forks a child that becomes a session leader, takes them as fds 0/1/2, the lab's
environment, cwd and argv, and runs the ``course_lib`` module of its argv (``course_lib.servers``,
or a grading harness) as ``__main__``, as ``python -m`` would (that module is imported after the fork). It writes the child's pid, and after reaping
it its exit status, to the status pipe, so pid, return code and process group are those of a
cold start. It dies with its parent (end of file on the socket) and kills what is left of its
children.

A forked server shows in ``ps`` (and psutil's ``cmdline``) the command line a cold start would have
(``python -m course_lib.servers NAME --mode MODE``): the child rewrites its process title with
``setproctitle`` (Linux and macOS), inside the room of the fork server's own command line (which
names itself), leaving the environment the leak check reads untouched. Without ``setproctitle``,
servers start cold, so that ``ps`` can still tell them apart.

A spawn that fails while the fork server is alive is retried once, with one warning per
process; a dead fork server is started again once per process (labs it forked still close,
with return code ``STATUS_LOST``). Otherwise a server starts cold: when ``COURSE_FAST_LAUNCH=0``,
without ``fork``, or when the lab's environment changes what only an interpreter start applies
(``PYTHON*`` including which copy of the course, locale, the run tag).

POSIX only (Linux, macOS); the pipes are waited on through anyio, so any backend works. Not
multiprocessing's forkserver: it starts with the kernel's environment (the leak check reads a
forked server's environment as its fork server started, so that must carry the lab markers) and
rebuilds the parent's ``__main__``, cwd and ``sys.path`` in every child. Forked labs of one
process share a string-hash seed, which cannot matter: a cold start draws a new seed each time,
so no course server output may depend on it (strict nbval would see it), and a lab that sets
``PYTHONHASHSEED`` starts cold.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import runpy
import select
import shutil
import signal
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

from course_lib._runtime.portable import pid_alive
from course_lib.paths import ROOT

SWITCH = "COURSE_FAST_LAUNCH"  # "0" turns the fast path off: every server starts cold
READY_TIMEOUT = 30.0  # for a pid: the first lab waits for the fork server's own imports
STATUS_LOST = -255  # return code of a lab whose fork server died before reporting one
STARTS = 2  # fork servers per process: the first and one restart
_BOOT = ("import sys; from course_lib._runtime.fastlaunch import serve; "
         "serve(int(sys.argv[1]), int(sys.argv[2]))")
# The fork server's last argument: what it is in ``ps``, and room for its children's titles.
_NAME = "course_lib fork server: each lab server it forks shows its own command line" + " " * 64


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
                                          str(listener.fileno() if self.address else -1), _NAME],
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
        request = _encode({"argv": list(argv), "env": env, "cwd": os.fspath(cwd)})
        (stdin_r, stdin_w), (stdout_r, stdout_w), (status_r, status_w) = os.pipe(), os.pipe(), os.pipe()
        forked = Forked(stdin_w, stdout_r, status_r)
        try:
            with self.lock:  # one request at a time on the socket, from whichever thread
                socket.send_fds(self.sock, [struct.pack("!I", len(request))],
                                [stdin_r, stdout_w, stderr.fileno(), status_w])
                self.sock.sendall(request)
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


def _encode(request: dict) -> bytes:
    return json.dumps(request).encode()


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


def optimized(argv) -> bool:
    """Whether ``argv`` runs ``python -O`` (its fork server is another one: ``-O`` is fixed at start)."""
    return list(argv[1:2]) == ["-O"]


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

def _warm() -> None:
    """Import what course servers import and run one in-memory exchange per era before any
    fork. No course server module is imported: each runs its module code in its own lab."""
    import mcp_types as types
    from mcp import Client
    from mcp.server import Server
    import mcp.server.stdio  # noqa: F401
    import course_lib.servers._base  # noqa: F401
    from course_lib.protocol import BOTH_ERAS

    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="warm", input_schema={"type": "object"})])

    async def exchange() -> None:
        for mode in BOTH_ERAS:
            async with Client(Server("warm-up", on_list_tools=on_list_tools), mode=mode) as client:
                await client.list_tools()

    with warnings.catch_warnings():  # leaves the "already warned" registries as they were
        warnings.simplefilter("ignore")
        anyio.run(exchange)


def _receive(control: socket.socket) -> tuple[dict | None, list[int]] | None:
    """The next request and its four fds (request None if unreadable); None at end of file."""
    head, fds, _, _ = socket.recv_fds(control, 4, 4)
    head += control.recv(4 - len(head), socket.MSG_WAITALL) if 0 < len(head) < 4 else b""
    if len(head) < 4:
        return None
    body = control.recv(struct.unpack("!I", head)[0], socket.MSG_WAITALL)
    try:
        return (json.loads(body) if len(fds) == 4 else None), fds
    except ValueError:
        return None, fds


def _become(request: dict, fds: list[int], closing: list[int]) -> None:
    """In the forked child: become the lab's server process. Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in closing:  # the fork server's socket and wake-up pipe, other labs' status pipes
            os.close(fd)
        os.setsid()
        setproctitle.setproctitle(" ".join(request["argv"]))  # what ps shows: a cold start's command line
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = os.getcwd()  # what ``python -m`` puts first
        skip = 2 if optimized(request["argv"]) else 1  # the interpreter, and its -O
        sys.argv = [request["argv"][0], *request["argv"][skip + 2:]]
    except BaseException:
        sys.excepthook(*sys.exc_info())  # lands in the lab's stderr log once fd 2 is moved
        os._exit(127)
    from course_lib.servers._run import run_as_process

    # what ``python -m MODULE`` runs (a course server, or a grading harness around a student's code)
    run_as_process(lambda: runpy.run_module(request["argv"][skip + 1], run_name="__main__", alter_sys=True))


def serve(control_fd: int, listen_fd: int) -> None:
    """Fork a server for each request until the parent closes the socket (or dies): the parent's
    requests on ``control_fd``, and those of processes below it on connections to ``listen_fd``."""
    control = socket.socket(fileno=control_fd)
    listener = socket.socket(fileno=listen_fd) if listen_fd >= 0 else None
    conns: list[socket.socket] = []
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
    while True:
        ready = select.select([control, wake_r, *([listener] if listener else []), *conns], [], [])[0]
        if listener is not None and listener in ready:
            with contextlib.suppress(OSError):
                conns.append(listener.accept()[0])
                conns[-1].settimeout(5.0)  # a process that connects and never asks holds nobody up
        if wake_r in ready:
            os.read(wake_r, 4096)
            while children and (reaped := os.waitpid(-1, os.WNOHANG))[0]:
                fd = children.pop(reaped[0])
                with contextlib.suppress(OSError):  # the lab is gone
                    os.write(fd, struct.pack("i", os.waitstatus_to_exitcode(reaped[1])))
                os.close(fd)
        asking = [c for c in (control, *conns) if c in ready]
        shared = [wake_r, wake_w, *([listener] if listener else [])]
        if control in asking and not _fork(control, children, [*shared, *conns]):
            break
        for conn in asking:
            if conn is not control:  # one request a connection
                with contextlib.suppress(OSError):
                    _fork(conn, children, [control, *shared, *(c for c in conns if c is not conn)])
                conns.remove(conn)
                conn.close()
    for pid in children:  # the parent is gone or done: so is what is left of its labs
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    if listener is not None:  # and its address, even when the parent died without closing it
        with contextlib.suppress(OSError):
            where = listener.getsockname()
            os.unlink(where)
            os.rmdir(os.path.dirname(where))


def _fork(conn: socket.socket, children: dict[int, int], others: list) -> bool:
    """Fork the server ``conn`` asks for; False at end of file."""
    received = _receive(conn)
    if received is None:
        return False
    request, fds = received
    try:
        pid = os.fork() if request is not None else -1
    except OSError:
        pid = -1
    if pid == 0:
        closing = [conn.detach(), *(o if isinstance(o, int) else o.detach() for o in others), *children.values()]
        _become(request, fds, closing)
    if pid > 0:
        children[pid] = fds.pop()
        with contextlib.suppress(OSError):  # the lab gave up waiting: the child sees its pipes closed
            os.write(children[pid], struct.pack("i", pid))
    for fd in fds:  # without a pid on its status pipe, the parent retries or starts cold
        os.close(fd)
    return True
