"""One peer run: an outside client started as a process group on a course server behind the wire
tap, what it did (``Run``), and that in one table cell (``verdict``).

Every peer run is a real process group: the peer, the wire tap it starts as its "server"
(``peer_tap.py``) and the course server behind the tap. A run has a time budget and the whole
group is killed when it ends, finished or not.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from course_lib.chapters.peers_env import CLIENTS_DIR, Peer, node_home
from course_lib.paths import PACKAGE
from course_lib.protocol import INVALID_PARAMS

TAP = PACKAGE / "chapters" / "peer_tap.py"
CAP = 100           # list requests a tap forwards before it cuts a client that never stops
RUN_TIMEOUT = 60.0  # seconds for one peer run, start to exit


@dataclass
class Run:
    """What one peer did against one course server, from its output and the tap's log."""
    items: tuple[str, ...] | None = None
    error: str | None = None
    reason: str | None = None    # the error in a word (the walker's own reason, or ``reason(error)``)
    cursor_shown: bool = False   # the peer printed a nextCursor: the listing says it is partial
    lists: int = 0               # list requests the server received
    servers: int = 0             # server processes the peer started (a probe starts one more)
    versions: tuple[str, ...] = ()
    cut: bool = False
    timed_out: bool = False
    warnings: tuple[str, ...] = ()  # what the client only logged (FastMCP's Client)
    frames: list = field(default_factory=list, repr=False)


def parse_output(stdout: str, stderr: str, kind: str) -> tuple:
    """What a client printed, read as ``(items, error, whether it showed a next cursor)``."""
    text = stdout.strip()
    start = text.find("{")
    try:
        out = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        out = None
    if isinstance(out, dict) and isinstance(out.get(kind), list):  # an Inspector CLI's result
        return tuple(i["name"] for i in out[kind]), None, out.get("nextCursor") is not None
    if isinstance(out, dict) and ("items" in out or "error" in out) and "jsonrpc" not in out:
        if out.get("error") is not None:
            error = out["error"]
            return None, error if isinstance(error, str) else json.dumps(error), False
        return tuple(out["items"]), None, False
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    return None, (lines[-1] if lines else "no output"), False


async def group_run(argv: list[str], cwd: Path, timeout: float, extra_env: dict[str, str] | None = None,
                    stdin: bytes | None = None) -> tuple[str, str, bool]:
    """Run a peer to its exit (or its budget) as a lab process, ``stdin`` as its input (else none):
    the peer, its taps and the servers behind them share its group and its lab directory, and go
    with it: (stdout, stderr, timed out)."""
    from course_lib._runtime.process import STDERR_LOG, started_server

    env = {"PATH": f"{node_home() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", **(extra_env or {})}
    out, err = bytearray(), ""
    async with started_server(argv, prefix="course-peer-run-", env=env, cwd=cwd) as process:
        if stdin:
            await process.stdin.send(stdin)
        await process.stdin.aclose()
        with anyio.move_on_after(timeout) as budget:
            async for chunk in process.stdout:
                out.extend(chunk)
            await process.wait_exit(timeout)
        if budget.cancelled_caught:
            return "", "", True
        err = (process.workdir / STDERR_LOG).read_text(errors="replace")
    return out.decode(errors="replace"), err, False


def server_argv(server: str, mode: str | None = None, fixture: str | os.PathLike | None = None) -> list[str]:
    from course_lib._runtime.process import course_server_argv

    return course_server_argv(server, mode, fixture)


def tapped_argv(log: Path, server: str, mode: str | None = None,
                fixture: str | os.PathLike | None = None, cap: int = CAP) -> list[str]:
    """The command line a client is given: the course server behind the tap, which logs to ``log``
    (and forks it at this process's fork server when there is one)."""
    from course_lib._runtime.process import fork_address

    where = fork_address()
    return [sys.executable, str(TAP), str(log), str(cap), *(["--fork", where] if where else []),
            *server_argv(server, mode, fixture)]


def tap_frames(log: Path) -> list[dict]:
    """The client frames (and a cut, if any) the tap logged."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def tap_verdict(log: Path, items: list[str], error: Exception | None) -> str:
    """A table cell for a client run in this process (the Python SDK): what it listed or raised,
    and the list requests the tap saw."""
    frames = tap_frames(log)
    reason = None
    if error is not None:  # an MCP error by its code, anything else by its type
        reason = str(error.code) if hasattr(error, "code") else type(error).__name__
    return verdict(Run(items=tuple(items), error=None if error is None else str(error), reason=reason,
                       lists=sum(str(f.get("method")).endswith("/list") for f in frames),
                       cut=any("cut" in f for f in frames)))


async def run(peer: Peer, server: str = "catalog", mode: str | None = None, era: str = "legacy",
              kind: str = "tools", timeout: float = RUN_TIMEOUT,
              fixture: str | os.PathLike | None = None) -> Run:
    """Start ``peer`` on a course server behind a tap; return what it listed and what the server saw."""
    with tempfile.TemporaryDirectory(prefix="course-peer-") as tmp:
        log = Path(tmp) / "tap.jsonl"
        out, err, timed_out = await group_run(peer.argv(kind, era, tapped_argv(log, server, mode, fixture)),
                                               CLIENTS_DIR, timeout)
        frames = tap_frames(log)
    items, error, shown = parse_output(out, err, kind)
    lists = [f for f in frames if str(f.get("method")).endswith("/list")]
    error = "timed out" if timed_out else error
    return Run(items=None if timed_out else items, error=error,
               reason=None if error is None else reason(error),
               cursor_shown=shown, lists=len(lists), servers=len({f["tap"] for f in frames}),
               versions=tuple(sorted({f["version"] for f in frames if f.get("version")})),
               cut=any("cut" in f for f in frames), timed_out=timed_out, frames=frames)


WALKER_REASONS = ("cursor_repeated", "page_budget", "duplicate_name")


def reason(message: str) -> str:
    """A peer's error message, in a word."""
    if message.split(":", 1)[0] in WALKER_REASONS:
        return message.split(":", 1)[0]
    if "listMaxPages" in message or "auto-pagination limit" in message:
        return "page cap"
    if str(INVALID_PARAMS) in message or "ursor" in message:
        return str(INVALID_PARAMS)
    if "timed out" in message:
        return "timeout"
    return "error"


def verdict(run: Run) -> str:
    """One table cell: what the peer made of the server, and how many list requests it sent."""
    if run.timed_out:
        return f"no answer in {RUN_TIMEOUT:.0f} s"
    if run.cut:
        return f"cut at {CAP} requests"
    if run.error is not None:
        return f"refused {run.reason} ({run.lists})"
    items = run.items or ()
    names = ",".join(items)
    if len(names) > 16:
        names = f"{len(items)} items"
    return f"{names or 'nothing'} ({run.lists})" + (" +cursor" if run.cursor_shown else "")
