"""The server around chapter 10's read function: ``resources/read`` served by the student's code.

``python -m course_lib.grading.snapshot_harness MODULE.py FUNCTION CONFIG.json`` imports the
student's module (written by ``grading.child``) and serves the snapshot server's resources on the
SDK's low-level ``Server`` over stdio. The manifest (``project://atlas/manifest``) is the harness's
own answer; every other ``resources/read`` is one call of ``FUNCTION(store, uri)``, which returns
``(mime_type, text)`` or raises ``MCPError``. A function that raises anything else, or returns
anything but two strings, is answered ``-32603 crashed: Type: message`` (its traceback, with the
module's real line numbers, goes to stderr). ``CONFIG`` holds the store: ``revisions`` (the
revisions the server still has, each ``{document: text}``) and ``current``.
"""
from __future__ import annotations

import inspect
import json
import sys
import traceback
from dataclasses import dataclass

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.stdio import stdio_server

from course_lib.grading.paging_harness import CRASHED, load

BASE = "project://atlas/"
MANIFEST = BASE + "manifest"


@dataclass
class Store:
    """What the server holds now: ``revisions`` ({revision: {document: text}}), ``current``, ``base``."""

    revisions: dict
    current: str
    base: str = BASE


def crash(exc: BaseException) -> MCPError:
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return MCPError(types.INTERNAL_ERROR, CRASHED + said, {"crashed": type(exc).__name__})


def serve(read, config: dict) -> None:
    store = Store({rev: dict(docs) for rev, docs in config["revisions"].items()}, config["current"])

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=MANIFEST, name="Current bundle", mime_type="application/json")])

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if params.uri == MANIFEST:
            mime, text = "application/json", json.dumps(
                {"revision": store.current, "uris": [f"{BASE}{store.current}/{d}" for d in store.revisions[store.current]]})
        else:
            try:
                answer = read(store, params.uri)
                if inspect.isawaitable(answer):
                    answer = await answer
                if not (isinstance(answer, tuple) and len(answer) == 2 and all(isinstance(a, str) for a in answer)):
                    raise TypeError(f"{read.__name__} must return (mime_type, text), not {type(answer).__name__}")
            except MCPError:
                raise
            except Exception as exc:
                traceback.print_exc()
                raise crash(exc) from None
            mime, text = answer
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type=mime,
                                                                             text=text)])

    async def main():
        async with stdio_server() as (read_stream, write_stream):
            server = Server("course-snapshot-student", version="1.0", on_list_resources=on_list_resources,
                            on_read_resource=on_read_resource)
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    path, function, config = sys.argv[1:4]
    serve(load(path, function), json.loads(open(config, encoding="utf-8").read()))
