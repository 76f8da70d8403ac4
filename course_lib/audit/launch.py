"""Launch, stdout and exit: one process watched byte by byte, without the strict client in between.

Before any input (a short window) and until its reply to initialize: what the server writes to
stdout (a banner there breaks every client; a slow start prints it after the window, still before
the reply). Every stdout line is classified: a JSON-RPC message, a non-protocol line, or a line
past the frame budget. Then stdin EOF: the server must exit by
itself, with 0, within the exit budget, writing nothing more; a forced stop (SIGTERM, then
SIGKILL for the group) is its own verdict. stderr is information, as the stdio transport allows.
"""
from __future__ import annotations

import json
import signal
import time
from dataclasses import replace

import anyio
import psutil

from course_lib._runtime import proctree
from course_lib._runtime.process import STDERR_LOG, read_rest, started_server, wait_ready
from course_lib.audit.session import Context
from course_lib.protocol import LEGACY, LEGACY_VERSION

STDIO = "MUST (spec: stdio, nothing but MCP messages on stdout)"
BEFORE = "SHOULD (spec: lifecycle, nothing before initialize)"
FRAMES = "SHOULD (course: a frame within 4 MiB)"
EXIT = "SHOULD (spec: lifecycle, stdio shutdown)"
LEFT = "MUST (course: nothing outlives the server)"
STDERR = "MAY (spec: stdio, stderr for logging)"
LATE = "MUST (course: every reply within the request budget)"
LATE_MARGIN = 1.0  # seconds of the probe's budget kept for closing stdin and the exit
MAX_FRAME = 4 * 1024 * 1024
QUIET = 0.3  # seconds the audit listens before the first input (from the start; a course server's: its ready file)
# What a server may send before initialized (spec: lifecycle): a ping, a log message; the reply itself.
EARLY_ALLOWED = ("ping", "notifications/message", None)
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                   "clientInfo": {"name": "course-audit", "version": "1.0"}}}


class _NotServing(Exception):
    """A course server that exited (or never said it serves) before any input."""


def classify(line: bytes) -> str:
    """``message`` (a JSON object, as a frame is), ``noise`` (anything else) or ``oversized``."""
    if len(line) > MAX_FRAME:
        return "oversized"
    try:
        return "message" if isinstance(json.loads(line), dict) else "noise"
    except ValueError:
        return "noise"


class _Lines:
    def __init__(self, stdout):
        self.stdout, self.buffer, self.closed = stdout, b"", False

    async def read(self, window: float) -> list[bytes]:
        """Complete lines that arrive within ``window`` seconds (and what was already buffered)."""
        with anyio.move_on_after(window):
            while b"\n" not in self.buffer and not self.closed and len(self.buffer) <= MAX_FRAME:
                try:
                    self.buffer += await self.stdout.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                    self.closed = True
        *lines, self.buffer = self.buffer.split(b"\n")
        if len(self.buffer) > MAX_FRAME:
            lines.append(self.buffer)
            self.buffer = b""
        return lines


