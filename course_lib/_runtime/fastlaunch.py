"""Fast launch of course servers: a pre-warmed parent forks a fresh server for every lab.

A cold ``python -m course_lib.servers NAME`` spends 1.5–3 s importing the SDK before it can
answer. The fork server is one extra process per kernel (or per test run, see below), started
on the first ``connect`` to a course server, that has imported the SDK and ``course_lib`` once. For
each lab, ``connect`` creates the lab's stdin/stdout pipes itself and hands them, with the
stderr log file, to the fork server over a Unix socket (SCM_RIGHTS). The fork server forks a
child that becomes a session leader, takes the pipes as fds 0/1/2, gets the lab's explicit
environment, working directory and argv, and runs the same entry point as
``python -m course_lib.servers``. Every lab therefore talks to a real, separate, fresh process
over real pipes with the real SDK; labs share nothing but the code imported before the fork
(the server modules themselves are imported after it, so their module-level state is per lab).

The fork server reports each child's pid and, when it has reaped the child, its exit status on
a per-lab socket, so the launcher sees the same pid, return code and process group as with a
cold launch. It dies with its parent: EOF on the control socket, PR_SET_PDEATHSIG and a
periodic parent check all end it, and on the way out it stops whatever children are left.

A test run shares one fork server: the pytest process that starts the run (``share``) starts
it and publishes its address in ``COURSE_FORKSERVER``; pytest workers and the notebook kernels
they start connect to it instead of warming one each. Every connection gets its own forks,
and when a connection ends (its process exited or died) the children it started are stopped.
A process whose environment differs in what only an interpreter start applies (another run,
another copy of the course) does not share: it starts its own, as before.

The shared fork server also forks the run's notebook kernels. ``share`` writes a kernelspec
(``course-forked``) and puts it first in ``JUPYTER_PATH``; the pytest plugin points nbval at it.
Jupyter starts the spec's small launcher (no SDK import), which asks the fork server for a
kernel: a child that has imported ipykernel, the widget library, the SDK and ``course_lib``
before the fork, and runs ``ipykernel_launcher`` with the kernel's arguments, environment and
working directory. The launcher stands in for it: it passes signals on (interrupts) and exits
with the kernel's status; if it is killed, its connection ends and so does the kernel. With no
usable fork server the launcher becomes ``python -m ipykernel_launcher`` in place (``exec``).
Kernels started by name ``python3`` (``make regen``, JupyterLab) are never forked.

``connect`` falls back to the cold launch when the fast path is switched off
(``COURSE_FAST_LAUNCH=0``), unavailable (no fork, no Unix sockets), broken (the fork server
died or failed to start), or when the lab's environment changes something only an interpreter
start can apply (``PYTHON*``, locale, the run tag).
"""
from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Sequence

import anyio
import anyio.abc

from course_lib._runtime.process import ServerProcess, pid_alive, run_as_process, server_env, without_package_init
from course_lib.paths import ROOT

SWITCH = "COURSE_FAST_LAUNCH"  # "0" turns the fast path off; connect then always starts cold
SHARED = "COURSE_FORKSERVER"  # "ADDRESS PID KEY" of the run's shared fork server (set by ``share``)
READY_TIMEOUT = 30.0  # the fork server's own imports, on a busy machine
REPLY_TIMEOUT = 10.0  # fork and report a pid
SHUTDOWN_GRACE = 1.0  # children get this long to exit by themselves when the fork server stops
PARENT_CHECK = 0.5  # how often the fork server checks that its parent is alive
STATUS_LOST = -255  # return code reported if the fork server died before reporting one
_MAX_REQUEST = 1 << 20
KERNEL_MODULE = "ipykernel_launcher"
_PDEATHSIG = signal.SIGUSR1


def _fixed_at_fork(name: str) -> bool:
    """Variables that only an interpreter start (or the leak check's /proc view) can apply.

    ``PYTHONPATH`` is not one of them: a lab that names another copy of the course (a negative
    control's edited copy) gets a child that drops the pre-imported ``course_lib`` and imports
    the copy's, as a fresh interpreter would (see ``_use_course_copy``).
    """
    if name == "PYTHONPATH":
        return False
    return name.startswith(("PYTHON", "LC_")) or name in ("LANG", "COURSE_LAB_RUN", "COURSE_LAB_SERVER")


