"""The snapshot server: two revisions of two short documents, a manifest, pinned URIs, a review prompt.

Resources
  ``project://atlas/manifest``          JSON ``{"revision": ..., "uris": [...]}`` for the current revision
  ``project://atlas/<revision>/<doc>``  pinned: always that revision's text, or -31001 (the course's own code) once it is gone
  ``project://atlas/latest/<doc>``      whatever the current revision is at the moment of the read
Prompt
  ``review-snapshot`` with exactly one argument ``revision``: the instruction and the documents of
  that revision as embedded resources.

Each revision is internally consistent (r1: 300 seconds everywhere; r2: immediately everywhere).
Documents are never edited in place: only the ``current`` pointer moves and the ``retained`` set
shrinks, and only at fixed request boundaries named in ``SCENARIOS`` (no clocks, no sleeps).

``--fault`` turns the server into one of the known-wrong variants used as negative controls
(``FAULTS``: the chapter's; ``READER_FAULTS``: one rule of the bundle reader each);
``--ttl-ms`` adds a ``resources/read`` cache hint (honoured by 2026-07-28 clients only).
``--switch-after METHOD=TARGET`` moves the scenario's switch to another request boundary (for
instance ``resources/read=project://atlas/r1/requirements``, between two pinned reads) and
``--keep-r1`` makes it publish r2 without retiring r1 (a change rather than an expiry).
``--pages 1,0,2`` pages ``resources/list``, ``resources/templates/list`` (empty) and
``prompts/list`` with the rules of ``_base.Pager``; without it each list is one page.
"""
from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass

import mcp_types as types
from mcp import MCPError
from mcp.server import CacheHint, Server

from course_lib.protocol import SNAPSHOT_UNAVAILABLE
from course_lib.uris import missing
from course_lib.servers._base import Pager, add_pages_option, serve

BASE = "project://atlas/"
MANIFEST = BASE + "manifest"
UNAVAILABLE_MESSAGE = "Snapshot unavailable; reacquire the whole bundle"
PROMPT = "review-snapshot"
PINNED = re.compile(re.escape(BASE) + r"r[0-9]+/[a-z]+")

REVISIONS = {
    "r1": {"requirements": "R2: cancellation visible within 300 seconds.\n",
           "design": "D3: availability cache refreshes every 300 seconds.\n"},
    "r2": {"requirements": "R2: cancellation visible immediately.\n",
           "design": "D3: cancellation invalidates availability cache immediately.\n"},
}


@dataclass(frozen=True)
class Switch:
    """After the first request matching (method, target) is answered: publish r2, maybe retire r1."""

    method: str
    target: str
    retire_r1: bool


SCENARIOS = {
    # An editor publishes r2 while a reader walks the latest/ URIs.
    "mixed": Switch("resources/read", BASE + "latest/requirements", retire_r1=False),
    # r1 stops being retained right after the first manifest has named it.
    "expired": Switch("resources/read", MANIFEST, retire_r1=True),
    # r1 stops being retained right after its complete review prompt was served.
    "retired": Switch("prompts/get", "r1", retire_r1=True),
}

FAULTS = (
    "none",
    "expired-resource-fallback",     # an expired pinned URI silently answers with the current text
    "expired-prompt-fallback",       # a prompt for an expired revision silently embeds the current one
    "mixed-pinned-body",             # project://atlas/r1/design answers with the r2 body
    "incomplete-recovery-manifest",  # every manifest after r1's omits its last document
    "recovery-unavailable",          # every manifest after r1's names a revision dropped right after that read
)
# Wrong servers that each break exactly one rule of the bundle reader (``course_lib.bundles``).
READER_FAULTS = (
    "manifest-extra-key",            # the manifest carries a key besides revision and uris
    "manifest-stuck",                # the manifest names r1 even after r1 was dropped
    "pinned-wrong-mime",             # pinned reads answer with the right text as text/markdown
    "prompt-names-other-revision",   # a prompt embeds the documents asked for, but its instruction names another revision
    "prompt-omits-document",         # a prompt embeds every document of its revision but the last
)


def uris(revision: str) -> list[str]:
    return [f"{BASE}{revision}/{doc}" for doc in REVISIONS[revision]]


def unavailable() -> MCPError:
    return MCPError(SNAPSHOT_UNAVAILABLE, UNAVAILABLE_MESSAGE)


