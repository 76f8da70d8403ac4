"""The exercise convention in the chapters: task, starter, check, solution, in that order.

The solution defines ``reference_<student name>`` and grades it; it never rebinds a name the
student's cell defines, so running a chapter top to bottom (Run All) leaves the student's
function in place: the check run after the solution still grades the starter.
"""
import ast
import inspect
import signal
import pytest
from mcp.types import PaginatedRequestParams

from course_lib import CatalogError
from course_lib.grading.runner import FAIL_FAST
from course_lib.tooling.student_copy import tags

from test_exercises_unit import IDS, PAIRS, load, the_cell, words


async def run_cell(source: str, namespace: dict):
    """Run one code cell as IPython does (top-level ``await``); return its last expression's value."""
    tree = ast.parse(source)
    namespace.pop("_cell_value", None)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tree.body[-1] = ast.Assign([ast.Name("_cell_value", ast.Store())], tree.body[-1].value)
        ast.fix_missing_locations(tree)
    result = eval(compile(tree, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
    if inspect.iscoroutine(result):
        await result
    return namespace.get("_cell_value")


@pytest.mark.anyio
async def test_run_all_never_replaces_the_students_function():
    """Starter, check, solution, check again: the second check still grades the starter."""
    nb = load("01_pagination")
    namespace = {"page_params": lambda c: None if c is None else PaginatedRequestParams(cursor=c),
                 "CatalogError": CatalogError}
    _, starter = the_cell(nb, "exercise")
    _, check = the_cell(nb, "check")
    _, solution = the_cell(nb, "solution")
    await run_cell(starter.source, namespace)
    student = namespace["my_walk"]
    first = await run_cell(check.source, namespace)
    by_reference = await run_cell(solution.source, namespace)
    second = await run_cell(check.source, namespace)
    assert namespace["my_walk"] is student
    assert by_reference.passed
    for card in (first, second):
        assert not card.passed and not any(v.passed for v in card.verdicts)
        assert words(card.text()).endswith("0/12 scenarios pass")
    assert second.text() == first.text()


# -- no exercise can be passed by a function its chapter already shows ---------------------------

def _kept(tree: ast.Module) -> ast.Module:
    """The definitions of a cell: imports, functions, classes, and assignments that await nothing."""
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
    body = [n for n in tree.body if isinstance(n, keep) and not any(isinstance(x, (ast.Await, ast.AsyncFor,
                                                                                  ast.AsyncWith)) for x in ast.walk(n)
                                                                     if not isinstance(n, (ast.FunctionDef,
                                                                                           ast.AsyncFunctionDef,
                                                                                           ast.ClassDef)))]
    return ast.Module(body=body, type_ignores=[])


class _TooSlow(BaseException):
    pass


def _too_slow(signum, frame):
    raise _TooSlow()


def _run_definitions(source: str, filename: str, namespace: dict) -> list[str]:
    """Run a cell's (or a server text's) definitions in ``namespace``; the names of the functions
    and classes it defines. The source is registered so that ``inspect.getsource`` reads it."""
    import linecache

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
    visible = [c for c in load(stem).cells if c.cell_type == "code"
               and not {"solution", "exercise", "check"} & set(tags(c))]
    for n, cell in enumerate(visible):
        for name in _run_definitions(cell.source, f"<{stem} cell {n}>", namespace):
            candidates.append((name, namespace))
        for node in ast.walk(ast.parse(cell.source)) if cell.source.strip() else ():
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value:
                text_space = {"__name__": "__main__"}
                where = f"<{stem} cell {n} server text at line {node.lineno}>"  # one name per text
                for name in _run_definitions(node.value, where, text_space):
                    candidates.append((name, text_space))
    return namespace, candidates


def _fits(obj, starter) -> bool:
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


KNOWN_COPIES: dict[str, str] = {}  # chapter -> why a visible cell still passes its exercise


@pytest.mark.anyio
@pytest.mark.parametrize("stem, name", [
    pytest.param(s, n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_COPIES[s])) if s in KNOWN_COPIES
    else (s, n) for s, n, _ in PAIRS], ids=IDS)
async def test_no_function_a_visible_cell_defines_passes_the_exercise(stem, name):
    nb = load(stem)
    starter_space: dict = {"__name__": "__main__"}
    _, check = the_cell(nb, "check", name)
    _, starter = the_cell(nb, "exercise", name)
    namespace, candidates = chapter_functions(stem)
    starter_space.update(namespace)
    _run_definitions(starter.source, f"<{stem} starter>", starter_space)
    fitting = [(n, space) for n, space in candidates if _fits(space[n], starter_space[name])]
    graded = {}
    # Only "it fails" is asked: a grading ends at its first failing scenario (a candidate that
    # fails none is graded on every scenario, as the check cell grades it).
    fail_fast = FAIL_FAST.set(True)
    try:
        for candidate, space in fitting:
            cell_space = {**namespace, **space, name: space[candidate]}
            card = await run_cell(check.source, cell_space)
            graded[candidate] = card.passed
    finally:
        FAIL_FAST.reset(fail_fast)
    assert not any(graded.values()), f"these cells' functions pass the exercise: {graded}"