# ---------------------------------------------------------------------------------------------
# Parent side (the kernel or the pytest process)

def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0" and hasattr(os, "fork") and hasattr(socket, "send_fds") \
        and hasattr(socket, "AF_UNIX") and hasattr(socket, "SOCK_SEQPACKET")


def _key(env: dict[str, str]) -> str:
    """What a fork server fixes for its children at start-up; processes share one only if equal."""
    fixed = sorted((k, v) for k, v in env.items() if _fixed_at_fork(k))
    return hashlib.sha256(json.dumps(fixed).encode()).hexdigest()[:16]


class _Link:
    """This process's line to a fork server: its control socket and the ``ready`` handshake."""

    sock: socket.socket
    pid: int

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.owner = os.getpid()
        self.state = "starting"  # -> "ready" | "broken"

    async def ready(self) -> bool:
        with anyio.move_on_after(READY_TIMEOUT):
            while self.state == "starting":
                try:
                    message = self.sock.recv(4096)
                except BlockingIOError:
                    await anyio.sleep(0.01)
                    continue
                except OSError:
                    message = b""
                self.state = "ready" if message == b"ready" else "broken"
        if self.state != "ready":
            self.state = "broken"
        return self.state == "ready"


class _Handle(_Link):
    """A fork server this process started (and owns): it ends when this process closes it or dies."""

    def __init__(self, env: dict[str, str], listener: socket.socket | None = None):
        super().__init__(env)
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listening = [listener.fileno()] if listener is not None else []
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "course_lib._runtime.fastlaunch", str(theirs.fileno()), str(os.getpid()),
                 *map(str, listening)],
                # Pipes, like a lab's stdin/stdout, so the children's sys.stdin/stdout objects
                # were created for the same kind of file as after a cold start.
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=env, cwd=str(ROOT), pass_fds=[theirs.fileno(), *listening], start_new_session=True)
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.sock.setblocking(False)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.state = "broken"
        self.sock.close()  # EOF: the fork server stops its children and exits
        try:
            self.proc.wait(timeout=SHUTDOWN_GRACE + 2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Client(_Link):
    """A connection to the run's shared fork server (started by another process)."""

    def __init__(self, env: dict[str, str], address: str, pid: int):
        super().__init__(env)
        self.pid = pid
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.connect("\0" + address)
        except OSError:
            self.sock.close()
            raise
        self.sock.setblocking(False)

    def alive(self) -> bool:
        return pid_alive(self.pid)

    def close(self) -> None:
        self.state = "broken"
        self.sock.close()  # EOF: the fork server stops the children this connection started


def _published() -> tuple[str, int, str] | None:
    """(address, pid, key) of the run's shared fork server, as ``share`` published it."""
    try:
        address, pid, key = os.environ[SHARED].split()
        return address, int(pid), key
    except (KeyError, ValueError):
        return None


def _shared(env: dict[str, str]) -> tuple[str, int] | None:
    """(address, pid) of the run's shared fork server, if there is one this process may use."""
    published = _published()
    if published is None:
        return None
    address, pid, key = published
    return (address, pid) if key == _key(env) and pid != os.getpid() else None


_handle: _Handle | _Client | None = None
_handle_lock = threading.Lock()
_atexit_registered = False
_kernels: Path | None = None  # the run's kernelspec directory, written by ``share``


def _base_env() -> dict[str, str]:
    """The base environment of every lab (the leak check reads it from /proc, where a forked
    child still shows its parent's), without any one lab's additions."""
    env = server_env(Path(tempfile.gettempdir()))
    del env["COURSE_LAB_DIR"]
    return env


def _current() -> _Handle | _Client | None:
    """The fork server for this process (the run's shared one, or its own started on first
    use); None if it is broken."""
    global _handle
    with _handle_lock:
        if _handle is not None and _handle.owner != os.getpid():
            _handle = None  # a forked copy of the parent must not share the parent's fork server
        if _handle is None:
            env = _base_env()
            shared = _shared(env)
            if shared is not None:
                try:
                    _handle = _Client(env, *shared)
                except OSError:
                    _handle = None  # gone: start one of our own
            if _handle is None:
                try:
                    _handle = _Handle(env)
                except OSError:
                    return None
        handle = _handle
    _register_atexit()
    return None if handle.state == "broken" else handle


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        import atexit

        atexit.register(shutdown)
        _atexit_registered = True


def share() -> None:
    """Start this process's fork server now and let every process it starts use it.

    Called once by the pytest process that starts a run with workers: the workers and the
    kernels they start inherit ``COURSE_FORKSERVER`` and connect to it.
    """
    global _handle, _kernels
    if not enabled() or not sys.platform.startswith("linux"):  # abstract socket names are Linux's
        return
    with _handle_lock:
        if _handle is not None:
            return
        env = _base_env()
        address = f"course-forkserver-{os.getpid()}-{os.urandom(6).hex()}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind("\0" + address)
            listener.listen(64)
            _handle = _Handle(env, listener)
        except OSError:
            return
        finally:
            listener.close()  # the fork server holds it now
        os.environ[SHARED] = f"{address} {_handle.pid} {_key(env)}"
        # Notebook kernels of the run are forked too, through a kernelspec that asks for one.
        _kernels = kernel_spec(Path(tempfile.mkdtemp(prefix="course-kernels-")))
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(_kernels), os.environ.get("JUPYTER_PATH")]))
    _register_atexit()


