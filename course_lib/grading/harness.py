"""The real stdio server around a student's function: one harness, one small builder per exercise.

``python -m course_lib.grading.harness KIND MODULE.py FUNCTION [CONFIG.json] [--budget S]`` serves the
student's module (``grading.child``) as the exercise ``KIND`` on the SDK's low-level ``Server``: ``tool_result``
(03), ``read`` (04), ``snapshot`` (05), ``paging`` (06), ``tools`` (08) or ``state`` (09). Every call of it
goes through ``guard``: stopped at ``S`` s (a ``hung`` reply); ``MCPError`` passes; else the student's ``crash``."""
from __future__ import annotations

import inspect
import json
import os
import secrets
import sys
import traceback
from collections.abc import Mapping
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, replace
from urllib.parse import quote

import mcp_types as types
from mcp import MCPError
from mcp.server import Server

from course_lib.grading.budget import Bound, within
from course_lib.grading.child import load
from course_lib.grading.outcome import crash_record, last_line
from course_lib.servers._base import serve

CRASHED, CRASH_LOG = "crashed: ", "COURSE_CRASH_LOG"  # the wire's prefix (for a reader); the log's variable
BUDGET: float | None = None  # seconds a call of the student's code may take (``--budget``; none: unbounded)


def crash(exc: BaseException) -> MCPError:
    """The student's own error on the wire: ``-32603 crashed: Type: message``, its ``crash_record`` as
    ``data`` (and a JSON line in the file ``COURSE_CRASH_LOG`` names, which an audit's grader reads)."""
    traceback.print_exception(exc)
    if os.environ.get(CRASH_LOG):
        with open(os.environ[CRASH_LOG], "a", encoding="utf-8") as log:
            log.write(json.dumps(crash_record(exc)) + "\n")
    return MCPError(types.INTERNAL_ERROR, CRASHED + last_line(exc), crash_record(exc))


@contextmanager
def guard():
    """Inside: the student's code under ``BUDGET`` (``budget.within``); ``MCPError`` passes, any other
    exception becomes ``crash``, a call stopped at the budget ``-32603 hung: ...`` with ``{"hung": BUDGET}``."""
    with within(BUDGET) if BUDGET else nullcontext(Bound()) as bound:
        try:
            yield
        except MCPError:
            raise
        except Exception as exc:
            raise crash(exc) from None
    if bound.expired:
        raise MCPError(types.INTERNAL_ERROR, f"hung: no result within {BUDGET:g} s", {"hung": BUDGET})


async def called(thunk, problem=None):
    """``thunk()``, awaited if need be, guarded; ``problem(answer)``: why its type is wrong (a TypeError), or None."""
    with guard():
        answer = thunk()
        answer = await answer if inspect.isawaitable(answer) else answer
        if problem is not None and (said := problem(answer)):
            raise TypeError(said)
        return answer


# -- chapter 3: tools/list and prompts/list by FUNCTION(cursor, catalog) -------------------------

@dataclass
class Catalog:
    """One list as the page function sees it (``process`` is new at every start of the server)."""

    name: str
    key: bytes
    process: str
    kind: str     # "tools" or "prompts"
    names: list
    page_size: int
    generation: int = 1


def paging(page, config: dict) -> Server:
    """``CONFIG``: ``name``, ``key``, ``catalog`` (tools), ``prompts``, ``page_size`` and, for the
    catalog that moves on, ``changed`` (generation 2's tools, from the second ``tools/list`` on)."""
    process = secrets.token_hex(8)
    lists = {kind: Catalog(config["name"], config["key"].encode(), process, kind, list(names), config["page_size"])
             for kind, names in (("tools", config["catalog"]), ("prompts", config["prompts"]))}
    served = 0

    def answer(kind: str, params):
        names, next_cursor = page(None if params is None else params.cursor, lists[kind])
        if kind == "tools":
            tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in names]
            return types.ListToolsResult(tools=tools, next_cursor=next_cursor)
        return types.ListPromptsResult(prompts=[types.Prompt(name=n) for n in names], next_cursor=next_cursor)

    async def on_list_tools(ctx, params):
        nonlocal served
        if served == 1 and config.get("changed"):  # the catalog moves on before the second request
            for catalog in lists.values():
                catalog.generation = 2
            lists["tools"].names = list(config["changed"])
        served += 1
        return await called(lambda: answer("tools", params))

    async def on_list_prompts(ctx, params):
        return await called(lambda: answer("prompts", params))

    return Server(config["name"], version="1.0", on_list_tools=on_list_tools, on_list_prompts=on_list_prompts)


