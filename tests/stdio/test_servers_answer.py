"""Every tool a course server lists answers ``tools/call``, in both eras, on real servers.

The oracle is ``fixtures/servers/callable.json``: per server and mode, the list methods it
answers, the tools its walk lists, and the failures that are the point of a mode or a tool.
Each server's labs run side by side (one lab per mode and era); a failure names every lab
that went wrong and how.
"""
import json

import pytest
from mcp import MCPError

from course_lib import CatalogError, connect, servers, walk
from course_lib.errors import CourseError
from course_lib.paths import fixture
from course_lib.protocol import BOTH_ERAS, CONNECTION_CLOSED, METHOD_NOT_FOUND
from course_lib.scenarios import gather

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("servers", "callable.json").read_text(encoding="utf-8"))["servers"]
LAB_ENDING = ("ServerCrashed", "ProtocolViolation")  # walk outcomes after which no tool can be called


def spec_of(server: str, label: str, era: str) -> dict:
    entry = ORACLE[server]
    spec = {"lists": entry.get("lists", []), **entry["modes"][label]}
    return {**spec, **spec.get("eras", {}).get(era, {})}


def minimal(schema: dict):
    """The smallest value ``schema`` accepts, for the schemas course servers declare."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: minimal(properties.get(name, {})) for name in schema.get("required", [])}
    return {"string": "", "integer": schema.get("minimum", 0), "number": schema.get("minimum", 0),
            "boolean": False, "array": [], "null": None}[kind]


def listed_tools(wire) -> dict[str, dict]:
    """Name -> input schema of every tool any ``tools/list`` result on the wire names, in order."""
    tools: dict[str, dict] = {}
    for frame in wire:
        result = (frame.message or {}).get("result") if frame.direction == "←" else None
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            for tool in result["tools"]:
                tools.setdefault(tool["name"], tool.get("inputSchema") or {})
    return tools


def describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return f"MCPError {exc.error.code}"
    return f"{type(exc).__name__} {exc.reason}"


async def answer(lab, name: str, schema: dict) -> tuple[int | None, str]:
    """(error code or None for a result, message) of the server's reply to one ``tools/call``.

    Judged on the wire: the client may refuse content the server did send (an output schema
    the tool does not keep), and that is the client's decision, not the server's answer.
    """
    try:
        await lab.session.call_tool(name, minimal(schema), allow_input_required=True)
    except (MCPError, RuntimeError):
        pass
    request = next(f for f in reversed(lab.wire.frames) if f.method == "tools/call" and f.params["name"] == name)
    reply = lab.wire.response_to(request)
    if reply is None:
        return CONNECTION_CLOSED, "no reply"
    error = reply.message.get("error")
    return (None, "result") if error is None else (error["code"], error["message"])


async def run(server: str, label: str, era: str) -> list[str]:
    """What differs from the oracle in one lab, one line each."""
    spec = spec_of(server, label, era)
    options = {"mode": spec.get("mode", label), "args": spec.get("args", ()), "era": era,
               "request_timeout": spec.get("request_timeout", 10.0)}
    if "fixture" in spec:
        options["fixture"] = fixture(*spec["fixture"].split("/"))
    problems: list[str] = []
    walked, answers, catalog, seen = "complete", {}, None, None
    try:
        async with connect(server, **options) as lab:
            seen = lab
            for kind in spec["lists"]:
                try:
                    if kind == "tools":
                        catalog = await walk(lab, **spec.get("walk_limits", {}))
                    else:
                        await walk(lab, kind)
                except (CatalogError, MCPError) as exc:
                    if isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED:
                        raise  # the lab is over; connect() says why
                    if kind != "tools":
                        problems.append(f"{kind} walk: {describe(exc)}")
                    walked = describe(exc) if kind == "tools" else walked
            tools = listed_tools(lab.wire)
            names = list(tools)
            for name in dict.fromkeys(names[::spec.get("call_every", 1)] + names[-1:]):
                answers[name] = await answer(lab, name, tools[name])
    except CourseError as exc:
        walked = describe(exc)
    if walked != spec.get("walk", "complete"):
        problems.append(f"tools walk: {walked}, expected {spec.get('walk', 'complete')}")
    if "tools" in spec["lists"] and seen is not None:
        names = list(listed_tools(seen.wire))
        if names != spec.get("tools", names) or len(names) != spec.get("tool_count", len(names)):
            problems.append(f"listed {names[:8]}{' …' if len(names) > 8 else ''}")
        if catalog is not None and catalog.names != names:
            problems.append(f"the walk returned {catalog.names[:8]}, the wire listed {names[:8]}")
        if not walked.startswith(LAB_ENDING) and names and not answers:
            problems.append("no tool was called")
    for name, (code, message) in answers.items():
        intended = spec.get("intended", {}).get(name, {}).get(era)
        if code == METHOD_NOT_FOUND or "Unknown tool" in message:  # never intended
            problems.append(f"{name}: {code} {message}")
        elif code != intended:
            expected = "a result" if intended is None else f"error {intended}"
            problems.append(f"{name}: {'a result' if code is None else f'error {code} {message!r}'}, "
                            f"expected {expected}")
    return [f"{label} [{era}] {problem}" for problem in problems]


@pytest.mark.parametrize("server", sorted(ORACLE))
async def test_every_listed_tool_answers(server):
    jobs = {(label, era): (lambda label=label, era=era: run(server, label, era))
            for label in ORACLE[server]["modes"] for era in BOTH_ERAS}
    problems = [line for lines in (await gather(jobs)).values() for line in lines]
    assert not problems, "\n".join(problems)