def shutdown() -> None:
    """Stop this process's fork server (and any child it still has), or leave the shared one;
    the next lab starts or joins one again."""
    global _handle, _kernels
    with _handle_lock:
        handle, _handle = _handle, None
    if handle is not None and handle.owner == os.getpid():
        handle.close()
        if _kernels is not None:  # the kernelspec of the fork server this process shared
            import shutil

            shutil.rmtree(_kernels, ignore_errors=True)
            _kernels = None


def running_pid() -> int | None:
    """Pid of the fork server this process uses, if one is running (for tests and the benchmark)."""
    handle = _handle
    if handle is None or handle.owner != os.getpid() or not handle.alive():
        return None
    return handle.pid


async def spawn(argv: Sequence[str], env: dict[str, str], cwd: Path, stderr):
    """Start a course server through the fork server; None means "use the cold launch"."""
    if not enabled():
        return None
    handle = _current()
    if handle is None or not await handle.ready():
        return None
    fixed = {k: v for k, v in env.items() if _fixed_at_fork(k)}
    if fixed != {k: v for k, v in handle.env.items() if _fixed_at_fork(k)}:
        return None  # only a fresh interpreter can apply these
    request = json.dumps({"argv": list(argv), "env": env, "cwd": str(cwd)}).encode()
    if len(request) >= _MAX_REQUEST:
        return None
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    status, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status.setblocking(False)
    reply: dict = {}
    try:
        with anyio.move_on_after(REPLY_TIMEOUT):
            while True:
                try:
                    socket.send_fds(handle.sock, [request], [stdin_r, stdout_w, stderr.fileno(), theirs.fileno()])
                    break
                except BlockingIOError:
                    await anyio.sleep(0.005)  # its queue is full: many labs starting at once
            # The child's ends now live in the fork server (and soon only in the child).
            for fd in (stdin_r, stdout_w):
                os.close(fd)
            stdin_r = stdout_w = None
            theirs.close()
            await anyio.wait_readable(status)
            reply = json.loads(status.recv(4096) or b"{}")
    except (OSError, ValueError):
        pass  # the fork server is gone or answered nonsense
    finally:
        if "pid" not in reply:  # failed or cancelled: closing our ends ends any child it forked
            for fd in (stdin_r, stdout_w, stdin_w, stdout_r):
                if fd is not None:
                    os.close(fd)
            theirs.close()
            status.close()
    if "pid" not in reply:
        handle.state = "broken"  # this and later labs start cold
        return None
    return _ForkedProcess(reply["pid"], stdin_w, stdout_r, status)


