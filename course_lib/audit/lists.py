"""Every advertised list walked completely, with the walker's own rules (``CursorRules``), on the wire.

A page is parsed by the SDK's own result type (what a real client would accept); the walk's
verdict is the walker's: complete, or the ``CatalogError`` reason (repeated cursor, page or item
budget, duplicate identity, bad page, a cursor under a misspelled key). ``-32601`` on a list is
"not implemented", not a failure.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mcp_types as types
import pydantic

from course_lib.audit.session import Context, ProbeFailed, describe_error, error_of, probe
from course_lib.errors import CatalogError
from course_lib.protocol import METHOD_NOT_FOUND
from course_lib.walker import WIRE_LISTS, WIRE_METHODS, CursorRules

RESULTS = {"tools": (types.ListToolsResult, "tools"), "resources": (types.ListResourcesResult, "resources"),
           "templates": (types.ListResourceTemplatesResult, "resource_templates"),
           "prompts": (types.ListPromptsResult, "prompts")}
CAPABILITY = {"tools": "tools", "resources": "resources", "templates": "resources", "prompts": "prompts"}
MAX_PAGES, MAX_ITEMS = 2000, 100_000  # the audit's budgets: past them a walk is "page_budget" / "item_budget"
RULE = "MUST (spec: pagination)"


@dataclass
class Listing:
    """One list as the list probe walked it: its raw items and the cursors it issued, in order."""

    kind: str
    items: list[dict] = field(default_factory=list)
    cursors: list[str] = field(default_factory=list)
    complete: bool = False

    @property
    def paginates(self) -> bool:
        return bool(self.cursors)


def _misspelled(result: dict) -> str | None:
    for key in result:
        if key != "nextCursor" and key.replace("_", "").replace("-", "").lower() == "nextcursor":
            return key
    return None


async def walk_list(wire, kind: str, listing: Listing | None = None) -> tuple[Listing, str, str]:
    """Walk one list on ``wire`` into ``listing`` (what it holds is kept if the walk ends early):
    ``(listing, verdict, detail)``."""
    model, attr = RESULTS[kind]
    rules = CursorRules(kind, max_pages=MAX_PAGES, max_items=MAX_ITEMS)
    listing = Listing(kind) if listing is None else listing
    while True:
        try:
            params = rules.request_params()
        except CatalogError as exc:
            return listing, "FAIL", f"incomplete: {exc}"
        reply = await wire.request(WIRE_METHODS[kind], None if params is None else {"cursor": params.cursor})
        error = error_of(reply)
        if error is not None:
            if error.get("code") == METHOD_NOT_FOUND and rules.page == 1:
                return listing, "INFO", f"not implemented ({describe_error(error)})"
            if rules.page == 1:
                return listing, "FAIL", f"page 1 refused: {describe_error(error)}"
            return listing, "WARN", (f"incomplete: the server refused its own cursor on page {rules.page}: "
                                     f"{describe_error(error)}")
        result = reply["result"]
        try:
            page = model.model_validate(result, by_name=False)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return listing, "FAIL", f"page {rules.page} is not a valid {WIRE_METHODS[kind]} result: {where}: {first['msg']}"
        try:
            cursor = rules.accept(getattr(page, attr), page.next_cursor)
        except CatalogError as exc:
            if exc.reason == "cursor_repeated":
                return listing, "FAIL", (f"cursor_repeated: page {exc.details['page']} sent cursor "
                                         f"{exc.details['cursor']!r} again; the walk stopped")
            return listing, "FAIL", f"{exc.reason}: {exc}"
        listing.items.extend(result.get(WIRE_LISTS[kind][0]) or [])
        if cursor is None:
            key = _misspelled(result)
            if key is not None:
                return listing, "FAIL", (f"misspelled_cursor: page {len(rules.sizes)} sends {key!r} instead of "
                                         "'nextCursor': the catalog may be truncated")
            listing.complete = True
            pages = len(rules.sizes)
            return listing, "PASS", f"{len(rules.items)} {kind} in {pages} page{'s' * (pages != 1)}"
        listing.cursors.append(cursor)


def advertised(capabilities: dict) -> list[str]:
    return [kind for kind in RESULTS if isinstance(capabilities.get(CAPABILITY[kind]), dict)]


class Walk:
    """The list probe of ``era``: every advertised list walked on one session (the era probe's own,
    or a process of its own: ``run``); the listings are kept for the probes that follow."""

    def __init__(self, ctx: Context, era: str, report):
        self.era, self.report, self.listings = era, report, {}
        ctx.lists[era] = self.listings
        self.kinds = advertised(ctx.capabilities.get(era, {}))
        self.current = self.kinds[0] if self.kinds else None
        if not self.kinds:
            report.add("list.walk", "INFO", RULE, era, "the server advertises no list (tools, resources, prompts)")

    async def on(self, wire) -> None:
        for self.current in self.kinds:
            self.listings[self.current] = Listing(self.current)
            _, verdict, detail = await walk_list(wire, self.current, self.listings[self.current])
            self.report.add("list.walk", verdict, RULE, self.era, detail, self.current)

    def failed(self, exc: ProbeFailed) -> None:
        """The session ended during the walk: the list being walked fails."""
        self.report.add("list.walk", "FAIL", RULE, self.era, f"{exc.check}: {exc.message}", self.current)


async def run(ctx: Context, era: str, report) -> None:
    """The list probe of ``era`` on a process of its own."""
    walk = Walk(ctx, era, report)
    if not walk.kinds:
        return
    try:
        async with probe(ctx, era) as wire:
            await walk.on(wire)
    except ProbeFailed as exc:
        walk.failed(exc)
