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
# The same lists as JSON on the wire (camelCase): the result's list key and each item's identity key.
WIRE_LISTS = {"tools": ("tools", "name"), "resources": ("resources", "uri"),
              "templates": ("resourceTemplates", "uriTemplate"), "prompts": ("prompts", "name")}


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


class CursorRules:
    """The walker's rules, one page at a time and without any I/O.

    ``request_params()`` gives the parameters of the next request (the cursor goes back
    verbatim: ``""`` is a cursor, not the end) or refuses it past the page budget; ``accept(entries,
    next_cursor)`` takes one page and returns the cursor to send next, or None once the catalog
    is complete. A page over the item budget, a duplicate identity or a cursor the server had
    already sent raises ``CatalogError``. ``walk`` and the page stepper both follow these rules.
    """

    def __init__(self, kind: str = "tools", *, max_pages: int = 32, max_items: int = 10_000):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        _check_limit("max_pages", max_pages, 1)
        _check_limit("max_items", max_items, 0)
        self.kind, self.identity = kind, KINDS[kind][2]
        self.max_pages, self.max_items = max_pages, max_items
        self.items: list = []
        self.sizes: list[int] = []
        self.seen_ids: set = set()
        self.seen_cursors: set[str] = set()
        self.cursor: str | None = None  # the cursor the next request sends
        self.complete = False

    @property
    def page(self) -> int:
        """The number of the page the next request asks for (1 for the first)."""
        return len(self.sizes) + 1

    def request_params(self) -> types.PaginatedRequestParams | None:
        if self.complete:
            raise RuntimeError("the catalog is complete: there is no next page")
        if len(self.sizes) >= self.max_pages:
            raise CatalogError("page_budget", f"no last page within {self.max_pages} pages", limit=self.max_pages)
        return None if self.cursor is None else types.PaginatedRequestParams(cursor=self.cursor)

    def accept(self, entries, next_cursor: str | None) -> str | None:
        sizes, items, seen_ids, identity = self.sizes, self.items, self.seen_ids, self.identity
        sizes.append(len(entries))
        if len(items) + len(entries) > self.max_items:  # before looking at any entry of a huge page
            raise CatalogError("item_budget", f"more than {self.max_items} {self.kind} after {len(sizes)} pages",
                               limit=self.max_items)
        for entry in entries:
            key = getattr(entry, identity)
            if key in seen_ids:
                raise CatalogError("duplicate_name", f"{key!r} appears twice (page {len(sizes)})",
                                   name=key, page=len(sizes))
            seen_ids.add(key)
            items.append(entry)
        if next_cursor is None:
            self.complete = True
            return None
        if next_cursor in self.seen_cursors:
            raise CatalogError("cursor_repeated", f"the server sent a cursor it had already sent (page {len(sizes)})",
                               page=len(sizes), cursor=next_cursor)
        self.seen_cursors.add(next_cursor)
        self.cursor = next_cursor
        return next_cursor


def session_of(source: Any):
    """Accept a Lab, an ``mcp.Client`` or a ``ClientSession`` and return the session."""
    from mcp import Client

    from course_lib.lab_state import Lab

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
    rules = CursorRules(kind, max_pages=max_pages, max_items=max_items)
    method, field, _ = KINDS[kind]
    list_page = getattr(session_of(source), method)
    wire = getattr(source, "wire", None)  # a Lab keeps the raw frames; a bare session does not
    while True:
        params = rules.request_params()
        start = len(wire) if wire is not None else 0
        try:
            page = await list_page(params=params)
        except pydantic.ValidationError as exc:
            raise CatalogError("bad_page", f"page {rules.page} is not a valid {WIRE_METHODS[kind]} result: "
                               f"{_validation_summary(exc)}", page=rules.page) from None
        if rules.accept(getattr(page, field), page.next_cursor) is None:
            key = _misspelled_cursor(wire, start, WIRE_METHODS[kind]) if wire is not None else None
            if key is not None:
                raise CatalogError("misspelled_cursor", f"page {len(rules.sizes)} sends {key!r} instead of "
                                   "'nextCursor': the catalog may be truncated", page=len(rules.sizes), key=key)
            return Catalog(kind, tuple(rules.items), tuple(rules.sizes))