class _PipeEnd:
    """One end of a lab's pipe, waited on without blocking the event loop.

    The end keeps its own waiter, so ``aclose`` (from whichever task) removes the event loop's
    registration for the fd before closing it and wakes the waiter. (``anyio.notify_closing``
    only finds waiters registered in the closing task's context: a waiter left registered on
    a closed fd would make the next file that reuses the number look registered, and never
    wake its own waiter.)
    """

    def __init__(self, fd: int):
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._waiter: asyncio.Future | None = None

    async def _wait(self, writable: bool) -> None:
        loop = asyncio.get_running_loop()
        fd, waiter = self._fd, loop.create_future()
        add, remove = (loop.add_writer, loop.remove_writer) if writable else (loop.add_reader, loop.remove_reader)
        add(fd, lambda: waiter.done() or waiter.set_result(True))
        self._waiter = waiter
        try:
            if not await waiter:
                raise anyio.ClosedResourceError
        finally:
            if self._waiter is waiter:  # still ours: not closed meanwhile
                self._waiter = None
                remove(fd)

    async def aclose(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            waiter, self._waiter = self._waiter, None
            if waiter is not None:
                loop = asyncio.get_running_loop()
                loop.remove_reader(fd)
                loop.remove_writer(fd)
                if not waiter.done():
                    waiter.set_result(False)
            os.close(fd)


class _PipeReader(_PipeEnd, anyio.abc.ByteReceiveStream):
    """The parent's end of the server's stdout pipe."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._fd is None:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await self._wait(writable=False)
                continue
            if not data:
                raise anyio.EndOfStream
            return data


class _PipeWriter(_PipeEnd, anyio.abc.ByteSendStream):
    """The parent's end of the server's stdin pipe."""

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._fd is None:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._fd, view):]
            except BlockingIOError:
                await self._wait(writable=True)
            except BrokenPipeError:
                raise anyio.BrokenResourceError from None


class _ForkedProcess(ServerProcess):
    """A server forked by the fork server: same surface as a cold ``ServerProcess``."""

    launch_path = "fast"

    def __init__(self, pid: int, stdin_fd: int, stdout_fd: int, status: socket.socket):
        self.pid = pid
        self.stdin = _PipeWriter(stdin_fd)
        self.stdout = _PipeReader(stdout_fd)
        self._status = status
        self._code: int | None = None

    @property
    def returncode(self) -> int | None:
        if self._code is None and self._status is not None:
            self._code = self._read_status()
        return self._code

    def _read_status(self) -> int | None:
        try:
            message = self._status.recv(4096)
        except BlockingIOError:
            return None
        except OSError:
            message = b""
        if message:
            return json.loads(message)["exit"]
        # The fork server died without reporting: the child was reparented (and is reaped) elsewhere.
        return None if pid_alive(self.pid) else STATUS_LOST

    def _release(self) -> None:
        if self._status is not None and self._code is not None:
            self._status.close()
            self._status = None


# ---------------------------------------------------------------------------------------------
# Other children of a test run's shared fork server: kernels, and ``python -c`` processes

# What such a child applies itself, or what does not concern it: these may differ between its
# environment and the fork server's (whose own are those of a course server).
_CHILD_APPLIES = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "COURSE_LAB_SERVER")


def fork(argv: list[str], env: dict[str, str], cwd: str | os.PathLike, fds: Sequence[int]):
    """Ask the run's shared fork server, synchronously, for a child that is
    ``python -m ipykernel_launcher ARGS`` or ``python -c CODE ARGS`` (``argv``) with ``fds`` as
    its stdin, stdout and stderr. Returns ``(pid, status socket, connection)``, or None if there
    is no usable shared fork server (then start ``argv`` as a fresh interpreter). The child is
    stopped if the connection closes before it exits; ``wait`` reads its exit status."""
    published = _published()
    if not enabled() or published is None:
        return None
    address, _, key = published
    view = {k: v for k, v in env.items() if k not in _CHILD_APPLIES}
    view.update({k: v for k, v in _base_env().items() if k in _CHILD_APPLIES})
    if _key(view) != key:
        return None  # another run, or settings only a fresh interpreter applies
    link = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        link.settimeout(READY_TIMEOUT)
        link.connect("\0" + address)
        if link.recv(16) != b"ready":
            raise OSError("the fork server is not ready")
        status, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            request = json.dumps({"argv": list(argv), "env": env, "cwd": os.fspath(cwd)}).encode()
            socket.send_fds(link, [request], [*fds, theirs.fileno()])
        status.settimeout(REPLY_TIMEOUT)
        return json.loads(status.recv(4096) or b"{}")["pid"], status, link
    except (OSError, ValueError, KeyError):
        link.close()  # any child it forked for us is stopped with the connection
        return None


def wait(forked, timeout: float | None = None) -> int | None:
    """Exit status of a child from ``fork`` (negative: killed by that signal), or None if it is
    still running after ``timeout`` seconds (it is then killed). Closes the connection."""
    pid, status, link = forked
    status.settimeout(timeout)
    try:
        message = status.recv(4096)
    except TimeoutError:
        message = None
    link.close()  # stops the child (and its group) if it is still running
    status.close()
    if message is None:
        return None
    return json.loads(message)["exit"] if message else 1


KERNEL_NAME = "course-forked"
KERNEL_BOOT = without_package_init("_runtime.fastlaunch", "kernel_main")
_KERNEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def kernel_spec(directory: Path) -> Path:
    """Write the run's kernelspec (kernels forked by the shared fork server) under ``directory``;
    return the directory to put first in ``JUPYTER_PATH``."""
    spec = directory / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": ["python", "-c", KERNEL_BOOT, str(ROOT / "course_lib"), "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python",
        "metadata": {"debugger": True}}, indent=1), encoding="utf-8")
    return directory


def forked_kernels() -> str | None:
    """The kernel name under which this run's notebooks get forked kernels, if they can."""
    if SHARED not in os.environ:
        return None
    for entry in filter(None, os.environ.get("JUPYTER_PATH", "").split(os.pathsep)):
        if (Path(entry) / "kernels" / KERNEL_NAME / "kernel.json").is_file():
            return KERNEL_NAME
    return None


def kernel_main(args: list[str]) -> None:
    """Be a notebook kernel's process: ask the run's fork server for a kernel forked from its
    warm image and stand in for it (signals are passed on, its exit status is this process's);
    become ``python -m ipykernel_launcher`` in place when there is no usable fork server."""
    argv = [sys.executable, "-m", KERNEL_MODULE, *args]
    env = dict(os.environ)
    forked = fork(argv, env, os.getcwd(), [0, 1, 2])
    if forked is None:
        os.execve(sys.executable, argv, env)
    for sig in _KERNEL_SIGNALS:
        signal.signal(sig, lambda signum, _: os.kill(forked[0], signum))
    code = wait(forked)
    if code < 0:  # killed by a signal: so is this process
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


# ---------------------------------------------------------------------------------------------
# Fork server side (``python -m course_lib._runtime.fastlaunch CONTROL_FD PARENT_PID``)

def _warm(kernels: bool = False) -> None:
    """Import what every course server imports, and run one in-memory exchange, before any fork.

    Only code and caches are warmed: no course server module is imported here, so each lab's
    server module runs its module-level code in the lab's own process and environment.
    """
    import course_lib  # noqa: F401  (the package imports the SDK client and the walker)
    import course_lib.servers  # noqa: F401
    import course_lib.servers._base  # noqa: F401
    import course_lib.servers.__main__  # noqa: F401
    import mcp.server  # noqa: F401
    import mcp.server.stdio  # noqa: F401
    import mcp_types as types
    from mcp import Client
    from mcp.server import Server

    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="warm", input_schema={"type": "object"})])

    async def exchange() -> None:
        server = Server("warm-up", on_list_tools=on_list_tools)
        for mode in ("legacy", "2026-07-28"):
            async with Client(server, mode=mode) as client:
                await client.list_tools()

    with warnings.catch_warnings():  # leaves the "already warned" registries as they were
        warnings.simplefilter("ignore")
        anyio.run(exchange)
    # The stdio transport's own (de)serialisation path, which the in-memory one skips.
    line = ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c",'
            '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}')
    types.jsonrpc_message_adapter.validate_json(line, by_name=False).model_dump_json(by_alias=True, exclude_unset=True)
    if kernels:
        _warm_kernels()


