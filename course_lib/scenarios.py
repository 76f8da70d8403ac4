"""Run one lab scenario and describe its outcome in one deterministic line.

Used by the chapters to put many real runs side by side in a table.
"""
from __future__ import annotations

from functools import partial
from typing import Iterable

import anyio
from mcp import MCPError

from course_lib.walker import walk
from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.labs import connect
from course_lib.protocol import BOTH_ERAS


async def walk_outcome(mode: str, era: str = "legacy", *, server: str = "catalog", kind: str = "tools",
                       **limits) -> str:
    """``ok alpha,beta,gamma pages [1, 0, 2]`` for a complete walk, else the error type and reason."""
    try:
        async with connect(server, mode=mode, era=era) as lab:
            catalog = await walk(lab, kind, **limits)
    except CourseError as exc:
        return f"{type(exc).__name__}({exc.reason})"
    except MCPError as exc:
        return f"MCPError {exc.error.code}"
    return f"ok {','.join(catalog.names) or '(none)'} pages {list(catalog.page_sizes)}"


async def gather(jobs: dict, limit: int = 4) -> dict:
    """Run ``{key: coroutine_function}`` concurrently (at most ``limit`` at once); results keyed."""
    results: dict = {}
    limiter = anyio.CapacityLimiter(limit)

    async def run(key, fn):
        async with limiter:
            results[key] = await fn()

    async with anyio.create_task_group() as tg:
        for key, fn in jobs.items():
            tg.start_soon(run, key, fn)
    return {key: results[key] for key in jobs}


async def for_each(fn, args: Iterable, limit: int = 4) -> dict:
    """``{arg: await fn(arg)}`` for every ``arg``, at most ``limit`` running at once, in order.

    A tuple ``arg`` is spread: ``fn(*arg)``, still keyed by the tuple. The labs run side by side,
    each in its own server process; the first error cancels the rest and is raised."""
    args = list(args)
    return await gather({arg: partial(fn, *(arg if isinstance(arg, tuple) else (arg,))) for arg in args},
                        limit)


async def outcome_table(modes: Iterable[str], eras: Iterable[str] = BOTH_ERAS,
                        **limits) -> Table:
    """One row per catalog mode, one column per era: what ``walk`` made of it."""
    modes, eras = list(modes), list(eras)
    results = await for_each(partial(walk_outcome, **limits), [(m, e) for m in modes for e in eras])
    return Table(["mode", *eras], [[m, *(results[(m, e)] for e in eras)] for m in modes])