class Snapshots:
    """The server's whole state: a pointer, a retained set, and the one scheduled switch."""

    def __init__(self, scenario: str, fault: str = "none", switch: Switch | None = None):
        self.switch = switch or SCENARIOS[scenario]
        self.fault = fault
        self.current = "r1"
        self.retained = {"r1", "r2"}
        self.switched = False

    def after(self, method: str, target: str) -> None:
        if self.fault == "recovery-unavailable" and (method, target) == ("resources/read", MANIFEST) \
                and self.current != "r1":
            self.retained.discard(self.current)  # checked before the switch: r1's own manifest is spared
        if not self.switched and (method, target) == (self.switch.method, self.switch.target):
            self.switched = True
            self.current = "r2"
            if self.switch.retire_r1:
                self.retained.discard("r1")

    def manifest(self) -> str:
        revision = "r1" if self.fault == "manifest-stuck" else self.current
        listed = uris(revision)
        if self.fault == "incomplete-recovery-manifest" and revision != "r1":
            listed = listed[:-1]
        manifest = {"revision": revision, "uris": listed}
        if self.fault == "manifest-extra-key":
            manifest["generated"] = "by the editor"
        return json.dumps(manifest)

    def read(self, uri: str, protocol_version: str | None = None) -> tuple[str, str]:
        """(mime type, text) of ``uri``, or an MCPError: a revision gone is ``unavailable()``, a URI
        never served the era's not-found (``uris.missing``)."""
        if uri == MANIFEST:
            return "application/json", self.manifest()
        if uri.startswith(BASE + "latest/"):
            doc = uri.removeprefix(BASE + "latest/")
            if doc in REVISIONS[self.current]:
                return "text/plain", REVISIONS[self.current][doc]
        for revision, docs in REVISIONS.items():
            for doc, text in docs.items():
                if uri != f"{BASE}{revision}/{doc}":
                    continue
                if revision not in self.retained:
                    if self.fault != "expired-resource-fallback":
                        raise unavailable()
                    text = REVISIONS[self.current][doc]
                if self.fault == "mixed-pinned-body" and (revision, doc) == ("r1", "design"):
                    text = REVISIONS["r2"]["design"]
                return ("text/markdown" if self.fault == "pinned-wrong-mime" else "text/plain"), text
        revision = uri.removeprefix(BASE).partition("/")[0]
        if PINNED.fullmatch(uri) and revision not in self.retained:  # a revision gone, or never had
            raise unavailable()
        raise missing(uri, protocol_version)

    def prompt(self, arguments: dict[str, str] | None) -> types.GetPromptResult:
        if set(arguments or {}) != {"revision"}:
            raise MCPError(types.INVALID_PARAMS, "Supply exactly one revision")
        revision = arguments["revision"]
        if revision not in self.retained:
            if self.fault != "expired-prompt-fallback" or revision not in REVISIONS:
                raise unavailable()
            revision = self.current
        # Validation and the reads below happen without an await in between: no switch can interleave.
        named = next(r for r in REVISIONS if r != revision) if self.fault == "prompt-names-other-revision" else revision
        messages = [types.PromptMessage(role="user", content=types.TextContent(
            type="text", text=f"Review only this snapshot: {named}"))]
        embedded = list(zip(uris(revision), REVISIONS[revision].values()))
        if self.fault == "prompt-omits-document":
            embedded = embedded[:-1]
        for uri, text in embedded:
            messages.append(types.PromptMessage(role="user", content=types.EmbeddedResource(
                type="resource", resource=types.TextResourceContents(uri=uri, mime_type="text/plain", text=text))))
        return types.GetPromptResult(description="Atlas snapshot review material; no review executed",
                                     messages=messages)


def build(scenario: str, fault: str = "none", ttl_ms: int = 0, switch: Switch | None = None,
          pages: tuple[int, ...] | None = None) -> Server:
    state = Snapshots(scenario, fault, switch)
    resource_pages, prompt_pages = Pager(pages), Pager(pages)

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        items, next_cursor = resource_pages.page([
            types.Resource(uri=MANIFEST, name="Current bundle", mime_type="application/json")], params)
        return types.ListResourcesResult(resources=items, next_cursor=next_cursor)

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        try:
            mime, text = state.read(params.uri, ctx.protocol_version)
            return types.ReadResourceResult(contents=[
                types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)])
        finally:
            state.after("resources/read", params.uri)

    async def on_list_prompts(ctx, params) -> types.ListPromptsResult:
        items, next_cursor = prompt_pages.page([types.Prompt(
            name=PROMPT, description="The documents of one snapshot revision, embedded",
            arguments=[types.PromptArgument(name="revision", required=True, description="r1 or r2")])], params)
        return types.ListPromptsResult(prompts=items, next_cursor=next_cursor)

    async def on_get_prompt(ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        try:
            return state.prompt(params.arguments)
        finally:
            state.after("prompts/get", (params.arguments or {}).get("revision", ""))

    hints = {"resources/read": CacheHint(ttl_ms=ttl_ms)} if ttl_ms else None
    return Server("course-snapshot", version="1.0", cache_hints=hints,
                  on_list_resources=on_list_resources, on_read_resource=on_read_resource,
                  on_list_prompts=on_list_prompts, on_get_prompt=on_get_prompt)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m course_lib.servers snapshot")
    # ``--mode`` is the spelling connect(..., mode=...) uses; both select the scenario.
    p.add_argument("--scenario", "--mode", dest="scenario", default="mixed", choices=tuple(SCENARIOS))
    p.add_argument("--fault", default="none", choices=FAULTS + READER_FAULTS)
    p.add_argument("--ttl-ms", type=int, default=0)
    p.add_argument("--switch-after", metavar="METHOD=TARGET",
                   help="publish r2 after the first request of METHOD on TARGET (a URI, or a revision for prompts/get)")
    p.add_argument("--keep-r1", action="store_true", help="the switch publishes r2 and keeps r1 retained")
    add_pages_option(p)
    args = p.parse_args(argv)
    switch = SCENARIOS[args.scenario]
    if args.switch_after:
        method, sep, target = args.switch_after.partition("=")
        if not sep or method not in ("resources/read", "prompts/get"):
            p.error("--switch-after takes resources/read=URI or prompts/get=REVISION")
        switch = Switch(method, target, switch.retire_r1)
    if args.keep_r1:
        switch = Switch(switch.method, switch.target, retire_r1=False)
    return serve(build(args.scenario, args.fault, args.ttl_ms, switch, args.pages), pages=args.pages)