# -- chapter 5: tools/call by FUNCTION(name, arguments, catalog), name and arguments as sent -----

SENT: ContextVar[tuple] = ContextVar("sent")  # (name, arguments) of the tools/call being served


async def as_sent(ctx, call_next):
    """Keep a ``tools/call``'s name and arguments as sent; the SDK, which would refuse a bad shape, gets a stand-in."""
    if ctx.method != "tools/call" or not isinstance(ctx.params, Mapping):
        return await call_next(ctx)
    SENT.set((ctx.params.get("name"), ctx.params.get("arguments")))
    return await call_next(replace(ctx, params={**ctx.params, "name": "as-sent", "arguments": {}}))


def ran(name: str, arguments: dict) -> str:
    """What the business logic answers: which tool ran, with which arguments."""
    return f"{name} ran with {json.dumps(arguments, sort_keys=True)}"


class Tools:
    """``tools``: what ``tools/list`` lists ({name: input schema}); ``run``: the business logic, kept in ``ran``."""

    def __init__(self, tools: dict):
        self.tools, self.ran = {name: dict(schema) for name, schema in tools.items()}, []

    def run(self, name: str, arguments: dict | None = None) -> types.CallToolResult:
        """The tool's business logic: call it only with input you checked (the answer says it ran)."""
        self.ran.append(ran(name, arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text=self.ran[-1])])


def tools(handler, config: dict) -> Server:
    """``CONFIG``: ``{"name": ..., "tools": {name: input schema}}``."""
    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=s) for n, s in config["tools"].items()])

    async def on_call_tool(ctx, params) -> types.CallToolResult:
        (name, arguments), catalog = SENT.get(), Tools(config["tools"])
        answer = await called(lambda: handler(name, arguments, catalog), lambda a: None if isinstance(
            a, types.CallToolResult) else f"returned {type(a).__name__}, not a types.CallToolResult")
        return answer.model_copy(update={"meta": {"course/ran": catalog.ran}}) if catalog.ran else answer

    server = Server(config["name"], version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.middleware.append(as_sent)
    return server


# -- chapter 6: tools/call NAME {"result": VALUE} answered by FUNCTION(tool, VALUE) ----------------

def tool_result(result_of, config: dict) -> Server:
    """``CONFIG``: ``{"tools": {name: outputSchema or null}}``; the answer is sent as it is."""
    listed = {name: types.Tool(name=name, input_schema={"type": "object"}, output_schema=schema)
              for name, schema in config["tools"].items()}

    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=list(listed.values()))

    async def on_call_tool(ctx, params):
        if params.name not in listed:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        return await called(lambda: result_of(listed[params.name], (params.arguments or {}).get("result")))

    return Server("tool-results", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


# -- chapter 04: a library it cannot list, resources/read by FUNCTION(ctx, params, library) ----------

@dataclass(frozen=True)
class Shelf:
    """The documents, as the read handler may reach them: by name only (``text_of``), never listed."""

    base: str
    mime_type: str
    documents: Mapping

    def text_of(self, name: str) -> str | None:
        """The text of the document called ``name``, or None: a lookup, no file is ever opened."""
        return self.documents.get(name) if isinstance(name, str) else None


def read(handler, config: dict) -> Server:
    """``CONFIG``: the library (``base``, ``mime_type``, ``listed``, ``documents``); a read is a call of the handler."""
    shelf = Shelf(config["base"], config["mime_type"], dict(config["documents"]))
    listed = [(config["base"] + quote(name, safe=""), name) for name in config["listed"]]

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=uri, name=name, mime_type=shelf.mime_type)
                                                    for uri, name in listed])

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=shelf.base + "{name}", name="document", mime_type=shelf.mime_type,
            description="Any document of the library: the name percent-encoded as one path segment.")])

    async def on_read_resource(ctx, params):
        return await called(lambda: handler(ctx, params, shelf))

    return Server("atlas-graded", version="1.0", on_list_resources=on_list_resources,
                  on_list_resource_templates=on_list_resource_templates, on_read_resource=on_read_resource)


