"""The atlas server: project documents as Resources, one URI template, one review Prompt, no tools.

The documents are data (``fixtures/atlas/documents.json`` by default, or ``--fixture``), so
another lab can serve other documents through the same code. ``resources/read`` looks the
URI up in an exact allowlist of canonical URIs: it never unquotes, never joins a path and
never opens a file. The mode picks the not-found error, always with ``data.uri``:

* ``classic``  -- the course's rule (``course_lib.uris.missing``): ``-32002 Resource not found`` at
  2025-11-25 (the spec's SHOULD), ``-32602`` at 2026-07-28 (SEP-2164: a MUST; -32002 is retired);
* ``sep-2164`` -- ``-32602`` in both eras, as the SDK's high-level ``MCPServer`` answers.

Every ``resources/read`` is written to the lab's ``audit.json`` with the URI exactly as the
handler received it.

``--pages 1,0,2`` pages ``resources/list``, ``resources/templates/list`` and ``prompts/list``
(each its own ``Pager``: opaque cursors, -32602 for one this list did not issue); without it
each list is one page.
``--http`` serves Streamable HTTP on 127.0.0.1 instead of stdio (``course_lib.loopback.serve_http``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence
from urllib.parse import quote

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.paths import FIXTURES
from course_lib.protocol import MODERN_VERSION
from course_lib.uris import missing
from course_lib.servers._base import Audit, Pager, add_pages_option, parser, serve

MODES = ("classic", "sep-2164")
DEFAULT_FIXTURE = FIXTURES / "atlas" / "documents.json"


@dataclass(frozen=True)
class Library:
    """A fixed set of named text documents under one URI base."""

    server: str
    version: str
    base: str
    mime_type: str
    template: Mapping[str, str]
    documents: Mapping[str, str]
    prompt: Mapping

    @classmethod
    def load(cls, path: str | Path = DEFAULT_FIXTURE) -> "Library":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(server=data["server"], version=data["version"], base=data["base"],
                   mime_type=data["mime_type"], template=MappingProxyType(data["template"]),
                   documents=MappingProxyType(data["documents"]), prompt=MappingProxyType(data["prompt"]))

    def uri_of(self, name: str) -> str:
        # One path segment: every reserved character is encoded, a space becomes %20.
        return self.base + quote(name, safe="")

    @property
    def uris(self) -> Mapping[str, str]:
        """The allowlist: canonical URI -> document name."""
        return MappingProxyType({self.uri_of(name): name for name in self.documents})

    def contents(self, name: str) -> types.TextResourceContents:
        return types.TextResourceContents(uri=self.uri_of(name), mime_type=self.mime_type,
                                          text=self.documents[name])


def _invalid(message: str, **data) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message, data or None)


def review_messages(library: Library, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    """The review prompt: one instruction, then the chosen documents as embedded resources."""
    prompt = library.prompt
    args = dict(arguments or {})
    unknown = sorted(set(args) - {"focus", "document"})
    if unknown:
        raise _invalid(f"Unknown prompt argument: {', '.join(map(repr, unknown))}", arguments=unknown)
    if "focus" not in args:
        raise _invalid("Missing required argument: focus", argument="focus")
    focus = prompt["focus"]
    if args["focus"] not in focus:
        raise _invalid(f"focus must be one of: {', '.join(focus)}", argument="focus")
    document = args.get("document", "all")
    if document != "all" and document not in library.documents:
        raise _invalid(f"document must be one of: all, {', '.join(library.documents)}", argument="document")
    names = list(library.documents) if document == "all" else [document]
    messages = [types.PromptMessage(role="user", content=types.TextContent(
        type="text", text=f"{focus[args['focus']]} {prompt['rules']}"))]
    messages += [types.PromptMessage(role="user", content=types.EmbeddedResource(
        type="resource", resource=library.contents(name))) for name in names]
    return types.GetPromptResult(description="Atlas review material; no review is executed.",
                                 messages=messages)


def build(library: Library, mode: str = "classic", audit: Audit | None = None,
          pages: Sequence[int] | None = None) -> Server:
    allowlist = library.uris
    if mode not in MODES:
        raise ValueError(f"atlas mode must be one of {MODES}, not {mode!r}")
    resource_pages, template_pages, prompt_pages = Pager(pages), Pager(pages), Pager(pages)

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        items, next_cursor = resource_pages.page([
            types.Resource(uri=uri, name=name, mime_type=library.mime_type) for uri, name in allowlist.items()],
            params)
        return types.ListResourcesResult(resources=items, next_cursor=next_cursor)

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        t = library.template
        items, next_cursor = template_pages.page([types.ResourceTemplate(
            uri_template=t["uriTemplate"], name=t["name"], description=t["description"],
            mime_type=library.mime_type)], params)
        return types.ListResourceTemplatesResult(resource_templates=items, next_cursor=next_cursor)

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        name = allowlist.get(params.uri)  # exact string match; nothing is decoded or resolved
        if audit is not None:
            audit.record(method="resources/read", uri=params.uri, found=name is not None)
        if name is None:
            raise missing(params.uri, MODERN_VERSION if mode == "sep-2164" else ctx.protocol_version)
        return types.ReadResourceResult(contents=[library.contents(name)])

    async def on_list_prompts(ctx, params) -> types.ListPromptsResult:
        p = library.prompt
        items, next_cursor = prompt_pages.page([types.Prompt(
            name=p["name"], description=p["description"], arguments=[
                types.PromptArgument(name="focus", required=True, description=" | ".join(p["focus"])),
                types.PromptArgument(name="document", required=False,
                                     description="all (default) | " + " | ".join(library.documents)),
            ])], params)
        return types.ListPromptsResult(prompts=items, next_cursor=next_cursor)

    async def on_get_prompt(ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != library.prompt["name"]:
            raise _invalid(f"Unknown prompt: {params.name}", name=params.name)
        return review_messages(library, params.arguments)

    return Server(library.server, version=library.version,
                  on_list_resources=on_list_resources, on_list_resource_templates=on_list_resource_templates,
                  on_read_resource=on_read_resource, on_list_prompts=on_list_prompts,
                  on_get_prompt=on_get_prompt)


def main(argv: list[str]) -> int:
    p = parser("atlas", MODES)
    p.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE,
                   help="documents file (default: fixtures/atlas/documents.json)")
    add_pages_option(p)
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1 instead of stdio")
    args = p.parse_args(argv)
    audit = Audit()
    if args.http:
        from course_lib.servers.modern import serve_http  # noqa: PLC0415 (only an HTTP lab needs it)

        return serve_http(build(Library.load(args.fixture), args.mode, audit, args.pages))
    return serve(build(Library.load(args.fixture), args.mode, audit, args.pages), audit=audit, pages=args.pages)
