"""Are a module's judges load-bearing? One mutant per check, each run against the given tests.

``python -m course_lib.tooling.mutants MODULE [--functions F ...] [--tests tests/x_unit.py ...]``.
In the judge functions (``judge*`` and ``is_*`` unless ``--functions`` names them) every check is
removed or loosened, one mutant at a time: an ``if`` never taken, a comprehension's filter never
true, a ``require(cond, ...)`` always met, a comparison outside an ``if`` always true, a clause of
an ``and`` (``or``) dropped. Each mutant is written over a copy of the package in a temporary
directory (the checkout is never edited), and the tests run there (``-x``, in-process files only:
seconds each). A mutant is killed when a test fails, SURVIVED when every test passes; the exit
code is 1 when any survived, 2 when the tests fail on the unmutated module.
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course_lib.paths import PACKAGE, ROOT


def _const(value: bool) -> ast.expr:
    return ast.Constant(value)


def sites(tree: ast.Module, functions: list[str] | None) -> list[tuple[ast.AST, str, str, object]]:
    """(node, field, description, replacement) of every mutation: ``replacement`` is an expression, or
    ``(index, value)`` for one item of a list field (a filter, ``require``'s condition, a clause)."""
    found = []
    judges = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and (n.name in functions if functions else n.name.startswith(("judge", "is_")))]
    for function in judges:
        in_test: set[int] = set()
        for node in ast.walk(function):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                in_test.update(id(n) for n in ast.walk(node.test))
            if isinstance(node, ast.comprehension):
                in_test.update(id(n) for c in node.ifs for n in ast.walk(c))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require" and node.args:
                in_test.update(id(n) for n in ast.walk(node.args[0]))
        for node in ast.walk(function):
            line = getattr(node, "lineno", None) or getattr(getattr(node, "target", None), "lineno", "?")
            where = f"{function.name}:{line}"  # (a comprehension's line is its target's)
            if isinstance(node, ast.If):
                found.append((node, "test", f"{where} if {ast.unparse(node.test)} -> never", _const(False)))
            elif isinstance(node, ast.comprehension):
                for i, _ in enumerate(node.ifs):
                    found.append((node, "ifs", f"{where} filter {ast.unparse(node.ifs[i])} -> never", (i, None)))
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require" and node.args:
                found.append((node, "args", f"{where} require({ast.unparse(node.args[0])}) -> always", (0, True)))
            elif isinstance(node, ast.Compare) and id(node) not in in_test:
                found.append((node, None, f"{where} {ast.unparse(node)} -> True", _const(True)))
            if isinstance(node, ast.BoolOp):
                keep = isinstance(node.op, ast.And)
                for i, value in enumerate(node.values):
                    found.append((node, "values", f"{where} {'and' if keep else 'or'} clause {ast.unparse(value)} "
                                  "dropped", (i, keep)))
    return found


def mutant(source: str, index: int, functions: list[str] | None) -> tuple[str, str]:
    """The module's source with the ``index``-th mutation applied, and its description."""
    tree = ast.parse(source)
    node, field, what, replacement = sites(tree, functions)[index]
    if field is None:  # a whole comparison: replaced where its parent holds it
        for parent in ast.walk(tree):
            for name, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, name, replacement)
                elif isinstance(value, list) and any(v is node for v in value):
                    value[[id(v) for v in value].index(id(node))] = replacement
    elif field == "ifs":
        node.ifs[replacement[0]] = _const(False)
    elif field == "args":
        node.args[0] = _const(True)
    elif field == "values":
        i, keep = replacement
        node.values[i] = _const(keep)
    else:
        setattr(node, field, replacement)
    return ast.unparse(ast.fix_missing_locations(tree)), what


def _copy(into: Path) -> Path:
    """A copy of the package next to links to everything else of the checkout (fixtures, notebooks)."""
    shutil.copytree(PACKAGE, into / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    for entry in ROOT.iterdir():
        if entry.name != PACKAGE.name and not (into / entry.name).exists():
            (into / entry.name).symlink_to(entry)
    return into


def run_mutant(copy: Path, relative: Path, text: str, original: str, tests: list[str], timeout: float) -> str:
    target = copy / relative
    target.write_text(text, encoding="utf-8")
    try:
        # A run of its own: not the tag of a test run this one is inside (its leak check would count
        # that run's servers as this one's), nor its per-test variables.
        env = {k: v for k, v in os.environ.items() if k != "COURSE_LAB_RUN" and not k.startswith("PYTEST_")}
        env.update(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0",
                               *tests], cwd=copy, env=env, capture_output=True, timeout=timeout)
        return {0: "SURVIVED", 1: "killed"}.get(done.returncode, f"killed (pytest exit {done.returncode})")
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    finally:
        target.write_text(original, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_lib.tooling.mutants", description=__doc__.split("\n")[0])
    parser.add_argument("module", help="dotted name, e.g. course_lib.grading.core")
    parser.add_argument("--functions", nargs="+", help="the judge functions (default: judge* and is_*)")
    parser.add_argument("--tests", nargs="+", default=["tests/inprocess/test_grading_judges_unit.py"])
    parser.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    relative = Path(*args.module.split(".")).with_suffix(".py")
    if relative.parts[0] != PACKAGE.name:  # only the package is copied: anything else is the checkout's own
        parser.error(f"{args.module} is not a module of {PACKAGE.name}")
    original = (ROOT / relative).read_text(encoding="utf-8")
    count = len(sites(ast.parse(original), args.functions))
    mutants = [mutant(original, i, args.functions) for i in range(count)]
    with tempfile.TemporaryDirectory(prefix="course-mutants-") as tmp:
        copies = [_copy(Path(tmp) / str(n)) for n in range(args.jobs) if not (Path(tmp) / str(n)).mkdir()]
        free = list(copies)
        if run_mutant(copies[0], relative, original, original, args.tests, args.timeout) != "SURVIVED":
            print(f"the tests fail on the unmutated {args.module}: fix them first", file=sys.stderr)
            return 2

        def one(job: tuple[str, str]) -> str:
            copy = free.pop()
            try:
                return run_mutant(copy, relative, job[0], original, args.tests, args.timeout)
            finally:
                free.append(copy)

        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one, mutants))
    survived = 0
    for (_, what), result in zip(mutants, results):
        survived += result == "SURVIVED"
        print(f"{result:<10} {args.module}.{what}")
    print(f"{args.module}: {count} mutants, {count - survived} killed, {survived} survived")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
