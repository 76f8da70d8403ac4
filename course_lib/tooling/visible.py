"""The functions a chapter already shows: what no exercise may be passed by.

``chapter_functions`` runs the definitions of every visible code cell of a chapter (not the task's
starter, check or solution), and of every server text a visible cell holds (a string constant that is
Python with a ``def``); ``fitting`` keeps those that can be called as the exercise's starter is. The
test that no such function passes its exercise grades them (``tests/stdio/test_exercises.py``), and
``make record`` records their rows (``course_lib.tooling.record``).
"""
from __future__ import annotations

import ast
import inspect
import linecache
import signal

import nbformat

from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import tags

NOT_SHOWN = {"solution", "exercise", "check"}


def visible_cells(stem: str) -> list[str]:
    """The sources of the chapter's visible code cells, in order."""
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and not NOT_SHOWN & set(tags(c))]


def _kept(tree: ast.Module) -> ast.Module:
    """The definitions of a cell: imports, functions, classes, and assignments that await nothing."""
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
    scoped = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    awaits = (ast.Await, ast.AsyncFor, ast.AsyncWith)
    body = [n for n in tree.body if isinstance(n, keep)
            and not any(isinstance(x, awaits) for x in ast.walk(n) if not isinstance(n, scoped))]
    return ast.Module(body=body, type_ignores=[])


class _TooSlow(BaseException):
    pass


def _too_slow(signum, frame):
    raise _TooSlow()


def run_definitions(source: str, filename: str, namespace: dict) -> list[str]:
    """Run a cell's (or a server text's) definitions in ``namespace``; the names of the functions
    and classes it defines. The source is registered so that ``inspect.getsource`` reads it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    kept = _kept(tree)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    defined = []
    for node in kept.body:
        previous = signal.signal(signal.SIGALRM, _too_slow)
        signal.setitimer(signal.ITIMER_REAL, 3)  # a cell that runs labs by itself is no definition
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), filename, "exec"), namespace)
        except (Exception, _TooSlow):
            continue  # a definition that needs what only a lab shows: not a candidate
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.append(node.name)
    return defined


def chapter_functions(stem: str) -> tuple[dict, list]:
    """Every function or class a visible cell of the chapter defines, or writes into a server text
    (a string constant of a visible cell that is Python with a ``def``): (namespace, candidates)."""
    namespace: dict = {"__name__": "__main__"}
    candidates = []
    for n, source in enumerate(visible_cells(stem)):
        for name in run_definitions(source, f"<{stem} cell {n}>", namespace):
            candidates.append((name, namespace))
        for node in ast.walk(ast.parse(source)) if source.strip() else ():
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value:
                text_space = {"__name__": "__main__"}
                where = f"<{stem} cell {n} server text at line {node.lineno}>"  # one name per text
                for name in run_definitions(node.value, where, text_space):
                    candidates.append((name, text_space))
    return namespace, candidates


def fitting(stem: str, starter: str) -> tuple[dict, list]:
    """The chapter's visible functions that can be called as its exercise ``starter`` is (the starter
    as the chapter's exercise cells define it): (namespace, candidates), as ``chapter_functions``."""
    namespace, candidates = chapter_functions(stem)
    starter_space = dict(namespace)
    for cell in nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4).cells:
        if "exercise" in tags(cell) and cell.cell_type == "code":
            run_definitions(cell.source, f"<{stem} starter>", starter_space)
    return namespace, [(name, space) for name, space in candidates if fits(space[name], starter_space[starter])]


def fits(obj, starter) -> bool:
    """Whether ``obj`` can be called as the starter is (the same number of positional arguments)."""
    if inspect.isclass(starter):
        return inspect.isclass(obj)
    try:
        wanted = [p for p in inspect.signature(starter).parameters.values() if p.default is p.empty]
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) <= len(wanted) <= len(positional)
