"""A chapter's reference solution for the grader tests, before and after the exercise convention.

A chapter that follows the convention defines ``reference_<name>`` in its solution cell and ends
that cell with ``await grade_x(reference_<name>)``; an older chapter defines ``<name>`` itself.
"""
import ast

import nbformat

from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import solution_sources


def _awaits_at_top(statement: ast.stmt) -> bool:
    """Whether the statement awaits outside any function (the solution cell's own check)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    return any(isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for node in ast.walk(statement))


def reference(notebook: str, name: str, namespace: dict | None = None):
    """``(function, follows_convention)``: ``reference_<name>`` if the chapter defines it, else ``name``.

    The solution cells run in ``namespace`` (what the chapter's earlier cells define), without
    their top-level awaits: the grading call at the end of a convention cell is not run here.
    """
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    namespace = dict(namespace or {})
    for source in solution_sources(nb):
        tree = ast.parse(source)
        tree.body = [s for s in tree.body if not _awaits_at_top(s)]
        exec(compile(tree, notebook, "exec"), namespace)
    if f"reference_{name}" in namespace:
        return namespace[f"reference_{name}"], True
    return namespace[name], False
