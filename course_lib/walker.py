"""The bounded walker: one complete catalog, or a typed error. Never a partial result."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pydantic

from course_lib.errors import CatalogError

# kind -> (ClientSession method, attribute holding the page's items, identity of an item)
KINDS = {
    "tools": ("list_tools", "tools", "name"),
    "resources": ("list_resources", "resources", "uri"),
    "templates": ("list_resource_templates", "resource_templates", "uri_template"),
    "prompts": ("list_prompts", "prompts", "name"),
}
WIRE_METHODS = {"tools": "tools/list", "resources": "resources/list",
                "templates": "resources/templates/list", "prompts": "prompts/list"}


def _validation_summary(exc: pydantic.ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _misspelled_cursor(wire, start: int, method: str) -> str | None:
    """A result key of the raw page that looks like ``nextCursor`` but is not it.

    The SDK parses results by their camelCase names and drops unknown keys, so a page that
    says ``next_cursor`` reads as "no cursor": a last page. Only the raw frame shows it.
    """
    for frame in wire.frames[start:]:
        if frame.direction != "→" or frame.method != method:
            continue
        reply = wire.response_to(frame)
        result = (reply.message or {}).get("result") if reply is not None else None
        if isinstance(result, dict) and "nextCursor" not in result:
            for key in result:
                if key.replace("_", "").replace("-", "").lower() == "nextcursor":
                    return key
    return None


@dataclass(frozen=True)
class Catalog:
    """A complete walk: the items in server order and the size of every page."""

    kind: str
    items: tuple
    page_sizes: tuple[int, ...]

    @property
    def names(self) -> list[str]:
        return [getattr(item, KINDS[self.kind][2]) for item in self.items]

    @property
    def pages(self) -> int:
        return len(self.page_sizes)


def _check_limit(name: str, value: Any, minimum: int) -> None:
    # bool is an int subclass; True must not pass as a budget of 1.
    if type(value) is not int or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def session_of(source: Any):
    """Accept a Lab, an ``mcp.Client`` or a ``ClientSession`` and return the session."""
    from mcp import Client

    from course_lib.labs import Lab

    if isinstance(source, (Lab, Client)):
        return source.session
    return source


async def walk(source: Any, kind: str = "tools", *, max_pages: int = 32, max_items: int = 10_000) -> Catalog:
    """Read every page of a list method and return the whole catalog.

    The cursor goes back verbatim (``""`` is a cursor, not the end); the walk ends only when
    ``next_cursor is None``. A repeated cursor, too many pages, too many items or a duplicate
    identity raises ``CatalogError`` with ``reason`` set; nothing read so far is returned.
    A page the SDK cannot validate is ``bad_page``. Given a Lab, the walker also reads each
    last page's raw frame: a cursor under a misspelled key (``next_cursor``) is
    ``misspelled_cursor``, never a silently truncated catalog.
    Invalid limits are rejected before any request is sent.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    _check_limit("max_pages", max_pages, 1)
    _check_limit("max_items", max_items, 0)
    method, field, identity = KINDS[kind]
    list_page = getattr(session_of(source), method)
    wire = getattr(source, "wire", None)  # a Lab keeps the raw frames; a bare session does not

    items: list = []
    seen_ids: set = set()
    seen_cursors: set[str] = set()
    sizes: list[int] = []
    cursor: str | None = None
    for _ in range(max_pages):
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        start = len(wire) if wire is not None else 0
        try:
            page = await list_page(params=params)
        except pydantic.ValidationError as exc:
            raise CatalogError("bad_page", f"page {len(sizes) + 1} is not a valid {WIRE_METHODS[kind]} result: "
                               f"{_validation_summary(exc)}", page=len(sizes) + 1) from None
        entries = getattr(page, field)
        sizes.append(len(entries))
        if len(items) + len(entries) > max_items:  # before looking at any entry of a huge page
            raise CatalogError("item_budget", f"more than {max_items} {kind} after {len(sizes)} pages",
                               limit=max_items)
        for entry in entries:
            key = getattr(entry, identity)
            if key in seen_ids:
                raise CatalogError("duplicate_name", f"{key!r} appears twice (page {len(sizes)})",
                                   name=key, page=len(sizes))
            seen_ids.add(key)
            items.append(entry)
        cursor = page.next_cursor
        if cursor is None:
            key = _misspelled_cursor(wire, start, WIRE_METHODS[kind]) if wire is not None else None
            if key is not None:
                raise CatalogError("misspelled_cursor", f"page {len(sizes)} sends {key!r} instead of 'nextCursor': "
                                   "the catalog may be truncated", page=len(sizes), key=key)
            return Catalog(kind, tuple(items), tuple(sizes))
        if cursor in seen_cursors:
            raise CatalogError("cursor_repeated", f"the server sent a cursor it had already sent (page {len(sizes)})",
                               page=len(sizes))
        seen_cursors.add(cursor)
    raise CatalogError("page_budget", f"no last page within {max_pages} pages", limit=max_pages)