# -- chapter 05: the snapshot server's reads by FUNCTION(store, uri) -> (mime_type, text) ---------

BASE = "project://atlas/"
MANIFEST = BASE + "manifest"


@dataclass
class Store:
    """What the server holds now: ``revisions`` ({revision: {document: text}}), ``current``, ``base``,
    and the era of the request being answered (``protocol_version``, from ``ctx``)."""

    revisions: dict
    current: str
    base: str = BASE
    protocol_version: str | None = None


def snapshot(read_one, config: dict) -> Server:
    """``CONFIG``: the store (``revisions``, ``current``); the manifest is the harness's own answer."""
    store = Store({rev: dict(docs) for rev, docs in config["revisions"].items()}, config["current"])

    def pair(answer) -> str | None:  # why an answer is not a (mime_type, text) pair
        ok = isinstance(answer, tuple) and len(answer) == 2 and all(isinstance(a, str) for a in answer)
        return None if ok else f"{read_one.__name__} must return (mime_type, text), not {type(answer).__name__}"

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=MANIFEST, name="Current bundle", mime_type="application/json")])

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if params.uri == MANIFEST:
            mime, text = "application/json", json.dumps(
                {"revision": store.current, "uris": [f"{BASE}{store.current}/{d}" for d in store.revisions[store.current]]})
        else:
            store.protocol_version = ctx.protocol_version
            mime, text = await called(lambda: read_one(store, params.uri), pair)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type=mime,
                                                                             text=text)])

    return Server("course-snapshot-student", version="1.0", on_list_resources=on_list_resources,
                  on_read_resource=on_read_resource)


# -- chapter 09: the modern server, its request_state sealed by FUNCTION(key) -> (seal, unseal) ---

class StudentCodec:
    """``dump`` and ``load`` as ``modern.Modern`` calls them, answered by the student's pair (made at
    the first state, with a key random per process: a factory that fails is a codec that fails)."""

    def __init__(self, factory):
        self.factory, self.key, self.pair = factory, secrets.token_bytes(32), None

    def _run(self, index: int, args: tuple, wanted: type, what: str):
        with guard():
            if self.pair is None:
                self.pair = tuple(self.factory(self.key))
            answer = self.pair[index](*args)
            if not isinstance(answer, wanted):
                raise TypeError(f"{what} returned {type(answer).__name__}, not a {wanted.__name__}")
            return answer

    def dump(self, state: dict, call: dict) -> str:
        return self._run(0, (dict(state), dict(call)), str, "seal")

    def load(self, token: str, call: dict) -> dict:
        return self._run(1, (token, dict(call)), dict, "unseal")


def state(factory, config: dict) -> Server:
    from course_lib.servers import modern  # noqa: PLC0415 (only this kind needs the modern server)

    return modern.build("modern", codec=StudentCodec(factory))


KINDS = {f.__name__: f for f in (paging, tools, tool_result, read, snapshot, state)}

if __name__ == "__main__":
    kind, path, function, *config = sys.argv[1:]
    if "--budget" in config:
        BUDGET = float(config.pop(config.index("--budget") + 1))
        config.remove("--budget")
    sys.exit(serve(KINDS[kind](load(path, function), json.loads(open(config[0], encoding="utf-8").read()) if config else {})))
