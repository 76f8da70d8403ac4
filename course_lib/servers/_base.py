"""What every course server shares: argument parsing, the stdio loop, the request audit."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


def parser(name: str, modes: tuple[str, ...] | None = None, *, fixture: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m course_lib.servers {name}")
    if modes:
        p.add_argument("--mode", default=modes[0], choices=modes)
    if fixture:
        p.add_argument("--fixture", required=True, type=Path)
    return p


def lab_file(name: str) -> Path | None:
    """A file in the lab directory ``connect`` gave this server, or None outside a lab."""
    lab_dir = os.environ.get("COURSE_LAB_DIR")
    return Path(lab_dir) / name if lab_dir else None


class Audit:
    """Server-side request trace, rewritten after every request and closed in a finalizer.

    Written to ``audit.json`` in the lab directory, so a lab can compare it exactly with a
    fixed expectation after the server has exited.
    """

    def __init__(self, name: str = "audit.json"):
        self.path = lab_file(name)
        self.data = {"requests": [], "closed": False}
        self._flush()

    def record(self, **entry) -> None:
        self.data["requests"].append(entry)
        self._flush()

    def close(self) -> None:
        self.data["closed"] = True
        self._flush()

    def _flush(self) -> None:
        if self.path is not None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1), encoding="utf-8")
            tmp.replace(self.path)


async def _no_templates(ctx, params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


def serve(server: Server, *, audit: Audit | None = None) -> int:
    """Serve ``server`` on stdin/stdout until stdin closes (both protocol eras).

    A server that lists resources but has no URI templates still answers
    ``resources/templates/list`` (with an empty list), as a client walking resources expects.
    """
    if server.get_request_handler("resources/list") and not server.get_request_handler("resources/templates/list"):
        server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, _no_templates)

    async def main() -> None:
        async with stdio_server() as (read, write):
            ready = lab_file("ready")
            if ready is not None:
                ready.touch()  # tells connect() the SDK is imported and the loop is about to serve
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        if audit is not None:
            audit.close()
    return 0
