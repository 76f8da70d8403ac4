"""The fork server's own side (:mod:`course_lib._runtime.fastlaunch` starts it and asks it for labs).

It imports what course servers import, then forks a child per request that becomes a session
leader, takes the lab's pipes as fds 0/1/2, the lab's environment, cwd and argv, and runs the
``course_lib`` module of its argv (``course_lib.servers``, or a grading harness) as ``__main__``,
as ``python -m`` would (that module is imported after the fork). It writes the child's pid, and
after reaping it its exit status, to the status pipe, so pid, return code and process group are
those of a cold start. It dies with its parent (end of file on the socket) and kills what is left
of its children.

A forked server shows in ``ps`` (and psutil's ``cmdline``) the command line a cold start would have
(``python -m course_lib.servers NAME --mode MODE``): the child rewrites its process title with
``setproctitle`` (Linux and macOS), inside the room of the fork server's own command line (which
names itself), leaving the environment the leak check reads untouched.

Not multiprocessing's forkserver: it starts with the kernel's environment (the leak check reads a
forked server's environment as its fork server started, so that must carry the lab markers) and
rebuilds the parent's ``__main__``, cwd and ``sys.path`` in every child. Forked labs of one
process share a string-hash seed, which cannot matter: a cold start draws a new seed each time,
so no course server output may depend on it (strict nbval would see it), and a lab that sets
``PYTHONHASHSEED`` starts cold.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import warnings

import anyio

try:
    import setproctitle
except ImportError:  # fastlaunch then starts every server cold and never starts this one
    setproctitle = None


# The fork server's last argument: what it is in ``ps``, and room for its children's titles.
NAME = "course_lib fork server: each lab server it forks shows its own command line" + " " * 64


def is_fork_server(cmdline: list[str]) -> bool:
    """Whether a process's command line (psutil's ``cmdline``) is a fork server's: it names itself ``NAME``."""
    return NAME.strip() in " ".join(cmdline)


def optimized(argv) -> bool:
    """Whether ``argv`` runs ``python -O`` (its fork server is another one: ``-O`` is fixed at start)."""
    return list(argv[1:2]) == ["-O"]



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


def _encode(request: dict) -> bytes:
    return json.dumps(request).encode()


def send(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """A lab's request to the fork server: its length and the lab's four fds, then the request as JSON."""
    body = _encode(request)
    socket.send_fds(sock, [struct.pack("!I", len(body))], fds)
    sock.sendall(body)


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
