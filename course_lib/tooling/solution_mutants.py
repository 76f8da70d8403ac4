"""Wrong solutions, generated: every mutant of every reference solution must fail its exercise's check.

``python -m course_lib.tooling.solution_mutants [NOTEBOOK ...] [--limit N]`` (``make solution-mutants``).
Each chapter's hidden solution cell defines ``reference_<name>`` and ends with the check that grades
it (``await grade_...(reference_<name>, ...)``). Here that cell is mutated, one plausible student
mistake at a time, inside the ``reference_`` functions only: a changed comparison, a prefix match for
an equality, a dropped condition (a branch never taken), a dropped clause of an ``and``/``or``, a
truthiness test for a type or ``None`` test, a missing branch (a ``raise`` that never happens), one
refusal code for another. Each mutant runs its cell's own check against real servers, as the
chapter runs it: KILLED when its scorecard fails, SURVIVED when it passes. A survivor is a missing
probe, unless ``fixtures/grading/equivalent_mutants.json`` lists it as equivalent, with its reason
(``{"NN_chapter:name": {"<the mutant, without its line number>": "why it is equivalent"}}``).

The cell runs in a namespace made of what the chapter's earlier cells import and define (their
top-level imports, functions and classes; nothing they would run). Prints each mutant as it is
graded (a killed one with the first row that failed it and what that row saw), then, per exercise:
mutants, killed, equivalent, surviving, and each survivor; exit status 1 when any survived.
"""
from __future__ import annotations

import argparse
import ast
import asyncio
import copy
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.paths import NOTEBOOKS, fixture
from course_lib.tooling.student_copy import SOLUTION, tags

EQUIVALENT = fixture("grading", "equivalent_mutants.json")
SWAPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
         ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
CODES = {-32602: -32603, -32603: -32602, -32002: -32602, -32600: -32602, -32601: -32602, -32700: -32600}
CODE_NAMES = {"INVALID_PARAMS": "INTERNAL_ERROR", "INTERNAL_ERROR": "INVALID_PARAMS",
              "METHOD_NOT_FOUND": "INVALID_PARAMS", "INVALID_REQUEST": "INVALID_PARAMS"}


@dataclass
class Mutant:
    description: str
    source: str


@dataclass
class Tally:
    exercise: str
    killed: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def without_line(description: str) -> str:
    """A mutant's description without its line number: how the list of equivalent mutants names it."""
    return re.sub(r"^(\w+):\d+ ", r"\1 ", description)


def _parse(expr: str) -> ast.expr:
    return ast.parse(expr, mode="eval").body


