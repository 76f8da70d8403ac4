"""Add a chapter's self-check cells: ``python -m course_lib.tooling.selfcheck_cells NOTEBOOK...``.

Three cells go in before the chapter's closing ``**Next:**`` paragraph (split off into a cell of
its own when it ends a longer cell): a ``## Self-check`` heading, the cell that asks the
questions (``selfcheck.ask("NN")``) and the answers cell, tagged ``answers`` and collapsed, that
only the instructor copy keeps. A chapter that has them already is left alone; re-execute the
chapter afterwards (``course_lib.tooling.regen``) to store the cells' outputs.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from course_lib.tooling.student_copy import ANSWERS

INTRO = ("## Self-check\n\n"
         "A few questions on what this chapter's cells measured. Click an answer: the click says right or\n"
         "wrong, and names the section whose cell shows it.")


def cells_for(chapter: str) -> list:
    intro = nbformat.v4.new_markdown_cell(INTRO, id=f"{chapter}-selfcheck-intro")
    ask = nbformat.v4.new_code_cell(f'from course_lib import selfcheck\n\nselfcheck.ask("{chapter}")',
                                    id=f"{chapter}-selfcheck")
    answers = nbformat.v4.new_code_cell(
        "# The answers, for the instructor copy only: the student copy and the slides leave this cell out\n"
        f'selfcheck.answers("{chapter}")', id=f"{chapter}-selfcheck-answers")
    answers.metadata["tags"] = [ANSWERS]
    answers.metadata["jupyter"] = {"outputs_hidden": True}
    for cell in (intro, ask, answers):
        cell.metadata["slideshow"] = {"slide_type": "slide" if cell is intro else "-"}
    return [intro, ask, answers]


def add(path: Path) -> bool:
    """Add the cells to one chapter; False if it has them already."""
    nb = nbformat.read(path, as_version=4)
    chapter = path.name[:2]
    if any(c.get("id") == f"{chapter}-selfcheck" for c in nb.cells):
        return False
    last = nb.cells[-1]
    head, _, tail = last.source.rpartition("\n\n")
    if last.cell_type == "markdown" and head and tail.startswith("**Next:**"):
        last.source = head
        closing = nbformat.v4.new_markdown_cell(tail, id=f"{chapter}-next")
        closing.metadata["slideshow"] = {"slide_type": "-"}
        nb.cells.append(closing)
    if not (nb.cells[-1].cell_type == "markdown" and nb.cells[-1].source.startswith("**Next:**")):
        raise ValueError(f"{path.name} does not end with a **Next:** paragraph")
    nb.cells[-1:-1] = cells_for(chapter)
    nbformat.write(nb, path)
    return True


def main(argv: list[str]) -> int:
    for arg in argv:
        print(f"{'added' if add(Path(arg)) else 'kept '} {arg}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
