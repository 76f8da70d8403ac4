"""The student copy of the course: ``python -m course_lib.tooling.student_copy [OUT]`` (``make student``).

From every chapter the cells tagged ``solution`` are removed (the reference solution and the
heading that introduces it), and so are the cells tagged ``answers`` (the answers of the
chapter's self-check, ``course_lib.selfcheck``); the cells tagged ``reveal`` (the cases that
answer a self-check's transfer questions, run after the question) keep their code and lose their
outputs, so a student predicts first and runs them after; everything else stays as it is,
outputs included: the demonstrations keep their results, and each check cell keeps its stored
scorecard of the untouched starter (all FAIL), the example of what a student will see. The
copy goes to a folder that is not committed (``student/`` by default), and only where a file
does not exist yet: a student's work is never overwritten (delete a file to get it fresh).
The copy also gets an empty ``.progress.json``, where its check cells record their scores
(``course_lib.progress``).
``make lab`` runs this first and then opens JupyterLab on the copy.

``reference_solution`` loads a chapter's reference function for the tests, from the full chapter.
"""
from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import nbformat

from course_lib.cells import ANSWERS, REVEAL, SOLUTION, tags  # noqa: F401 (the tooling imports them from here)
from course_lib.paths import NOTEBOOKS, ROOT


def dropped(cell) -> bool:
    """A cell for the instructor only: a reference solution or a self-check's answers."""
    return SOLUTION in tags(cell) or ANSWERS in tags(cell)


def without_solutions(nb):
    """A copy of ``nb`` without its solution and answers cells, and without the stored outputs of
    its ``reveal`` cells; every other cell and output unchanged."""
    out = nbformat.from_dict(nb)
    out.cells = [c for c in out.cells if not dropped(c)]
    for cell in out.cells:
        if REVEAL in tags(cell) and cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return out



def solution_sources(nb) -> list[str]:
    """The code of the solution cells (a markdown cell tagged ``solution`` introduces one)."""
    return [c.source for c in nb.cells if SOLUTION in tags(c) and c.cell_type == "code"]


def definitions(source: str, filename: str = "<solution>"):
    """A solution cell's code without its top-level ``await`` statements (the grading call that
    ends the cell): what defines the reference, compiled for ``exec``."""
    tree = ast.parse(source, filename)
    tree.body = [node for node in tree.body
                 if not any(isinstance(n, ast.Await) for n in ast.walk(node))
                 or isinstance(node, (ast.AsyncFunctionDef, ast.FunctionDef, ast.ClassDef))]
    return compile(tree, filename, "exec")


def reference_solution(notebook: str, name: str, namespace: dict | None = None):
    """The function ``name`` (``reference_my_walk`` …) exactly as the chapter's hidden solution
    cells define it; the grading call that ends a solution cell is not run.

    ``namespace`` supplies what earlier cells of the chapter would have defined.
    """
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    namespace = dict(namespace or {})
    for source in solution_sources(nb):
        exec(definitions(source, notebook), namespace)
    return namespace[name]


def generate(out_dir: Path = ROOT / "student") -> tuple[list[Path], list[Path]]:
    """Write the copy of every chapter (and the notes next to them) that ``out_dir`` lacks.

    Returns (written, kept): a file that exists already is kept as it is.
    """
    from course_lib import progress

    out_dir.mkdir(parents=True, exist_ok=True)
    progress.start(out_dir)
    written, kept = [], []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")) + sorted(NOTEBOOKS.glob("*.md")):
        target = out_dir / path.name
        if target.exists():
            kept.append(target)
            continue
        if path.suffix == ".ipynb":
            nbformat.write(without_solutions(nbformat.read(path, as_version=4)), target)
        else:
            shutil.copy(path, target)
        written.append(target)
    return written, kept


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve() if argv else ROOT / "student"
    written, kept = generate(out)
    for path in written:
        print(f"wrote {_shown(path)}")
    if kept:
        print(f"kept {len(kept)} existing file(s) in {_shown(out)} (delete one to get a fresh copy)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