def _replacements(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(what changed, the node that replaces ``node``) for each mistake this node can carry."""
    text = ast.unparse(node)
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0])
        if op in SWAPS:
            swapped = copy.deepcopy(node)
            swapped.ops = [SWAPS[op]()]
            out.append((f"changed comparison: {text} -> {ast.unparse(swapped)}", swapped))
        left, right = ast.unparse(node.left), ast.unparse(node.comparators[0])
        if op is ast.Eq:
            out.append((f"prefix match for equality: {text}",
                        _parse(f"str({left}).startswith(str({right}))")))
        if op is ast.Is and right == "None":
            out.append((f"truthiness for a None test: {text} -> not {left}", _parse(f"not {left}")))
        if op is ast.IsNot and right == "None":
            out.append((f"truthiness for a None test: {text} -> bool({left})", _parse(f"bool({left})")))
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and node.args:
        out.append((f"truthiness for a type test: {text}", _parse(f"bool({ast.unparse(node.args[0])})")))
    if isinstance(node, ast.BoolOp) and len(node.values) == 2:
        for kept in node.values:
            out.append((f"dropped clause: {text} -> {ast.unparse(kept)}", copy.deepcopy(kept)))
    if isinstance(node, ast.Constant) and node.value in CODES and not isinstance(node.value, bool):
        out.append((f"another refusal code: {node.value} -> {CODES[node.value]}", ast.Constant(CODES[node.value])))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and -node.operand.value in CODES:
        code = -node.operand.value
        out.append((f"another refusal code: {code} -> {CODES[code]}", ast.Constant(CODES[code])))
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    if name in CODE_NAMES and isinstance(getattr(node, "ctx", None), ast.Load):
        other = copy.deepcopy(node)
        if isinstance(other, ast.Attribute):
            other.attr = CODE_NAMES[name]
        else:
            other.id = CODE_NAMES[name]
        out.append((f"another refusal code: {name} -> {CODE_NAMES[name]}", other))
    return out


def mutants(cell_source: str) -> list[Mutant]:
    """Every single-site mutant of the ``reference_`` functions of a solution cell."""
    tree = ast.parse(cell_source)
    targets = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and n.name.startswith(("reference_", "Reference"))]
    found: list[Mutant] = []
    for top in targets:
        for parent in ast.walk(top):
            for name, value in ast.iter_fields(parent):
                items = value if isinstance(value, list) else [value]
                for i, child in enumerate(items):
                    if not isinstance(child, ast.AST):
                        continue
                    where = f"{top.name}:{getattr(child, 'lineno', '?')}"
                    options = _replacements(child)
                    if isinstance(parent, (ast.If, ast.While)) and name == "test":
                        options.append((f"dropped condition: if {ast.unparse(child)} -> never", ast.Constant(False)))
                    if isinstance(child, ast.Raise):
                        options.append((f"missing branch: {ast.unparse(child)[:60]} -> pass", ast.Pass()))
                    for description, replacement in options:
                        found.append(Mutant(f"{where} {description}", _swap(tree, parent, name, i, replacement)))
    return found


def _swap(tree: ast.Module, parent: ast.AST, name: str, index: int, replacement: ast.AST) -> str:
    """The source of ``tree`` with ``parent.name[index]`` (or ``parent.name``) replaced, the tree untouched."""
    value = getattr(parent, name)
    saved = value[index] if isinstance(value, list) else value
    if isinstance(value, list):
        value[index] = replacement
    else:
        setattr(parent, name, replacement)
    try:
        return ast.unparse(ast.fix_missing_locations(tree))
    finally:
        if isinstance(value, list):
            value[index] = saved
        else:
            setattr(parent, name, saved)


def chapter_namespace(cells: list[str]) -> dict:
    """What the chapter's earlier cells import and define (nothing they would run)."""
    namespace: dict = {"__name__": "__course_mutant__"}
    for source in cells:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                try:
                    exec(compile(ast.Module([node], []), "<chapter>", "exec"), namespace)
                except Exception:  # noqa: BLE001 (a definition that needs a cell's state is not needed here)
                    pass
    return namespace


async def grade(cell_source: str, namespace: dict):
    """Run a (mutated) solution cell, its check included; the scorecard its last line returns. The
    cell's source is registered as a notebook cell's is, so a check that reads a function's source
    (to run it in a child interpreter or a server) finds it."""
    import linecache

    tree = ast.parse(cell_source)
    last = tree.body[-1]
    if isinstance(last, ast.Expr):
        tree.body[-1] = ast.Assign([ast.Name("__card__", ast.Store())], last.value)
    source = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    filename = f"<solution-mutant-{len(linecache.cache)}-{abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    run = eval(code, namespace)  # noqa: S307 (the course's own solution cell, mutated)
    if asyncio.iscoroutine(run):
        await run
    return namespace.get("__card__")


def solution_cells(path: Path) -> list[tuple[list[str], str]]:
    """(the code cells before it, the cell) for each solution cell of a chapter."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    out, before = [], []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if SOLUTION in tags(cell) and "reference_" in cell.source:
            out.append((list(before), cell.source))
        elif SOLUTION not in tags(cell):
            before.append(cell.source)
    return out


def graded_name(source: str) -> str:
    """The reference the cell's last line grades (``await grade_x(reference_my_page)``: ``reference_my_page``)."""
    last = ast.parse(source).body[-1]
    call = getattr(getattr(last, "value", None), "value", None)
    first = call.args[0] if isinstance(call, ast.Call) and call.args else None
    if isinstance(first, ast.Name) and first.id.startswith(("reference_", "Reference")):
        return first.id
    return next((n.name for n in ast.parse(source).body if getattr(n, "name", "").startswith("reference_")),
                "reference")


async def run_chapter(path: Path, equivalent: dict, limit: int | None = None, say=print) -> list[Tally]:
    tallies = []
    for before, source in solution_cells(path):
        name = graded_name(source)
        tally = Tally(f"{path.stem}:{name.removeprefix('reference_')}")
        known = equivalent.get(tally.exercise, {})
        base = await grade(source, chapter_namespace(before))
        if base is None or not base.passed:
            tally.errors.append("the reference itself does not pass its check")
            tallies.append(tally)
            continue
        for mutant in mutants(source)[:limit]:
            try:
                card = await grade(mutant.source, chapter_namespace(before))
            except Exception as exc:  # noqa: BLE001 (a mutant that breaks the check's own call)
                tally.errors.append(f"{mutant.description}: {type(exc).__name__}: {exc}"[:160])
                continue
            bucket = tally.killed if card is None or not card.passed else \
                tally.equivalent if without_line(mutant.description) in known else tally.survived
            bucket.append(mutant.description)
            say(f"  {'killed    ' if bucket is tally.killed else 'SURVIVED  ' if bucket is tally.survived else 'equivalent'}"
                f" {tally.exercise} {mutant.description}"[:160])
            if bucket is tally.killed and (row := killer(card)):
                say(f"             by {row}"[:160])
        tallies.append(tally)
    return tallies


def killer(card) -> str | None:
    """The first row that failed the mutant, with what it observed (a row is one scenario value)."""
    failed = next((v for v in getattr(card, "verdicts", ()) if not v.passed), None)
    return None if failed is None else f"{failed.scenario.name} ({failed.scenario.era}): {failed.observed}"


def table(tallies: list[Tally]) -> str:
    from course_lib.display import Table

    return Table(["exercise", "mutants", "killed", "equivalent", "surviving", "errors"],
                 [[t.exercise, len(t.killed) + len(t.equivalent) + len(t.survived), len(t.killed),
                   len(t.equivalent), len(t.survived), len(t.errors)] for t in tallies],
                 "Mutants of the reference solutions, each graded by its exercise's check").text()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_lib.tooling.solution_mutants")
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="at most N mutants a solution (a quick look)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    equivalent = json.loads(EQUIVALENT.read_text(encoding="utf-8")) if EQUIVALENT.exists() else {}

    async def every() -> list[Tally]:
        out = []
        for path in paths:
            out += await run_chapter(path.resolve(), equivalent, args.limit)
        return out

    tallies = asyncio.run(every())
    print(table(tallies))
    for t in tallies:
        for line in t.survived:
            print(f"SURVIVED {t.exercise}: {line}")
        for line in t.errors:
            print(f"error    {t.exercise}: {line}")
    return 1 if any(t.survived or t.errors for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
