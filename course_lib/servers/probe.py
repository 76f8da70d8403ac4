"""The probe server: one tool, ``process``, that reports what the server process sees of itself.

It answers the orientation questions "what does a lab server inherit?" and "is this really a
separate process?": pid, process group and session, working directory, argv, environment,
the kind of file behind each standard stream and every open descriptor. The launcher's tests
use it to check that a cold start and a fork-server start give a server the same world.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import threading

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.servers._base import parser, serve

TOOLS = [types.Tool(name="process", description="Facts about this server process, as JSON",
                    input_schema={"type": "object", "properties": {}, "additionalProperties": False})]


def _kind(fd: int) -> str:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return "closed"
    for test, name in ((stat.S_ISFIFO, "pipe"), (stat.S_ISSOCK, "socket"), (stat.S_ISREG, "file"),
                       (stat.S_ISCHR, "char-device"), (stat.S_ISDIR, "directory")):
        if test(mode):
            return name
    return "other"


def facts() -> dict:
    fds = sorted(int(fd) for fd in os.listdir("/dev/fd"))  # this process's descriptors (Linux and macOS)
    streams = {}
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name)
        streams[name] = {"encoding": stream.encoding, "errors": stream.errors,
                         "line_buffering": stream.line_buffering, "isatty": stream.isatty(),
                         "buffer_seekable": stream.buffer.seekable() if hasattr(stream, "buffer") else None}
    return {
        "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "sid": os.getsid(0),
        "cwd": os.getcwd(), "argv": sys.argv[1:], "path0": sys.path[0], "environ": dict(os.environ),
        "threads": threading.active_count(), "streams": streams,
        "fds": {fd: _kind(fd) for fd in fds},
        "flags": [getattr(sys.flags, f) for f in ("dont_write_bytecode", "optimize", "utf8_mode", "isolated")],
    }


def build() -> Server:
    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != "process":
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(facts()))])

    return Server("course-probe", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def main(argv: list[str]) -> int:
    parser("probe").parse_args(argv)
    return serve(build())
