"""What every course server shares: argument parsing, the stdio loop, the request audit."""
from __future__ import annotations

import argparse
import json
import os
import secrets
from pathlib import Path
from typing import Sequence

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.stdio import stdio_server


def parser(name: str, modes: tuple[str, ...] | None = None, *, fixture: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m course_lib.servers {name}")
    if modes:
        p.add_argument("--mode", default=modes[0], choices=modes)
    if fixture:
        p.add_argument("--fixture", required=True, type=Path)
    return p


def page_layout(text: str) -> tuple[int, ...]:
    """``"1,0,2"`` -> ``(1, 0, 2)``: the argument type of ``--pages``."""
    try:
        layout = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--pages takes page sizes such as 1,0,2, got {text!r}") from None
    if any(size < 0 for size in layout):
        raise argparse.ArgumentTypeError(f"a page size cannot be negative: {text!r}")
    return layout


def add_pages_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pages", type=page_layout, default=None, metavar="SIZES",
                   help="page the resource, template and prompt lists: exactly len(SIZES) pages, "
                        "each of its size, the last one holding the rest (default: one page)")


class Pager:
    """One list method's pages, with the cursor rules of the catalog server.

    ``layout`` ``(1, 0, 2)`` cuts any list into exactly three pages: 1 item, 0 items, and the
    rest; ``None`` serves the whole list as one page. A cursor is an opaque random token that
    this pager issued for a page; the same page always hands out the same next cursor. A cursor
    it never issued (made up, from another list, from another process) is refused with -32602.
    The lists paged here never change while the server runs, so no cursor ever expires (the
    catalog server, whose tools do change, binds its cursors to a generation as well).
    """

    def __init__(self, layout: Sequence[int] | None = None):
        self.layout = tuple(layout) if layout else (None,)
        self._token_of: dict[int, str] = {}
        self._index_of: dict[str, int] = {}

    def _cursor(self, index: int) -> str:
        if index not in self._token_of:
            self._token_of[index] = token = secrets.token_urlsafe(12)
            self._index_of[token] = index
        return self._token_of[index]

    def _index(self, cursor: str) -> int:
        if cursor not in self._index_of:
            raise MCPError(types.INVALID_PARAMS, "Invalid cursor: not issued by this server process for this list",
                           {"reason": "unknown"})
        return self._index_of[cursor]

    def page(self, items: Sequence, params: types.PaginatedRequestParams | None) -> tuple[list, str | None]:
        """The items of the page ``params.cursor`` names (the first without one) and the next cursor."""
        cursor = None if params is None else params.cursor
        index = 0 if cursor is None else self._index(cursor)
        start = sum(self.layout[:index])
        if index == len(self.layout) - 1:
            return list(items[start:]), None
        return list(items[start:start + self.layout[index]]), self._cursor(index + 1)


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


def serve(server: Server, *, audit: Audit | None = None, pages: Sequence[int] | None = None) -> int:
    """Serve ``server`` on stdin/stdout until stdin closes (both protocol eras).

    A server that lists resources but has no URI templates still answers
    ``resources/templates/list`` (an empty list, cut into the ``pages`` layout like its other
    lists), as a client walking resources expects.
    """
    if server.get_request_handler("resources/list") and not server.get_request_handler("resources/templates/list"):
        no_templates = Pager(pages)

        async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
            items, next_cursor = no_templates.page([], params)
            return types.ListResourceTemplatesResult(resource_templates=items, next_cursor=next_cursor)

        server.add_request_handler("resources/templates/list", types.PaginatedRequestParams,
                                   on_list_resource_templates)

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
