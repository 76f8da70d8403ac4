"""The hostile server: one catalog (alpha | — | beta, gamma) and the ways a server misbehaves.

Modes the SDK's ``Server`` can play (it keeps the wire clean, so these break the process, not
the protocol):

* ``crash``          -- dies (exit code 3) while building page 2;
* ``hang``           -- never answers the request for page 3;
* ``grandchild``     -- starts a helper in a new session (``setsid``) and forgets it;
* ``group-helper``   -- starts a helper that stays in its process group and forgets it;
* ``helper-ignores-term`` -- the same, with a helper that ignores SIGTERM;
* ``ignore-term``    -- ignores SIGTERM and keeps running after its stdin closes;
* ``slow-start``     -- sleeps ``SLOW_START`` seconds before it serves, as a server that loads a
  model or warms a cache does (chapter 11: a start-up needs its own budget);
* ``print``          -- its ``tools/list`` handler calls ``print()``, as a careless server does
  (2.3.0's ``stdio_server`` diverts it to stderr; chapter 11 runs the same bug on SDK 1.29.0).

A helper has set itself up (its own session, SIGTERM ignored, as its mode says) and its pid is
in the lab file ``helper.pid`` before the server serves. ``--http`` serves these modes on Streamable HTTP at
127.0.0.1 instead of stdio, as ``modern`` does.

Modes the SDK refuses to play (it always writes valid, camelCase frames and diverts prints
away from stdout), served by a small raw newline-JSON-RPC loop written without the SDK:

* ``noise``          -- log lines on stdout before its first frame and before every page;
* ``bad-frame``      -- page 2 arrives as a truncated line that is not JSON;
* ``huge-page``      -- page 1 holds 100,000 tools;
* ``bad-tool``       -- page 3 holds a tool entry without its required ``inputSchema``;
* ``snake-cursor``   -- page 1 sends ``next_cursor`` (snake_case) instead of ``nextCursor``;
* ``spawn-and-exit`` -- asked for page 2, starts a helper that keeps the stdout pipe open and
  exits (the SDK's loop keeps the real stdout to itself, so a helper could not inherit it);
* ``banner``         -- writes a start-up banner to stdout before it reads any input;
* ``late-banner``    -- the same after a slow start (``LATE_BANNER`` seconds after it says it
  serves): past the audit's first window, still before it reads any input;
* ``late-notice``    -- after the same slow start, sends ``notifications/tools/list_changed``
  before it reads any input (before initialized, a server sends pings and log messages only);
* ``lax``            -- answers an unknown method, and a call to a tool it does not list, with a
  result instead of an error;
* ``slow-reply``     -- its first reply (whatever the first request is) waits ``--delay`` seconds
  (default ``SLOW_REPLY``), as a server that loads a model on its first request does; every reply
  after it is prompt (the audit's negative control for a reply later than its request budget).

In every mode each tool it lists answers ``tools/call`` with one line naming itself: the
misbehaviour is in the listing and the process, never in the tools.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.protocol import INVALID_PARAMS, LEGACY_VERSION, META_PROTOCOL_VERSION, METHOD_NOT_FOUND
from course_lib.servers._base import lab_file, parser, serve

# The helper each helper mode starts: in a new session (setsid) or not, ignoring SIGTERM or not.
HELPERS = {"grandchild": {"new_session": True, "ignore_term": False},
           "group-helper": {"new_session": False, "ignore_term": False},
           "helper-ignores-term": {"new_session": False, "ignore_term": True}}
SDK_MODES = ("crash", "hang", *HELPERS, "ignore-term", "print", "slow-start")
RAW_MODES = ("noise", "bad-frame", "huge-page", "bad-tool", "snake-cursor", "spawn-and-exit", "banner",
             "late-banner", "late-notice", "lax", "slow-reply")
MODES = SDK_MODES + RAW_MODES
PAGES = (("alpha",), (), ("beta", "gamma"))
NAMES = frozenset(name for page in PAGES for name in page)
CURSORS = (None, "page-2", "page-3")  # fixed: these servers are about the process, not the cursor
HUGE_PAGE = 100_000
SLOW_START = 3.0  # seconds
LATE_BANNER = 1.0  # seconds late-banner and late-notice take to start: the audit has sent initialize by then
SLOW_REPLY = 12.0  # seconds before the first reply of slow-reply: past the audit's 10 s request budget
INPUT_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
MODERN_FIELDS = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
# A helper that would outlive everything if left alone. It closes the pipe it was given once it
# has set itself up: the server waits for that, so the helper's state is settled when the lab starts.
HELPER = ("import os, signal, sys, time\n"
          "if sys.argv[2] == 'ignore-term': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
          "os.close(int(sys.argv[1]))\n"
          "time.sleep(600)")


def answer(name: str) -> dict:
    """The ``tools/call`` result of a listed tool, as the wire carries it."""
    return {"content": [{"type": "text", "text": f"hostile:{name}"}]}


def unknown_tool(name) -> str:
    return f"Unknown tool: {name}"


def page_index(cursor: str | None) -> int:
    return CURSORS.index(cursor) if cursor in CURSORS else 0


def page_json(index: int) -> dict:
    """Page ``index`` as the wire carries it (camelCase)."""
    tools = [{"name": n, "description": f"Synthetic catalog entry {n}", "inputSchema": INPUT_SCHEMA}
             for n in PAGES[index]]
    result: dict = {"tools": tools}
    if index + 1 < len(PAGES):
        result["nextCursor"] = CURSORS[index + 1]
    return result


def start_helper(*, keep_stdout: bool, new_session: bool = True, ignore_term: bool = False) -> int:
    """Start a helper and wait until it has set itself up; its pid goes to the lab file ``helper.pid``."""
    settled, told = os.pipe()
    helper = subprocess.Popen([sys.executable, "-c", HELPER, str(told), "ignore-term" if ignore_term else "-"],
                              start_new_session=new_session, pass_fds=(told,), stdin=subprocess.DEVNULL,
                              stdout=None if keep_stdout else subprocess.DEVNULL)
    os.close(told)
    with open(settled, "rb") as pipe:
        pipe.read()  # end of file: the helper closed its end (or died)
    path = lab_file("helper.pid")
    if path is not None:
        path.write_text(str(helper.pid), encoding="utf-8")
    return helper.pid


# --- SDK modes ------------------------------------------------------------------------------

def build(mode: str) -> Server:
    async def on_list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        index = page_index(None if params is None else params.cursor)
        if mode == "crash" and index == 1:
            print("hostile: fatal error while building page 2", file=sys.stderr, flush=True)
            os._exit(3)
        if mode == "hang" and index == 2:
            await anyio.sleep_forever()
        if mode == "print":
            print(f"hostile: listing page {index + 1}")  # the bug: a log line meant for stdout
        return types.ListToolsResult.model_validate(page_json(index), by_name=False)

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in NAMES:
            raise MCPError(INVALID_PARAMS, unknown_tool(params.name))
        return types.CallToolResult.model_validate(answer(params.name))

    return Server("course-hostile", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def serve_sdk(mode: str, http: bool = False) -> int:
    if mode in HELPERS:
        start_helper(keep_stdout=False, **HELPERS[mode])
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "slow-start":
        time.sleep(SLOW_START)
    if http:
        from course_lib.servers.modern import serve_http  # noqa: PLC0415 (only an HTTP lab needs it)

        serve_http(build(mode))
    else:
        serve(build(mode))
    if mode == "ignore-term":
        while True:  # stdin is closed and SIGTERM is ignored: only SIGKILL ends this
            time.sleep(1)
    return 0


# --- raw modes: a newline-JSON-RPC loop without the SDK -------------------------------------

def _write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def huge_page() -> dict:
    return {"tools": [{"name": f"tool-{i:06d}", "inputSchema": {"type": "object"}} for i in range(HUGE_PAGE)]}


def raw_result(mode: str, index: int) -> dict | str:
    """The result of page ``index``, or a raw line to send instead of the whole frame."""
    if mode == "bad-frame" and index == 1:
        return '{"jsonrpc": "2.0", "result": {"tools": ['  # cut off: not JSON at all
    result = page_json(index)
    if mode == "bad-tool" and index == 2:
        result["tools"][0] = {"name": "beta", "description": "an entry without its inputSchema"}
    if mode == "snake-cursor" and "nextCursor" in result:
        result["next_cursor"] = result.pop("nextCursor")
    return result


def serve_raw(mode: str, delay: float = SLOW_REPLY) -> int:
    # Built before the first request, so that the request budget measures the client, not this.
    page = huge_page() if mode == "huge-page" else None
    huge = json.dumps(page) if page is not None else None
    listed = {tool["name"] for tool in page["tools"]} if page is not None else NAMES
    ready = lab_file("ready")
    if ready is not None:
        ready.touch()  # what _base.serve() tells connect(): about to serve
    if mode in ("late-banner", "late-notice"):
        time.sleep(LATE_BANNER)
    if mode == "late-notice":
        _write(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    if mode in ("banner", "late-banner"):
        _write("hostile: ready")  # before any input: no client expects a line here
    first = first_reply = True
    for line in sys.stdin:
        if first and mode == "noise":
            _write("hostile: starting up")  # before the first frame this server sends
        first = False
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # notifications need no answer
        if first_reply and mode == "slow-reply":
            time.sleep(delay)  # busy with its first request: reads nothing, answers nothing
        first_reply = False
        method, params = message.get("method"), message.get("params") or {}
        reply: dict | str
        modern = META_PROTOCOL_VERSION in (params.get("_meta") or {})
        if method == "initialize":
            reply = {"protocolVersion": params.get("protocolVersion", LEGACY_VERSION),
                     "capabilities": {"tools": {}}, "serverInfo": {"name": "course-hostile-raw", "version": "1.0"}}
        elif method == "tools/list":
            index = page_index(params.get("cursor"))
            if mode == "spawn-and-exit" and index == 1:
                # The helper inherits stdout: the pipe stays open after this process is gone.
                start_helper(keep_stdout=True)
                print("hostile: started a helper and exited", file=sys.stderr, flush=True)
                os._exit(0)
            if mode == "noise":
                _write(f"hostile: serving page {index + 1}")
            reply = raw_result(mode, index)
            if isinstance(reply, dict) and modern:
                reply.update(MODERN_FIELDS)  # a 2026-07-28 result must carry these
        elif method == "tools/call" and (params.get("name") in listed or mode == "lax"):
            reply = answer(str(params.get("name")))
            if modern:
                reply["resultType"] = "complete"
        elif mode == "lax":
            reply = {"resultType": "complete"} if modern else {}
        else:
            error = ({"code": INVALID_PARAMS, "message": unknown_tool(params.get("name"))} if method == "tools/call"
                     else {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
            _write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
            continue
        if huge is not None and method == "tools/list":
            _write(f'{{"jsonrpc": "2.0", "id": {json.dumps(message["id"])}, "result": {huge}}}')
        elif isinstance(reply, str):
            _write(reply)
        else:
            _write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": reply}))
    sys.stdout.flush()
    os._exit(0)  # stdin closed: nothing to tear down


def main(argv: list[str]) -> int:
    p = parser("hostile", MODES)
    p.add_argument("--http", action="store_true")
    p.add_argument("--delay", type=float, default=SLOW_REPLY, help="slow-reply: seconds before the first reply")
    args = p.parse_args(argv)
    if args.http and args.mode in RAW_MODES:
        p.error(f"--http serves only the modes {', '.join(SDK_MODES)}")
    return serve_raw(args.mode, args.delay) if args.mode in RAW_MODES else serve_sdk(args.mode, args.http)
