"""FastMCP's ``Client`` against the course's catalog modes, behind the same tap as chapter 07's peers.

The client is ``real_peers/fastmcp_client.py``, run in ``.venv-servers`` (FastMCP is pinned there):
it calls ``client.list_tools()`` (``list_resources()`` for the atlas) once, as a host built on it
does, and prints what it returned and what FastMCP logged. The tap in front of the course server
counts the list requests; its cap here (``CAP``) is above FastMCP's own page limit of 250, so the
client's limit is what ends an endless catalog, not the tap.
"""
from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from course_lib.chapters import peer_runs
from course_lib.chapters.peers_lab import QUESTIONS
from course_lib.chapters.servers_env import SERVERS_ENV
from course_lib.paths import PACKAGE

CLIENT = PACKAGE / "chapters" / "real_peers" / "fastmcp_client.py"
CAP = 300
# No phone-home: FastMCP's banner would ask the package registry for a newer version.
QUIET = {"FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false"}
COLUMNS = [c for _, cs in QUESTIONS.values() for c in cs]


def label() -> str:
    return f"fastmcp {SERVERS_ENV.pins()['fastmcp']} Client"


def _tapped(log: Path, column: str) -> dict:
    server, mode = ("atlas", None) if column == "atlas" else ("catalog", column)
    return {"kind": "resources" if server == "atlas" else "tools",
            "server": peer_runs.tapped_argv(log, server, mode, cap=CAP)}


async def measure(columns: list[str] = COLUMNS) -> dict[str, peer_runs.Run]:
    """FastMCP's ``Client`` lists each column (a catalog mode, or the atlas) through its own tap:
    one client process (FastMCP is imported once), one connection and server per column."""
    with tempfile.TemporaryDirectory(prefix="course-fastmcp-") as tmp:
        logs = [Path(tmp) / f"tap-{n}.jsonl" for n in range(len(columns))]
        jobs = [_tapped(log, column) for log, column in zip(logs, columns)]
        out, err, timed_out = await peer_runs.group_run([str(SERVERS_ENV.python()), str(CLIENT)],
                                                        Path(tmp), peer_runs.RUN_TIMEOUT, QUIET,
                                                        stdin=json.dumps(jobs).encode())
        frames = [peer_runs.tap_frames(log) for log in logs]
    try:
        answers = json.loads(out[out.find("["):])
    except ValueError:
        line = "timed out" if timed_out else (err.strip().splitlines() or ["no output"])[-1]
        answers = [{"error": line}] * len(columns)
    return {column: _run(answer, tap, job["kind"])
            for column, answer, tap, job in zip(columns, answers, frames, jobs)}


def _run(answer: dict, frames: list[dict], kind: str) -> peer_runs.Run:
    items, error, _ = peer_runs.parse_output(json.dumps(answer), "", kind)
    return peer_runs.Run(items=items, error=error, reason=None if error is None else peer_runs.reason(error),
                         lists=sum(str(f.get("method")).endswith("/list") for f in frames),
                         cut=any("cut" in f for f in frames), timed_out=error == "timed out",
                         versions=tuple(sorted({f["version"] for f in frames if f.get("version")})),
                         warnings=tuple(answer.get("warnings", ())), frames=frames)


def cell(run: peer_runs.Run) -> str:
    """The peers' verdict, with ``+warning`` where FastMCP only logged what went wrong."""
    return peer_runs.verdict(run) + (" +warning" if run.warnings and run.error is None else "")


# -- the three questions, across the Python clients -----------------------------------------

SUMMARY = ("reads page 2?", "a cycle?", "duplicates?")


def answers(cells: dict[str, str]) -> list[str]:
    """What one client's cells (by column: ``normal``, ``cycle``, ``duplicate``) answer to the three
    questions, read off the measured cells."""
    normal, cycle, duplicate = cells["normal"], cells["cycle"], cells["duplicate"]
    if cycle.endswith("(1)"):
        stops = "never asks for page 2"
    elif cycle.startswith("cut at"):
        stops = "never stops (cut)"
    elif cycle.startswith("refused"):
        stops = "refuses: " + cycle.removeprefix("refused ")
    elif "+warning" in cycle:
        stops = "stops, warning logged"
    else:
        stops = "stops quietly"
    if "alpha,alpha" in duplicate:
        kept = "keeps both"
    elif duplicate.startswith("refused"):
        kept = "refuses: " + duplicate.removeprefix("refused ")
    else:
        kept = "never sees page 3"
    return ["yes" if "beta" in normal else "no", stops, kept]


def summary_table(clients: dict[str, dict[str, str]]):
    """One row per client: who reads page 2, what it does with a cycle, whether it keeps duplicates;
    each answer read from the client's measured cells (the tables above)."""
    from course_lib.display import Table

    return Table(["client", *SUMMARY], [[name, *answers(cells)] for name, cells in clients.items()],
                 title="Python clients on the course's catalog: the three questions")
