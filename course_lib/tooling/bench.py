"""Speed figures of the course, measured side by side in one run: ``python -m course_lib.tooling.bench``.

1. launch: spawn → first response of a course server, cold (a fresh interpreter) against fast
   (forked by this process's pre-warmed fork server), interleaved, median of N each, and their
   ratio; the fast path covers course servers only (kernels and negative-control probes start
   as fresh interpreters);
2. close: leaving a lab block with a well-behaved server, until the process is reaped;
3. walk: ``course_lib.walk`` against a bare loop of SDK ``list_tools`` calls on the catalog
   server's ``large`` mode (10,000 tools on 1,000 pages), interleaved in one lab;
4. audit: ``course_lib.audit`` on three course servers (``large`` among them) and three real ones, against
   a bare walk of every list each serves (each from its server's start), side by side with their
   ratio, and a whole audit of the pinned ``server-everything``; with ``--against REF`` each tree's
   own audit part, one after the other in the same run, and the two tables side by side
   (``make bench BENCH_ARGS="--only audit --against main"``, :mod:`course_lib.tooling.bench_trees`);
5. suite: wall time of ``pytest -n N`` (make test's N) over tests/ and notebooks/ without the portable selection,
   as ``make test`` runs it (skip with ``--no-suite``);
   with ``--against REF`` (a git revision, e.g. ``main``) the same pytest part of ``make test``
   on REF's tree as well, one after the other in the same run, so "no slower than before" is a
   ratio of neighbours (``make bench BENCH_ARGS="--only suite --against main"``);
6. classroom: how many students one machine serves (:mod:`course_lib.tooling.classroom_bench`):
   a real hub per class size (``--class-sizes 2,4,8``), simulated students each running chapter
   01 and its check through the hub's API; cell latency and memory per student, beside the
   machine's size (Linux and root only: elsewhere it says why it is skipped).

Numbers go to stdout only; nothing here is asserted by the tests. The machine's load average
is printed with every figure, because a shared machine makes every timing noisy.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

import anyio
import mcp_types as types

from course_lib._runtime import fastlaunch as forkserver
from course_lib._runtime.process import course_server_argv, server_env
from course_lib.errors import CourseError
from course_lib.walker import walk
from course_lib.labs import connect
from course_lib.paths import ROOT
from course_lib.tooling import bench_trees
from course_lib.tooling.bench_trees import load, not_portable, timed_run, workers


PARTS = ("launch", "walk", "audit", "suite", "classroom")


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


async def launch_once(fast: bool) -> tuple[float, float, str]:
    """(spawn → first response, close) of one catalog lab."""
    os.environ[forkserver.SWITCH] = "1" if fast else "0"
    start = time.perf_counter()
    lab_cm = connect("catalog")
    lab = await lab_cm.__aenter__()
    try:
        await lab.session.list_tools()
        ready = time.perf_counter() - start
    except BaseException:
        await lab_cm.__aexit__(*sys.exc_info())
        raise
    closing = time.perf_counter()
    await lab_cm.__aexit__(None, None, None)
    return ready, time.perf_counter() - closing, lab.launch_path


async def bench_launch(runs: int) -> None:
    print(f"== launch: spawn -> first response (catalog server, legacy era), {runs} runs each, interleaved")
    print("   fast path: course servers only, forked by one pre-warmed fork server per process;"
          " kernels and negative-control probes start as fresh interpreters")
    started = time.perf_counter()
    await launch_once(fast=True)  # starts the fork server once for this process
    print(f"   fork server start + first fast lab: {fmt(time.perf_counter() - started)}   ({load()})")
    ready = {True: [], False: []}
    close = {True: [], False: []}
    for _ in range(runs):
        for fast in (False, True):
            r, c, path = await launch_once(fast)
            assert path == ("fast" if fast else "cold"), path
            ready[fast].append(r)
            close[fast].append(c)
    cold, fast = statistics.median(ready[False]), statistics.median(ready[True])
    print(f"   cold  median {fmt(cold)}   (min {fmt(min(ready[False]))}, max {fmt(max(ready[False]))})")
    print(f"   fast  median {fmt(fast)}   (min {fmt(min(ready[True]))}, max {fmt(max(ready[True]))})")
    print(f"   ratio cold/fast: {cold / fast:.1f}x   ({load()})")
    print("== close: leaving the lab block until the server is reaped (well-behaved server)")
    print(f"   fast  median {fmt(statistics.median(close[True]))}   (max {fmt(max(close[True]))})")
    print(f"   cold  median {fmt(statistics.median(close[False]))}   (max {fmt(max(close[False]))})   ({load()})")


async def bare_walk(session) -> int:
    count, cursor = 0, None
    while True:
        page = await session.list_tools(params=None if cursor is None else types.PaginatedRequestParams(cursor=cursor))
        count += len(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return count


async def in_pairs(rounds: int, timed, bare) -> tuple[list, list, list]:
    """``rounds`` pairs of ``timed()`` and ``bare()``, in alternating order: both times and their ratios
    (neighbours in time share the machine's load)."""
    times, bares, ratios = [], [], []
    for i in range(rounds):
        if i % 2:
            b, t = await bare(), await timed()
        else:
            t, b = await timed(), await bare()
        times.append(t)
        bares.append(b)
        ratios.append(t / b)
    return times, bares, ratios


async def bench_walk(rounds: int) -> None:
    print(f"== walk: catalog --mode large (10,000 tools / 1,000 pages), {rounds} pairs, order alternating")
    os.environ[forkserver.SWITCH] = "1"
    async def timed_walk() -> float:
        start = time.perf_counter()
        catalog = await walk(lab, max_pages=1000, max_items=10_000)
        assert len(catalog.items) == 10_000 and catalog.pages == 1000
        return time.perf_counter() - start

    async def timed_bare() -> float:
        start = time.perf_counter()
        assert await bare_walk(lab.session) == 10_000
        return time.perf_counter() - start

    async with connect("catalog", mode="large", lab_timeout=3600) as lab:
        await bare_walk(lab.session)  # warm the path once
        walker, bare, ratios = await in_pairs(rounds, timed_walk, timed_bare)
    print(f"   walk      median {fmt(statistics.median(walker))}")
    print(f"   bare SDK  median {fmt(statistics.median(bare))}")
    print(f"   ratio walk/bare: median of pairs {statistics.median(ratios):.3f}, "
          f"of medians {statistics.median(walker) / statistics.median(bare):.3f}   ({load()})")


# (server, mode, era): servers the audit is timed on against a bare walk of every list they serve; mode
# ``real``: a real server of chapter 07 (``real_servers``; ``sdk129``: the SDK 1.29.0 atlas server)
AUDITED = (("catalog", "large", "legacy"), ("catalog", "normal", "legacy"), ("atlas", "classic", "legacy"),
           ("everything", "real", "legacy"), ("fastmcp", "real", "legacy"), ("sdk129", "real", "legacy"))
LIST_CALLS = ("list_tools", "list_resources", "list_resource_templates", "list_prompts")


async def bare_lists(session) -> int:
    """Every list the server serves, walked to its end by a plain ``next_cursor`` loop: the pages read."""
    from mcp import MCPError

    pages = 0
    for call in LIST_CALLS:
        cursor = None
        while True:
            try:
                page = await getattr(session, call)(
                    params=None if cursor is None else types.PaginatedRequestParams(cursor=cursor))
            except MCPError:  # a list this server does not serve
                break
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
    return pages


@contextmanager
def audited_server(name: str, mode: str) -> Iterator[tuple]:
    """(argv, env, cwd, bare walk) of a row of ``AUDITED``; the bare walk starts its own server."""
    if mode != "real":
        async def bare() -> int:
            async with connect(name, mode=mode, lab_timeout=3600) as lab:
                return await bare_lists(lab.session)
        yield course_server_argv(name, mode), None, None, bare
        return
    from course_lib import sdk129
    from course_lib.chapters import real_servers
    with (nullcontext(real_servers.Launch(sdk129.server_argv("atlas"), {}, ROOT)) if name == "sdk129"
          else real_servers.prepared(name)) as server:
        async def bare() -> int:
            from mcp import ClientSession, StdioServerParameters, stdio_client
            params = StdioServerParameters(command=server.argv[0], args=server.argv[1:], cwd=server.cwd,
                                           env=server_env(Path(server.cwd), server.env))
            with open(os.devnull, "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return await bare_lists(session)
        yield server.argv, server.env or None, str(server.cwd), bare


async def bench_audit(rounds: int, everything: bool = True) -> None:
    """The audit's time on each server of ``AUDITED`` against a bare walk of the same server (each from
    the start of its server process to its last answer), side by side, then a whole audit of
    ``server-everything``."""
    from course_lib.audit import audit
    from course_lib.chapters.peers_env import everything_argv

    print(f"== audit against a bare walk, {rounds} pairs each, order alternating")
    print(f"   {'server':30} {'audit':>9} {'bare walk':>10} {'audit/walk':>10}")
    for name, mode, era in AUDITED:
        try:  # a set-up that did not build a pinned real server leaves its row out
            with audited_server(name, mode) as (argv, env, cwd, walked):
                async def timed_audit() -> float:
                    start = time.perf_counter()
                    report = await audit(argv, env=env, cwd=cwd, era=era)
                    assert report.leftovers == [] and not [x for x in report.lines if x.check == "list.walk"
                                                           and x.verdict == "FAIL"], report.table()
                    return time.perf_counter() - start

                async def timed_bare() -> float:
                    start = time.perf_counter()
                    assert await walked() > 0
                    return time.perf_counter() - start

                await timed_bare()  # warm the path once (the fork server, the server's imports)
                audits, bares, ratios = await in_pairs(rounds, timed_audit, timed_bare)
                label = name + (" (real)" if mode == "real" else " --mode " + mode) + " (" + era + ")"
                print(f"   {label:30} {fmt(statistics.median(audits)):>9} "
                      f"{fmt(statistics.median(bares)):>10} {statistics.median(ratios):>10.2f}")
        except CourseError as exc:
            print(f"   {name} (real): not timed: {str(exc)[:70]}")
    print(f"   ({load()})")
    if not everything:
        return
    start = time.perf_counter()
    report = await audit(everything_argv())
    took = time.perf_counter() - start
    counts = ", ".join(f"{n} {v}" for v, n in report.counts().items())
    print(f"== audit: server-everything (both eras asked): {fmt(took)}, {report.processes} processes, "
          f"{len(report.leftovers)} left over, {counts}   ({load()})")


def bench_suite(cold: bool) -> None:
    label = "COURSE_FAST_LAUNCH=0 (every server cold)" if cold else "fast launch"
    print(f"== suite: pytest -n {workers(ROOT)} over tests/ and notebooks/, {label}   (before: {load()})")
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    env.pop(forkserver.SWITCH, None)
    if cold:
        env[forkserver.SWITCH] = "0"
    done, wall, cpu = timed_run([sys.executable, "-m", "pytest", "-n", workers(ROOT), "-q", "-p", "no:cacheprovider",
                                 *not_portable(ROOT)], env)
    summary = [line for line in done.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
    print(f"   wall {wall:6.1f} s   exit {done.returncode}   {summary[0].strip('= ')}   ({load()})")
    # CPU time does not depend on how busy the machine is: on 2 idle cores the wall time
    # cannot be less than half of it, and is usually not much more.
    print(f"   cpu  {cpu:6.1f} s (user+sys of pytest, its workers, kernels and servers)")


async def main(args: argparse.Namespace) -> None:
    print(f"course_lib.tooling.bench   python {sys.version.split()[0]}   ({load()})")
    parts = PARTS if args.only is None else (args.only,)
    if "launch" in parts:
        await bench_launch(args.runs)
    if "walk" in parts:
        await bench_walk(args.rounds)
    if "audit" in parts and args.against and not args.in_tree:
        await anyio.to_thread.run_sync(bench_trees.audit_against, args.against, max(2, args.rounds // 2))
    elif "audit" in parts:
        await bench_audit(max(2, args.rounds // 2), everything=not args.in_tree)
    forkserver.shutdown()
    if "suite" in parts and args.suite and not args.against:  # the pair times this tree already
        bench_suite(cold=False)
    if "suite" in parts and args.cold_suite:
        bench_suite(cold=True)
    if "suite" in parts and args.against:
        bench_trees.suite_against(args.against, args.pairs)
    if "classroom" in parts:
        from course_lib.tooling import classroom_bench

        await anyio.to_thread.run_sync(classroom_bench.bench, [int(n) for n in args.class_sizes.split(",")])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m course_lib.tooling.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="launches of each kind (default 7)")
    parser.add_argument("--rounds", type=int, default=4, help="walker/bare pairs (default 4)")
    parser.add_argument("--no-suite", dest="suite", action="store_false", help="skip the suite timing")
    parser.add_argument("--only", choices=PARTS,
                        help="run one part: launch (with close), walk, audit, suite or classroom")
    parser.add_argument("--class-sizes", default="2,4,8", help="class sizes of the classroom part (default 2,4,8)")
    parser.add_argument("--cold-suite", action="store_true",
                        help="also time the suite with every server started cold (proves the outputs match)")
    parser.add_argument("--against", metavar="REF",
                        help="also time the pytest part (and the audit part) on git revision REF's tree, side by side")
    parser.add_argument("--in-tree", action="store_true", help=argparse.SUPPRESS)  # one tree's audit table only
    parser.add_argument("--pairs", type=int, default=1, help="side-by-side pairs with --against (default 1)")
    anyio.run(main, parser.parse_args())
