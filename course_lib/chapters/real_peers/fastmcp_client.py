"""FastMCP's ``Client`` lists a server, as a host built on it does: ``client.list_tools()``.

Runs in ``.venv-servers``. Reads a JSON list of jobs on stdin, ``{"kind": "tools"|"resources",
"server": ARGV}``, runs them side by side (one client and one server each; FastMCP is imported
once), and prints one JSON list: per job ``{"items": [...], "warnings": [...]}`` or
``{"error": "...", "warnings": [...]}``. The warnings are what FastMCP logged for that client, its
only signal of a repeating cursor.

    echo '[{"kind": "tools", "server": ["python", "server.py"]}]' | python fastmcp_client.py
"""
import asyncio
import json
import logging
import os
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


class _Kept(logging.Filter):
    """Keeps the warnings FastMCP logs; each names its client (``[job-N] ...``)."""

    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record):
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())
        return False  # nothing reaches stderr

    def of(self, name: str) -> list[str]:
        return [m for m in self.messages if m.startswith(f"[{name}]")]


async def one(job: dict, n: int, kept: _Kept) -> dict:
    server = job["server"]
    transport = StdioTransport(server[0], server[1:], env=dict(os.environ), keep_alive=False)
    name = f"job-{n}"
    try:
        async with Client(transport, name=name) as client:
            listing = client.list_resources if job["kind"] == "resources" else client.list_tools
            items = [item.name for item in await listing()]
        return {"items": items, "warnings": kept.of(name)}
    except Exception as exc:  # the client's own error, as the host would see it
        return {"error": f"{type(exc).__name__}: {exc}", "warnings": kept.of(name)}


async def main(jobs: list[dict]) -> list[dict]:
    kept = _Kept()
    for handler in logging.getLogger("fastmcp").handlers or [logging.getLogger("fastmcp")]:
        handler.addFilter(kept)
    return await asyncio.gather(*(one(job, n, kept) for n, job in enumerate(jobs)))


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.stdin.read())))))
