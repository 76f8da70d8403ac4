"""Two trees side by side in one bench run: this one and a git revision's (``--against REF``).

The revision is checked out as a detached git worktree in a temporary directory (a checkout, as the
tests that read ``git status`` expect; the set-up output that is not in git, such as the pinned
servers' environments, linked in; removed at the end) and run with this tree's
interpreter, its ``PYTHONPATH`` pointing at it; runs alternate between the trees, so neighbours
in time share the machine's load. ``suite_against``: the pytest part of ``make test``;
``audit_against``: the audit part of the bench (audit against a bare walk, per server), each
tree's own, so "faster than before" is two tables of the same run.
"""
from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from course_lib._runtime import fastlaunch as forkserver
from course_lib.paths import ROOT

# Set-up output, not in git, ignored as a link too (the classroom's interpreters, ignored as a folder
# only, the other tree's classroom test builds for itself)
BUILT = (".venv-sdk129", ".venv-servers", "fixtures/peers/node_modules", "fixtures/slides/node_modules",
         "fixtures/classroom/node_modules")
AUDIT_ROW = re.compile(r"^\s+(\S.*\(\S+\))\s+([\d.]+) ms\s+([\d.]+) ms\s+([\d.]+)\s*$")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cpus"


def not_portable(tree: Path) -> list[str]:
    """``make test``'s pytest part leaves the portable selection (``make portable``) out: the
    ``--ignore`` of each file of the tree's ``PORTABLE_TESTS``."""
    for line in (tree / "Makefile").read_text().splitlines():
        if line.startswith("PORTABLE_TESTS"):
            return [f"--ignore={name}" for name in line.split("=", 1)[1].split()]
    return []


def workers(tree: Path) -> str:
    """The ``-n`` of the pytest part of the tree's ``make test`` (2 if it names none)."""
    recipe = (tree / "Makefile").read_text().split("\ntest:", 1)[-1].split("\n\n", 1)[0]
    found = re.search(r"-m pytest -n (\d+)", recipe)
    return found[1] if found else "2"


def timed_run(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``argv``; return it with its wall time and the CPU time of its whole process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu


@contextmanager
def trees(ref: str) -> Iterator[dict[str, Path]]:
    """``{"this tree": ROOT, ref: its checkout}``, the latter removed at the end."""
    with tempfile.TemporaryDirectory(prefix="course-bench-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(base), ref], cwd=ROOT, check=True)
        try:
            for built in BUILT:
                if (ROOT / built).exists():
                    (base / built).symlink_to((ROOT / built).resolve())
            yield {"this tree": ROOT, ref: base}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
            subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    env.pop(forkserver.SWITCH, None)
    return env


def _alternating(names: list[str], i: int) -> list[str]:
    return names if i % 2 == 0 else names[::-1]


def suite_against(ref: str, pairs: int) -> None:
    """The pytest part of ``make test`` on this tree and on ``ref``'s, in alternating order."""
    print(f"== suite side by side: pytest on this tree and on {ref}, each with its make test's -n, "
          f"{pairs} pair(s)   ({load()})")
    with trees(ref) as both:
        walls: dict[str, list[float]] = {name: [] for name in both}
        failed: set[str] = set()
        for i in range(pairs):
            for name in _alternating(list(both), i):
                n = workers(both[name])
                done, wall, cpu = timed_run([sys.executable, "-m", "pytest", "-n", n, "-q", "-p", "no:cacheprovider",
                                             *not_portable(both[name])], _env(both[name]), cwd=both[name])
                walls[name].append(wall)
                summary = [line for line in done.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
                print(f"   {name:>12}: -n {n}  wall {wall:6.1f} s   cpu {cpu:6.1f} s   exit {done.returncode}   "
                      f"{summary[0].strip('= ')}   ({load()})")
                if done.returncode != 0:
                    failed.add(name)
                    for line in done.stdout.splitlines():  # pytest's short summary: what failed, by name
                        if line.startswith(("FAILED ", "ERROR ")):
                            print(f"   {name:>12}: {line[:150]}")
    now, before = statistics.median(walls["this tree"]), statistics.median(walls[ref])
    print(f"   ratio this tree / {ref}: {now / before:.3f} (median wall times)" if not failed else
          f"   no ratio: the run of {' and '.join(sorted(failed))} failed (a failing suite is not a time)")


def audit_against(ref: str, rounds: int) -> None:
    """The audit part (audit against a bare walk) of each tree's own bench, in alternating order, then
    the median audit time and audit/walk ratio of each server in each tree, side by side."""
    print(f"== audit against a bare walk, on this tree and on {ref}, {rounds} pairs each   ({load()})")
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with trees(ref) as both:
        for i in range(2):
            for name in _alternating(list(both), i):
                own = "--in-tree" in (both[name] / "course_lib/tooling/bench.py").read_text()
                done, wall, _ = timed_run([sys.executable, "-m", "course_lib.tooling.bench", "--only", "audit",
                                           "--rounds", str(2 * rounds), *(["--in-tree"] if own else [])],
                                          _env(both[name]), cwd=both[name])
                print(f"   {name:>12}: exit {done.returncode}, {wall:.1f} s   ({load()})")
                for match in filter(None, map(AUDIT_ROW.match, done.stdout.splitlines())):
                    rows.setdefault(match[1], {}).setdefault(name, []).append((float(match[2]), float(match[4])))
    print(f"   {'server':32} {'this tree':>22} {ref:>22}")
    print(f"   {'':32} {'audit':>10} {'audit/walk':>11} {'audit':>10} {'audit/walk':>11}")
    for server, by_tree in rows.items():
        cells = []
        for name in ("this tree", ref):
            runs = by_tree.get(name, [])
            cells.append(f"{statistics.median(a for a, _ in runs):8.0f} ms {statistics.median(r for _, r in runs):11.2f}"
                         if runs else f"{'-':>22}")
        print(f"   {server:32} {cells[0]} {cells[1]}")
    print(f"   ({load()})")
