"""The student's own functions from earlier chapters, for the capstone to compose.

``yours("01_pagination", "my_walk")`` runs the definitions of the student's copy of that chapter (the notebook
next to the kernel, else the course's) and returns the function as its exercise cell left it, the capstone's
unavailable names stood in. A ``reference_...`` name comes from the solution cells (the instructor copy)."""
from __future__ import annotations

import ast
import contextlib
import linecache
from pathlib import Path
from typing import Any

import nbformat

from course_lib.cells import SOLUTION, tags
from course_lib.display import Table
from course_lib.grading.battery import read_spec
from course_lib.grading.unavailable import without
from course_lib.paths import NOTEBOOKS

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_KEPT = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, *_DEFINITIONS)
_SKIPPED_TAGS = {"check", "answers"}
EXERCISE = "exercise"


def _define(source: str, filename: str, namespace: dict) -> None:
    """Run the definitions of one cell in ``namespace``; a statement that awaits or fails is left out."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for getsource
    for node in tree.body:
        awaits = any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in ast.walk(node))
        if not isinstance(node, _KEPT) or (awaits and not isinstance(node, _DEFINITIONS)):
            continue
        with contextlib.suppress(Exception):  # a definition that needs what only a lab shows: the cells say so
            exec(compile(ast.Module(body=[node], type_ignores=[]), filename, "exec"), namespace)


def _exercise(path: Path) -> str:
    return next(c.source for c in nbformat.read(path, as_version=4).cells if EXERCISE in tags(c))


def load(chapter: str, name: str, unavailable: tuple[str, ...] = ()) -> Any:
    """``name`` as the cells of ``chapter`` define it (the solution cells only for ``reference_...``)."""
    here = Path.cwd() / f"{chapter}.ipynb"  # the student's copy, next to the running notebook
    path = here if here.exists() else NOTEBOOKS / f"{chapter}.ipynb"
    reference = name.startswith("reference_")
    namespace: dict = {"__name__": f"course_chapter_{chapter.split('_')[0]}"}
    for n, cell in enumerate(nbformat.read(path, as_version=4).cells):
        kinds = set(tags(cell))
        if cell.cell_type != "code" or kinds & _SKIPPED_TAGS or (SOLUTION in kinds and not reference):
            continue
        _define(cell.source, f"<{path.name} cell {n}>", namespace)
    if name not in namespace:
        raise NameError(f"{path.name} defines no {name}: run and save that chapter's exercise cell first", name=name)
    function = without(namespace[name], unavailable)
    function.chapter, function.source_notebook = chapter, path
    function.starter = not reference and _exercise(path) == _exercise(NOTEBOOKS / path.name)
    return function


def yours(chapter: str, name: str, battery: str = "capstone") -> Any:
    """The student's ``name`` from ``chapter``, as the capstone runs it (``battery``'s unavailable names)."""
    return load(chapter, name, tuple(read_spec(battery).get("unavailable", ())))


def loaded(*functions: Any) -> Table:
    """Where each function came from, and whether it is still that chapter's starter."""
    rows = [[f.chapter, f.__name__, "still the starter: write it there first" if f.starter else "yours"]
            for f in functions]
    return Table(["chapter", "function", "in your copy"], rows)
