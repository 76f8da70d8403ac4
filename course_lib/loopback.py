"""A course server on Streamable HTTP, bound to 127.0.0.1, for the labs about HTTP-only features.

``async with serve_http("modern") as site:`` starts the server process through the same launcher
pieces as ``connect`` (argv, explicit environment, stderr to a file, group-wide stop), waits
until it listens on an OS-chosen loopback port, and yields ``site.url``. The server writes the
routing headers of every POST it receives; ``site.headers()`` reads them back. When the block
ends the process is stopped (its stdin closes, then SIGTERM/SIGKILL if needed), its process group
is killed and whatever escaped the group is swept (``site.swept``), so nothing outlives the cell.
"""
from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import anyio

from course_lib.errors import LaunchError
from course_lib._runtime.process import STDERR_LOG, ServerProcess, course_server_argv, started_server

READY_BUDGET = 20.0


class Site:
    def __init__(self, process: ServerProcess, workdir: Path, port: int):
        self.pid = process.pid
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self._workdir = workdir
        self._headers: list[dict] | None = None
        self.returncode: int | None = None
        self.swept: list[int] = []  # leftover processes of the server that had to be killed

    async def post(self, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
        """One hand-made POST (for headers the SDK client would never send): status and JSON body."""
        import httpx2  # the SDK's own HTTP client

        base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx2.AsyncClient(timeout=10.0) as http:
            response = await http.post(self.url, json=body, headers={**base, **headers})
        return response.status_code, response.json()

    def headers(self) -> list[dict]:
        """One dict per POST the server received: the body's method and the routing headers."""
        if self._headers is not None:
            return self._headers
        path = self._workdir / "headers.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@asynccontextmanager
async def serve_http(server: str, *, mode: str | None = None, args: tuple[str, ...] = ()) -> AsyncIterator[Site]:
    site: Site | None = None

    def stopped(process: ServerProcess) -> None:  # before the lab directory goes
        if site is not None:
            site._headers = site.headers()
            site.returncode = process.returncode
            site.swept = list(process.swept)

    argv = course_server_argv(server, mode, None, ("--http", *args))
    async with started_server(argv, prefix="course-http-", fast=True, on_stopped=stopped) as process:
        workdir = process.workdir
        port_file = workdir / "http.json"
        with anyio.move_on_after(READY_BUDGET):
            while not port_file.exists() and process.returncode is None:
                await anyio.sleep(0.02)
        if not port_file.exists():
            tail = (workdir / STDERR_LOG).read_text(errors="replace").strip().splitlines()[-1:]
            raise LaunchError(f"the HTTP server did not start listening{': ' + tail[0] if tail else ''}")
        site = Site(process, workdir, json.loads(port_file.read_text())["port"])
        yield site
