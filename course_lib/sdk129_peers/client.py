"""A real SDK 1.29.0 client session that runs a list of operations (run only by ``.venv-sdk129``).

Reads one JSON object on stdin: ``{"command": [...], "env": {...}, "cwd": "...", "errlog": "...",
"ops": [...]}``; starts the server over stdio with 1.29.0's ``stdio_client``, initialises one
``ClientSession`` and performs the operations in order; prints one JSON list on stdout: a result
per operation, then ``{"op": "session", "noise": [...]}`` with every exception the session passed
to its message handler (how 1.29.0 reports a line it could not parse).

Each result: ``{"op", "ok", "result" (wire JSON by alias, or None), "error" (None or
{"type", "code", "message"}), "extra" (keys the 1.29.0 models kept beyond their fields)}``.
Two operations are not one request: ``walk_tools`` sends every cursor back verbatim until
``nextCursor`` is absent, a request fails, or ``max_pages`` requests went out (it checks nothing
else: the trusting loop), and returns ``{"pages": [{"tools": [...], "nextCursor": ...}]}``;
``api`` returns the signature of 1.29.0's ``ClientSession.list_tools`` and whether a drain helper
exists. Stdlib and mcp 1.29.0 only.
"""
import inspect
import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError


def extras(model) -> dict:
    """Unknown keys a 1.29.0 model kept (``model_extra``), at the top level and one list down."""
    found = {}
    for key, value in (getattr(model, "model_extra", None) or {}).items():
        found[key] = value
    for name in type(model).model_fields:
        items = getattr(model, name, None)
        if isinstance(items, list):
            for i, item in enumerate(items):
                for key, value in (getattr(item, "model_extra", None) or {}).items():
                    found[f"{name}[{i}].{key}"] = value
    return found


async def walk_tools(session: ClientSession, max_pages: int, pages: list) -> dict:
    """The trusting loop: every cursor goes back verbatim; only an absent nextCursor ends it."""
    cursor = None
    for _ in range(max_pages):
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        pages.append({"tools": [t.name for t in page.tools], "nextCursor": page.nextCursor})
        cursor = page.nextCursor
        if cursor is None:
            break
    return {"pages": pages}


def api() -> dict:
    return {"list_tools": str(inspect.signature(ClientSession.list_tools)),
            "list_all_tools": hasattr(ClientSession, "list_all_tools")}


async def perform(session: ClientSession, op: dict):
    kind = op["op"]
    if kind == "list_tools":
        return await session.list_tools(cursor=op.get("cursor"))
    if kind == "call_tool":
        return await session.call_tool(op["name"], op.get("arguments"))
    if kind == "read_resource":
        return await session.read_resource(op["uri"])
    if kind == "list_resources":
        return await session.list_resources(cursor=op.get("cursor"))
    if kind == "get_prompt":
        return await session.get_prompt(op["name"], op.get("arguments"))
    raise ValueError(f"unknown op {kind!r}")


async def run(job: dict) -> list:
    noise: list[str] = []

    async def on_message(message) -> None:
        if isinstance(message, Exception):
            noise.append(f"{type(message).__name__}: {str(message).splitlines()[0][:160]}")

    params = StdioServerParameters(command=job["command"][0], args=job["command"][1:],
                                   env=job.get("env"), cwd=job.get("cwd"))
    results = []
    with open(job["errlog"], "a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                for op in job["ops"]:
                    entry = {"op": op["op"], "ok": True, "result": None, "error": None, "extra": {}}
                    pages: list = []
                    try:
                        if op["op"] in ("walk_tools", "api"):  # plain data, not one result model
                            entry["result"] = (await walk_tools(session, op.get("max_pages", 32), pages)
                                               if op["op"] == "walk_tools" else api())
                            results.append(entry)
                            continue
                        result = await perform(session, op)
                        entry["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                        entry["extra"] = extras(result)
                    except McpError as exc:
                        if pages:  # the pages a walk read before the refusal
                            entry["result"] = {"pages": pages}
                        entry.update(ok=False, error={"type": type(exc).__name__,
                                                      "code": exc.error.code, "message": exc.error.message})
                    except Exception as exc:  # what the session raised, reported as data
                        entry.update(ok=False, error={"type": type(exc).__name__, "code": None,
                                                      "message": str(exc).splitlines()[0][:300]})
                    results.append(entry)
    results.append({"op": "session", "noise": noise})
    return results


if __name__ == "__main__":
    job = json.loads(sys.stdin.read())
    print(json.dumps(anyio.run(run, job)))