# What a course kernel imports after it starts: the kernel's own machinery (its debugger is
# imported at start-up, with the validation warning off as Jupyter starts kernels), the widget
# library, and the course modules the chapters use. Anything missing here is imported after
# the fork, as in a fresh kernel, only slower.
_KERNEL_IMPORTS = ("ipykernel_launcher", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger",
                   "ipywidgets", "sqlite3", "pdb")
_NOT_FOR_KERNELS = ("course_lib.servers", "course_lib.tooling.pytest_plugin", "course_lib.tooling.bench",
                    "course_lib.tooling.browser_check", "course_lib.tooling.slides", "course_lib.tooling.student_copy",
                    "course_lib.tooling.regen", "course_lib._runtime.fastlaunch", "course_lib.servers._standin")


def _warm_kernels() -> None:
    import importlib
    import pkgutil

    import course_lib

    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    for name in _KERNEL_IMPORTS:
        importlib.import_module(name)
    for info in pkgutil.iter_modules(course_lib.__path__, "course_lib."):
        if not info.name.startswith(_NOT_FOR_KERNELS):
            importlib.import_module(info.name)


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(_PDEATHSIG), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # no prctl: EOF on the control socket and the periodic check remain


def _use_course_copy(warmed: str, wanted: str) -> None:
    """In a child whose lab names another ``PYTHONPATH``: put it where the interpreter would
    (right after the script's directory) and forget every ``course_lib`` module imported before
    the fork, so the server imports the copy's code. The SDK stays imported: copies of the
    course share it, and it never imports ``course_lib``."""
    import importlib

    old = [p for p in warmed.split(os.pathsep) if p]
    sys.path[1:] = [p for p in wanted.split(os.pathsep) if p] + [p for p in sys.path[1:] if p not in old]
    for name in [n for n in sys.modules if n == "course_lib" or n.startswith("course_lib.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _child(request: dict, fds: list[int], closing: list) -> None:
    """In the forked child: become the lab's server process (or the kernel, or the ``-c``
    process, that was asked for). Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, _PDEATHSIG, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for thing in closing:  # the fork server's own sockets, pipes and selector
            os.close(thing) if isinstance(thing, int) else thing.close()
        os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds[:3]:  # fds[3] is the status socket, closed with ``closing``
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        warmed_path = os.environ.get("PYTHONPATH", "")
        os.environ.clear()
        os.environ.update(request["env"])
        sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
        argv = request["argv"]
        sys.path[0] = "" if argv[1] == "-c" else os.getcwd()  # what ``python -c`` / ``-m`` put first
        if os.environ.get("PYTHONPATH", "") != warmed_path:
            _use_course_copy(warmed_path, os.environ.get("PYTHONPATH", ""))
        if argv[1] == "-c":
            run_as_process(_code(argv))
        if argv[2] == KERNEL_MODULE:
            run_as_process(_kernel(argv))
        import course_lib.servers.__main__ as entry

        sys.argv = [entry.__file__, *argv[3:]]
    except BaseException:
        try:
            sys.excepthook(*sys.exc_info())  # lands in the lab's stderr log once fd 2 is moved
            sys.stderr.flush()
        finally:
            os._exit(127)
    entry.run(argv[3:])
    os._exit(1)  # run() never returns


def _kernel(argv: list[str]):
    """What ``python -m ipykernel_launcher ARGS`` runs."""
    import ipykernel_launcher
    from ipykernel import kernelapp

    del sys.path[0]  # as ipykernel_launcher does; the kernel puts the working directory back
    sys.argv = [ipykernel_launcher.__file__, *argv[3:]]
    return kernelapp.launch_new_instance


def _code(argv: list[str]):
    """What ``python -c CODE ARGS`` runs (in a fresh ``__main__``)."""
    import types

    sys.argv = ["-c", *argv[3:]]
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    code = compile(argv[2], "<string>", "exec")
    return lambda: exec(code, main.__dict__)


def serve_forks(control_fd: int, parent: int, listen_fd: int | None = None) -> None:
    """Fork a server for each request on the control socket (and, when shared, on each
    connection accepted on ``listen_fd``) until the parent closes the control socket or dies."""
    control = socket.socket(fileno=control_fd)
    listener = socket.socket(fileno=listen_fd) if listen_fd is not None else None
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the parent's business
    try:
        _warm(kernels=listener is not None)
        # What is imported now stays as it is in every child: keeping it out of the collector's
        # reach spares each child the copy-on-write faults of scanning it.
        gc.collect()
        gc.freeze()
    except BaseException as exc:
        control.send(f"import failed: {exc!r}".encode()[:4000])
        return
    if threading.active_count() != 1:
        control.send(b"threads started during import: cannot fork safely")
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGCHLD, _PDEATHSIG):
        signal.signal(sig, lambda *_: None)
    wake = os.fdopen(wake_r, "rb", buffering=0)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake, selectors.EVENT_READ)
    if listener is not None:
        selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}  # pid -> the lab's status socket
    started_by: dict[int, socket.socket] = {}  # pid -> the connection that asked for it
    clients: list[socket.socket] = []  # accepted connections of other processes of the run
    control.send(b"ready")

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            started_by.pop(pid, None)
            lab = children.pop(pid, None)
            if lab is not None:
                try:
                    lab.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass
                lab.close()

    def fork_for(conn: socket.socket, message: bytes, fds: list[int]) -> None:
        lab = socket.socket(fileno=fds[3])
        try:
            request = json.loads(message)
            pid = os.fork()
        except (OSError, ValueError) as exc:
            try:
                lab.send(json.dumps({"error": str(exc)}).encode())
            except OSError:
                pass
            lab.close()
            pid = None
        if pid == 0:
            _child(request, fds, [control, *([listener] if listener else []), *clients, selector, wake, wake_w,
                                  lab, *children.values()])
        for fd in fds[:3]:
            os.close(fd)
        if pid:
            children[pid] = lab
            started_by[pid] = conn
            try:
                lab.send(json.dumps({"pid": pid}).encode())
            except OSError:
                pass

    running = True
    while running and os.getppid() == parent:
        for key, _ in selector.select(timeout=PARENT_CHECK):
            conn = key.fileobj
            if conn is wake:
                try:
                    wake.read(4096)
                except BlockingIOError:
                    pass
                continue
            if conn is listener:
                try:
                    client, _ = listener.accept()
                    _, uid, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                      struct.calcsize("3i")))
                    if uid != os.getuid():  # the abstract name is visible to other users
                        client.close()
                        continue
                    client.send(b"ready")
                except OSError:
                    continue
                clients.append(client)
                selector.register(client, selectors.EVENT_READ)
                continue
            try:
                message, fds, flags, _ = socket.recv_fds(conn, _MAX_REQUEST, 8)
            except OSError:
                message, fds, flags = b"", [], 0
            if not message and not fds:
                if conn is control:
                    running = False  # the parent closed the control socket (or died)
                    break
                # Another process of the run is gone: so are the servers it started.
                selector.unregister(conn)
                clients.remove(conn)
                conn.close()
                for pid in [pid for pid, by in started_by.items() if by is conn]:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                continue
            if len(fds) != 4 or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                for fd in fds:
                    os.close(fd)
                continue
            fork_for(conn, message, fds)
        reap()

    # Parent gone or done: whatever is left gets a moment to finish, then its group is killed.
    for client in clients:
        client.close()
    deadline = time.monotonic() + SHUTDOWN_GRACE
    while children and time.monotonic() < deadline:
        time.sleep(0.01)
        reap()
    for pid in list(children):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    while children:
        time.sleep(0.01)
        reap()


if __name__ == "__main__":
    serve_forks(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
    os._exit(0)
