"""Instructor slides, derived from the structure of a chapter.

A chapter needs nothing extra to become a slide deck: its title cell and every markdown cell
holding a ``##`` heading open a new slide, a cell holding a ``###`` heading opens a sub-slide,
and every other cell continues the current one. ``make regen`` writes this metadata into each
chapter (so JupyterLab's RISE extension can present it live), and ``make slides`` exports
reveal.js HTML with nbconvert into the git-ignored ``slides/`` folder, through the course's
template (``deck/course_deck``): no CDN, no jQuery, require.js or MathJax; the pinned reveal.js
of ``fixtures/slides`` (installed by the set-up) is copied next to the decks, so the folder works
offline; the slide is 1280 x 720 and ``deck/deck.js`` fits every slide to it in the browser
(a block too wide is shrunk, then wrapped; a slide a little too tall is shrunk; a taller one
goes on continuation slides). ``make slides-check`` measures the result. A deck never holds a
reference solution or a self-check's answers: cells tagged ``solution`` or ``answers`` are left
out of the export (reveal.js would show a cell's source even when JupyterLab keeps it
collapsed), and an exercise check (a cell tagged ``check``) shows the first lines of its scorecard
and its total, a reference table (a cell tagged ``reference``) its first lines (``on_slide``)::

    python -m course_lib.tooling.slides notebooks/01_pagination.ipynb ... [--out slides]
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

from course_lib.paths import ROOT

SLIDE, SUBSLIDE, CONTINUE = "slide", "subslide", "-"
CHECK_LINES = 20  # a check cell's scorecard on a slide: its first lines, then its total (16 px code: ~30 lines a slide)
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


TRIMMED = {"check": "scorecard", "reference": "table"}  # tag -> what a slide shows the start of


def trimmed(cell) -> str | None:
    """What of ``cell``'s output a slide shows only the start of (its tag's word), or None."""
    return next((what for tag, what in TRIMMED.items() if tag in cell.get("metadata", {}).get("tags", [])), None)


def on_slide(lines: list[str], what: str = "scorecard") -> list[str]:
    """What a slide shows of an exercise check's scorecard: its first lines and its total. The
    whole card stays in the notebook (a starter's card of 25 failing scenarios fills pages)."""
    if len(lines) <= CHECK_LINES + 2:
        return lines
    more = len(lines) - CHECK_LINES - 1
    return [*lines[:CHECK_LINES], f"… {more} more lines: the whole {what} is in the notebook", lines[-1]]


def _trim_checks(nb) -> None:
    """Each check's scorecard and each reference table as a slide shows it (``on_slide``), as plain text."""
    for cell in nb.cells:
        what = trimmed(cell)
        if what is None:
            continue
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/plain") if "data" in output else None
            if text is not None:
                text = text if isinstance(text, str) else "".join(text)
                output["data"] = {"text/plain": "\n".join(on_slide(text.rstrip("\n").splitlines(), what))}


DECK = Path(__file__).with_name("deck")  # the deck template (course_deck/), deck.css, deck.js
REVEAL = ROOT / "fixtures" / "slides" / "node_modules" / "reveal.js"  # pinned in fixtures/slides
REVEAL_DIR = "reveal.js"  # where a deck finds its reveal.js: next to it, in the same folder
THEME = "white"  # reveal.js's theme with its own fonts (others import fonts from the network)
# What a deck loads of reveal.js, copied next to the decks: the script, its style sheets, the fonts.
REVEAL_FILES = ("dist/reveal.js", "dist/reveal.css", f"dist/theme/{THEME}.css", "dist/theme/fonts/source-sans-pro",
                "LICENSE")
INSTALL = ("the slides need the course's pinned reveal.js (fixtures/slides): make slides installs it, or by hand\n"
           "  .venv/bin/python -m course_lib.chapters.peers_lab install")


class RevealMissing(RuntimeError):
    """The pinned reveal.js is not installed: the message says how to install it."""


def reveal_version() -> str:
    """The installed reveal.js's version, checked against its exact pin in fixtures/slides."""
    import json

    manifest = REVEAL / "package.json"
    pin = json.loads((ROOT / "fixtures" / "slides" / "package.json").read_text())["dependencies"]["reveal.js"]
    if not manifest.exists():
        raise RevealMissing(f"reveal.js is not installed.\n{INSTALL}")
    version = json.loads(manifest.read_text())["version"]
    if version != pin:
        raise RevealMissing(f"reveal.js is {version}, the course pins {pin}.\n{INSTALL}")
    return version


@functools.cache
def _exporter(course_deck: bool = False):
    """One exporter for every chapter, as ``jupyter nbconvert`` does: its templates compile once.
    ``course_deck``: the course's offline template (nbconvert's own reveal template otherwise,
    which loads reveal.js, require.js, jQuery and MathJax from public CDNs)."""
    from nbconvert import SlidesExporter

    if not course_deck:
        return SlidesExporter(reveal_scroll=True)
    return SlidesExporter(extra_template_basedirs=[str(DECK)], template_name="course_deck",
                          reveal_url_prefix=REVEAL_DIR, reveal_theme=THEME,
                          exclude_input_prompt=True, exclude_output_prompt=True)


def install_reveal(out_dir: Path) -> None:
    """Copy what a deck loads of the pinned reveal.js into ``out_dir/reveal.js`` (when missing or stale)."""
    import shutil

    reveal_version()
    target = out_dir / REVEAL_DIR
    for name in REVEAL_FILES:
        source, dest = REVEAL / name, target / name
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
        elif not dest.exists() or dest.read_bytes() != source.read_bytes():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
    shutil.copyfile(REVEAL / "package.json", target / "package.json")


def deck_nb(path: Path):
    """The notebook a deck shows: slide metadata, no solution or answers cell, checks trimmed."""
    import nbformat

    from course_lib.tooling.student_copy import without_solutions

    nb = nbformat.read(path, as_version=4)
    annotate(nb)
    nb = without_solutions(nb)
    _trim_checks(nb)
    return nb


def render(nb, name: str) -> str:
    """A deck's HTML for ``nb`` (as ``deck_nb`` gives it), with the course's CSS and fitting script."""
    assets = {"css": (DECK / "deck.css").read_text(encoding="utf-8"),
              "js": (DECK / "deck.js").read_text(encoding="utf-8")}
    body, _ = _exporter(True).from_notebook_node(nb, resources={"metadata": {"name": name}, "course_deck": assets})
    return body


def export(path: Path, out_dir: Path) -> Path:
    """Export one chapter as a reveal.js deck (stored outputs, nothing executed, no solution cell)
    into ``out_dir``, with the pinned reveal.js next to it: the folder works offline."""
    install_reveal(out_dir)
    target = out_dir / f"{path.stem}.slides.html"
    target.write_text(render(deck_nb(path), path.stem), encoding="utf-8")
    return target


def _digest(*parts: bytes) -> str:
    import hashlib

    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()[:16]


def exported(path: Path) -> Path:
    """The deck of ``path`` as ``export`` writes it, made once per content: every check of a run
    (the deck tests, the self-check tests, ``make slides-check``), in any process, reads the same
    file from a shared folder of the temporary directory. The folder is keyed by what makes a deck
    (this module, the deck template, reveal.js's version) and the file by the notebook's bytes."""
    import os
    import shutil
    import tempfile

    made_by = [Path(__file__), *sorted(p for p in DECK.rglob("*") if p.is_file())]
    folder = Path(tempfile.gettempdir()) / "course-decks" / _digest(
        reveal_version().encode(), *(p.read_bytes() for p in made_by))
    if not (folder / REVEAL_DIR).is_dir():  # reveal.js copied whole, then moved in at once
        folder.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=".install-", dir=folder.parent))
        install_reveal(fresh)
        try:
            os.rename(fresh, folder)
        except OSError:  # another process moved its copy in first
            shutil.rmtree(fresh, ignore_errors=True)
    target = folder / f"{path.stem}-{_digest(path.read_bytes())}.slides.html"
    if not target.exists():
        for stale in folder.glob(f"{path.stem}-*.slides.html"):  # not the target another process just made
            if stale != target:
                stale.unlink(missing_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_text(render(deck_nb(path), path.stem), encoding="utf-8")
        os.replace(partial, target)
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