async def run(ctx: Context, report) -> None:
    target = ctx.target
    stderr: list[str] = []

    def keep_stderr(process) -> None:
        stderr.append((process.workdir / STDERR_LOG).read_text(encoding="utf-8", errors="replace"))

    seen: dict[str, list[bytes]] = {"message": [], "noise": [], "oversized": []}
    early: list[bytes] = []
    # after the first input, before the reply to it: non-protocol lines, and messages a server may not send yet
    late_noise: list[bytes] = []
    late_messages: list[dict] = []
    exited = forced = False
    tail = b""
    answered = False
    took_reply = 0.0
    gone_at = None  # what the server had received when it exited by itself: "any input", "stdin EOF"
    async with started_server(target.argv, prefix="course-audit-", fast=target.course_server, env=target.env,
                              cwd=target.cwd, on_stopped=keep_stderr) as process:
        ctx.processes += 1
        lines = _Lines(process.stdout)
        with anyio.move_on_after(ctx.budget) as scope:
            try:
                if target.course_server:  # an exit before it is ready: no answer, judged below
                    await wait_ready(process, ctx.budget, on_exit=_NotServing, on_timeout=_NotServing)
                early = await lines.read(QUIET)
                # stdout ended, or stdin no longer read, before any input: the exit (once reaped, within
                # the exit budget) is judged as one before any input, however late it is reaped
                if lines.closed and await process.wait_exit(ctx.exit_budget) or process.returncode is not None:
                    gone_at = "any input"
                    raise _NotServing
                try:
                    await process.stdin.send((json.dumps(INIT) + "\n").encode())
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    gone_at = "any input"
                    raise _NotServing from None
                sent = time.monotonic()
                # Past the request budget this probe keeps listening (up to its own budget, leaving
                # time to close stdin): a late reply is its own verdict, not a missing one.
                deadline = sent + max(ctx.request_timeout, scope.deadline - anyio.current_time() - LATE_MARGIN)
                while not answered and not lines.closed and time.monotonic() < deadline:
                    for line in await lines.read(deadline - time.monotonic()):
                        kind = classify(line)
                        seen[kind].append(line)
                        message = json.loads(line) if kind == "message" else {}
                        if not answered and kind == "noise":
                            late_noise.append(line)
                        elif not answered and message.get("method") not in EARLY_ALLOWED:
                            late_messages.append(message)
                        answered = answered or (message.get("id") == 1 and "method" not in message)
                took_reply = time.monotonic() - sent
                if answered:
                    await process.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
                    for line in await lines.read(0.2):
                        seen[classify(line)].append(line)
                if lines.closed:  # stdout ended before stdin EOF: so did the server, once its exit is reaped
                    await process.wait_exit(ctx.exit_budget)
                gone_at = "stdin EOF" if process.returncode is not None else None
                await process.stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, _NotServing):
                pass
        started = time.monotonic()
        exited = await process.wait_exit(ctx.exit_budget)
        took = time.monotonic() - started
        if exited:  # before any kill: what is still running of the server's group, or marked as its lab's
            ctx.outlived.extend(command_lines(proctree.lab_processes(process.pid, process.workdir, process.started)))
            tail += await read_rest(process.stdout, 0.5)
            tail = lines.buffer + tail
        else:
            forced = True
            process.signal_group(signal.SIGTERM)
    ctx.leftovers.extend(process.swept)
    code = process.returncode
    _before_input(report, early, late_noise, late_messages)
    ctx.noise.extend(line for line in early if classify(line) == "noise")
    ctx.noise.extend(seen["noise"])
    ctx.oversized.extend(MAX_FRAME for _ in seen["oversized"])
    if answered and took_reply > ctx.request_timeout:
        ctx.late = took_reply
        report.add("launch.late", "FAIL", LATE, LEGACY, f"the reply to initialize came {took_reply:.1f} s after it, "
                   f"past the {ctx.request_timeout:g} s request budget (a longer --request-timeout lets it be audited)")
    text = stderr[0] if stderr else ""
    logged = [ln for ln in text.splitlines() if ln.strip()]
    if not answered:
        said = f"; its stderr ends: {logged[-1].strip()[:80]}" if logged and code else ""
        report.add("launch.answer", "FAIL", "MUST (spec: lifecycle, initialization)", LEGACY, "no reply to initialize" +
                   (f"; the server exited with code {code}{_before(gone_at)}{said}" if code is not None and not forced
                    else ""))
    report.add("stderr", "INFO", STDERR, LEGACY, f"{len(logged)} line{'s' * (len(logged) != 1)}"
               + (f"; first: {logged[0].strip()[:60]}" if logged else ""))
    trailing = f"; {len(tail)} bytes on stdout after it" if tail.strip() else ""
    if forced:
        report.add("exit.eof", "WARN", EXIT, LEGACY, f"forced stop: still running {ctx.exit_budget:g} s after stdin "
                   f"EOF; stopped by {'SIGKILL' if process.forced == 'SIGKILL' else 'SIGTERM'} to its group "
                   f"(exit code {code}){trailing}")
    elif code != 0 or trailing or gone_at:
        report.add("exit.eof", "WARN", EXIT, LEGACY, f"exited with code {code}"
                   f"{_before(gone_at) or ' after stdin EOF'}{trailing}")
    else:
        report.add("exit.eof", "PASS", EXIT, LEGACY, f"exited 0 by itself {took:.1f} s after stdin EOF, "
                   "nothing more on stdout")


def _before(gone_at: str | None) -> str:
    return {"any input": " before any input", "stdin EOF": " before stdin EOF (while the handshake was under way)"
            }.get(gone_at, "")


def command_lines(pids) -> list[str]:
    """``"pid N: the command line"`` of each live process of ``pids`` (the audit's words for a survivor)."""
    out = []
    for pid in sorted(pids):
        try:
            out.append(f"pid {pid}: {' '.join(psutil.Process(pid).cmdline())[:80]}")
        except psutil.Error:
            continue
    return out


def not_checked(ctx: Context, report) -> None:
    """After a late first reply: the era lines the request budget cut short say what was not checked."""
    if ctx.late is None:
        return
    why = f"not checked: the first reply came after the {ctx.request_timeout:g} s request budget (launch.late)"
    for i, line in enumerate(report.lines):
        if line.check in ("era.handshake", "era.envelope") and line.detail.startswith(("reply_timeout:", "budget:")):
            report.lines[i] = replace(line, verdict="INFO", rule=LATE, detail=why)


def _before_input(report, early: list[bytes], late_noise: list[bytes], late_messages: list[dict]) -> None:
    early_noise = [line for line in early if classify(line) != "message"]
    if early_noise or late_noise:
        noise, when = (early_noise, "any input") if early_noise else (late_noise, "its reply to initialize")
        report.add("stdout.before-input", "FAIL", STDIO, LEGACY,
                   f"{len(noise)} non-protocol line(s) before {when}: {shown(noise[0])}")
    elif early:
        report.add("stdout.before-input", "WARN", BEFORE, LEGACY, f"{len(early)} message(s) before any input")
    elif late_messages:
        report.add("stdout.before-input", "WARN", BEFORE, LEGACY, f"{len(late_messages)} message(s) before its "
                   f"reply to initialize, first: {str(late_messages[0].get('method'))[:60]}")
    else:
        report.add("stdout.before-input", "PASS", STDIO, LEGACY, "nothing on stdout before any input")


def stdout_lines(ctx: Context, report) -> None:
    """The stdout lines of the whole audit: non-protocol lines and oversized frames, from every probe."""
    noise = ctx.noise
    report.add("stdout.noise", "FAIL" if noise else "PASS", STDIO, "all",
               f"{len(noise)} non-protocol line(s), first: {shown(noise[0])}" if noise else
               "every stdout line of every probe was JSON")
    big = ctx.oversized
    report.add("stdout.frames", "WARN" if big else "PASS", FRAMES, "all",
               f"a line past {big[0]} bytes" if big else f"every line within {MAX_FRAME // 2**20} MiB")


def shown(line: bytes) -> str:
    text = line[:50].decode("utf-8", "replace")
    return repr(text + ("…" if len(line) > 50 else ""))
