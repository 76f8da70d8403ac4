"""A wire tap between an outside MCP client and a course server (chapter 07).

    python course_lib/chapters/peer_tap.py LOG CAP [--fork ADDRESS] SERVER ARGV...

starts the server, forwards every line in both directions unchanged, and appends one JSON
line per client frame to LOG (``{"tap": pid, "method": ..., "id": ..., "version": ...}``).
After CAP list requests it stops forwarding and ends the server: a client that never stops
by itself is cut there, and the log says so (``{"tap": pid, "cut": CAP}``). Standard library
only, and run by path (a client may hand its server a bare environment): the tap sets the
server's ``PYTHONPATH`` itself.

With ``--fork ADDRESS`` (the fork server of the process that started the client,
``_runtime.process.fork_address``), a course server is forked there, as that process's own labs
are (``_runtime.fastlaunch``: the same request, pipes and status pipe), instead of importing the
SDK in a fresh interpreter; the tap still owns it, and ends it as it would its own child. Any
failure to get one starts it cold.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
META_VERSION = "io.modelcontextprotocol/protocolVersion"


def describe(line: bytes) -> dict | None:
    """What the log keeps of one client frame: method, id, and the protocol version it names."""
    try:
        frame = json.loads(line)
    except ValueError:
        return {"method": None, "bad": True}
    if not isinstance(frame, dict):
        return {"method": None, "bad": True}
    params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    version = params.get("protocolVersion") if frame.get("method") == "initialize" else None
    return {"method": frame.get("method"), "id": frame.get("id"),
            "version": version or meta.get(META_VERSION), "cursor": params.get("cursor")}


class Forked:
    """A course server forked by the fork server at ``where``, with what ``main`` uses of a Popen."""

    def __init__(self, where: str, argv: list[str], env: dict[str, str]):
        (stdin_r, stdin_w), (stdout_r, stdout_w), (status_r, status_w) = os.pipe(), os.pipe(), os.pipe()
        body = json.dumps({"argv": argv, "env": env, "cwd": os.getcwd()}).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(30)
                conn.connect(where)
                socket.send_fds(conn, [struct.pack("!I", len(body))], [stdin_r, stdout_w, 2, status_w])
                conn.sendall(body)
        finally:
            for fd in (stdin_r, stdout_w, status_w):  # the fork server holds its own copies
                os.close(fd)
        self._status = status_r
        self.pid = self._number(30)
        if not self.pid or self.pid < 0:
            for fd in (stdin_w, stdout_r, status_r):
                os.close(fd)
            raise OSError("the fork server started no server")
        self.stdin, self.stdout = os.fdopen(stdin_w, "wb"), os.fdopen(stdout_r, "rb")

    def _number(self, timeout: float) -> int | None:
        if not select.select([self._status], [], [], timeout)[0]:
            return None
        data = os.read(self._status, 4)
        return struct.unpack("i", data)[0] if len(data) == 4 else -255

    def wait(self, timeout: float | None = None) -> int:
        code = self._number(timeout)
        if code is None:
            raise subprocess.TimeoutExpired("forked server", timeout)
        return code

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)  # a forked server leads a session of its own
        except OSError:
            pass


def start(server: list[str], env: dict[str, str], where: str | None):
    """The course server behind the tap: forked at ``where`` when it can be, else a fresh process."""
    if where and server[1:3] == ["-m", "course_lib.servers"]:
        try:
            return Forked(where, server, env)
        except OSError:
            pass
    return subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def main(argv: list[str]) -> int:
    log_path, cap, *server = argv
    where = None
    if server[:1] == ["--fork"]:
        where, server = server[1], server[2:]
    if server[:1] == ["--"]:
        server = server[1:]
    if not server:
        raise SystemExit("usage: peer_tap.py LOG CAP SERVER ARGV...")
    cap = int(cap)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COURSE_LAB_SERVER="1", PYTHONUNBUFFERED="1")
    # Not ``started_server``: this relay is started by an outside client as its "server" and
    # runs on the standard library alone. It and a server it started stay in the peer run's
    # process group, which the run's own ``started_server`` kills when the run ends; a forked
    # server sees the tap's end as the end of its stdin and leaves.
    child = start(server, env, where)
    log = open(log_path, "a", buffering=1)
    me = os.getpid()
    lists = 0

    def to_client() -> None:
        for line in child.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    pump = threading.Thread(target=to_client, daemon=True)
    pump.start()
    try:
        for line in sys.stdin.buffer:
            entry = describe(line)
            log.write(json.dumps({"tap": me, **entry}) + "\n")
            if str(entry.get("method", "")).endswith("/list"):
                lists += 1
                if lists > cap:
                    log.write(json.dumps({"tap": me, "cut": cap}) + "\n")
                    break
            child.stdin.write(line)
            child.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            child.stdin.close()
        except OSError:
            pass
        try:
            child.wait(timeout=2)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        pump.join(timeout=1)
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
