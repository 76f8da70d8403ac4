"""Instructor slides, derived from the structure of a chapter.

A chapter needs nothing extra to become a slide deck: its title cell and every markdown cell
holding a ``##`` heading open a new slide, a cell holding a ``###`` heading opens a sub-slide,
and every other cell continues the current one. ``make regen`` writes this metadata into each
chapter (so JupyterLab's RISE extension can present it live), and ``make slides`` exports
reveal.js HTML with nbconvert into the git-ignored ``slides/`` folder. A deck never holds a
reference solution: cells tagged ``solution`` are left out of the export (reveal.js would show
a cell's source even when JupyterLab keeps it collapsed)::

    python -m course_lib.tooling.slides notebooks/01_pagination.ipynb ... [--out slides]
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

from course_lib.paths import ROOT

SLIDE, SUBSLIDE, CONTINUE = "slide", "subslide", "-"
_HEADING = re.compile(r"^(#{1,6})\s")


def heading_levels(source: str) -> list[int]:
    """Levels of the markdown headings in a cell (lines inside code fences are not headings)."""
    levels, fenced = [], False
    for line in source.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = _HEADING.match(line)
        if match and not fenced:
            levels.append(len(match.group(1)))
    return levels


def slide_type(cell, first: bool) -> str:
    """The reveal.js slide type a cell gets from its position and its headings.

    A markdown cell holding a ``#``/``##`` heading (anywhere in it) opens a slide, one holding
    a ``###`` heading opens a sub-slide; every other cell continues the current slide.
    """
    if first:
        return SLIDE
    if cell.cell_type != "markdown":
        return CONTINUE
    source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
    levels = heading_levels(source)
    if not levels:
        return CONTINUE
    return SLIDE if min(levels) <= 2 else SUBSLIDE if min(levels) == 3 else CONTINUE


def annotate(nb) -> int:
    """Set ``slideshow.slide_type`` on every cell (idempotent); return the number of slides."""
    slides = 0
    for i, cell in enumerate(nb.cells):
        kind = slide_type(cell, i == 0)
        cell.metadata["slideshow"] = {"slide_type": kind}
        slides += kind in (SLIDE, SUBSLIDE)
    return slides


def count(nb) -> int:
    """Slides and sub-slides a notebook's stored metadata asks for."""
    return sum(1 for c in nb.cells
               if c.metadata.get("slideshow", {}).get("slide_type") in (SLIDE, SUBSLIDE))


@functools.cache
def _exporter():
    """One exporter for every chapter, as ``jupyter nbconvert`` does: its templates compile once."""
    from nbconvert import SlidesExporter

    return SlidesExporter(reveal_scroll=True)


def export(path: Path, out_dir: Path) -> Path:
    """Export one chapter as a reveal.js deck (stored outputs, nothing executed, no solution cell)."""
    import nbformat

    from course_lib.tooling.student_copy import without_solutions

    nb = nbformat.read(path, as_version=4)
    annotate(nb)
    nb = without_solutions(nb)
    body, _ = _exporter().from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{path.stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str]) -> int:
    out = ROOT / "slides"
    paths = []
    args = iter(argv)
    for arg in args:
        if arg == "--out":
            out = Path(next(args))
        else:
            paths.append(Path(arg))
    if not paths:
        print("usage: python -m course_lib.tooling.slides NOTEBOOK... [--out DIR]", file=sys.stderr)
        return 2
    for path in paths:
        print(f"slides {export(path, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
