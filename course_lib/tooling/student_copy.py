"""Generate the student copy of the course: ``python -m course_lib.tooling.student_copy [OUT]`` (``make student``).

From every chapter: cells tagged ``solution`` are removed, the outputs of cells tagged
``exercise`` or ``check`` are cleared, and everything else stays as it is. The copy goes to a
folder that is not committed (``student/`` by default).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat

from course_lib.paths import NOTEBOOKS, ROOT

SOLUTION, CLEARED = "solution", ("exercise", "check")


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def student_notebook(nb):
    """A copy of ``nb`` without solutions and with exercise outputs cleared."""
    out = nbformat.from_dict(nb)
    out.cells = [c for c in out.cells if SOLUTION not in tags(c)]
    for cell in out.cells:
        if cell.cell_type == "code" and any(t in tags(cell) for t in CLEARED):
            cell.outputs = []
            cell.execution_count = None
    return out


def solution_sources(nb) -> list[str]:
    return [c.source for c in nb.cells if SOLUTION in tags(c)]


def reference_solution(notebook: str, name: str, namespace: dict | None = None):
    """The function ``name`` exactly as the chapter's hidden solution cells define it.

    ``namespace`` supplies what earlier cells of the chapter would have defined.
    """
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    namespace = dict(namespace or {})
    for source in solution_sources(nb):
        exec(compile(source, notebook, "exec"), namespace)
    return namespace[name]


def generate(out_dir: Path = ROOT / "student") -> list[Path]:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    written = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        target = out_dir / path.name
        nbformat.write(student_notebook(nb), target)
        written.append(target)
    for extra in NOTEBOOKS.glob("*.md"):
        shutil.copy(extra, out_dir / extra.name)
    return written


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "student"
    for path in generate(out):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
