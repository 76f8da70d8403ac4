"""A wire tap between an outside MCP client and a course server (chapter 04).

    python course_lib/chapters/peer_tap.py LOG CAP SERVER ARGV...

starts the server, forwards every line in both directions unchanged, and appends one JSON
line per client frame to LOG (``{"tap": pid, "method": ..., "id": ..., "version": ...}``).
After CAP list requests it stops forwarding and ends the server: a client that never stops
by itself is cut there, and the log says so (``{"tap": pid, "cut": CAP}``). Standard library
only, and run by path (a client may hand its server a bare environment): the tap sets the
server's ``PYTHONPATH`` itself.
"""
from __future__ import annotations

import json
import os
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


def main(argv: list[str]) -> int:
    log_path, cap, *server = argv
    if server[:1] == ["--"]:
        server = server[1:]
    if not server:
        raise SystemExit("usage: peer_tap.py LOG CAP SERVER ARGV...")
    cap = int(cap)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COURSE_LAB_SERVER="1", PYTHONUNBUFFERED="1")
    # Not ``started_server``: this relay is started by an outside client as its "server" and
    # runs on the standard library alone. It and its server stay in the peer run's process
    # group, which the run's own ``started_server`` kills when the run ends.
    child = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
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
