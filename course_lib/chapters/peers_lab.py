"""Chapter 07's back end: the MCP clients and servers people use, measured against the course's servers.

The peers, Node and their pins are in ``peers_env``; one peer run on a course server behind the
wire tap, and its table cell, in ``peer_runs``. This module asks the chapter's questions of every
peer (and of the course's walker), draws the tables, and turns the walker on the reference server.
The names of both modules stay importable from here, as the chapter uses them.

    python -m course_lib.chapters.peers_lab install   # npm ci into fixtures/peers and fixtures/slides (set-up only)
    python -m course_lib.chapters.peers_lab check     # the pinned versions, or how to install them
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from course_lib.chapters.peer_runs import (CAP, RUN_TIMEOUT, TAP, WALKER_REASONS, Run, group_run,  # noqa: F401
                                           parse_output, reason, run, server_argv, tap_frames, tap_verdict,
                                           tapped_argv, verdict)
from course_lib.chapters.peers_env import (CLASSROOM_DIR, CLIENTS_DIR, ERA_NAMES, EVERYTHING, GUARDED,  # noqa: F401
                                           INSTALL, MODULES, NODE_WHEEL, PEERS, PEERS_DIR, SLIDES_DIR, Peer,
                                           PeersMissing, check, everything_argv, install, installed, node,
                                           node_home, npm_argv, pins)
from course_lib.protocol import AUTO, BOTH_ERAS, LEGACY, MODERN_VERSION

LIMIT = 2           # peer runs at once


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

    return set_up_main(argv, install, check, PeersMissing, "course_lib.chapters.peers_lab")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
