"""Every chapter carries slide metadata derived from its headings and exports as reveal.js."""
from html.parser import HTMLParser

import nbformat
import pytest

from course_lib.tooling import slides
from course_lib.paths import NOTEBOOKS

CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


class _Sections(HTMLParser):
    """Counts reveal.js <section> elements per nesting depth (1: slides, 2: vertical sub-slides)."""

    def __init__(self):
        super().__init__()
        self.depth, self.counts = 0, {}

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.depth += 1
            self.counts[self.depth] = self.counts.get(self.depth, 0) + 1

    def handle_endtag(self, tag):
        if tag == "section":
            self.depth -= 1


@pytest.fixture(scope="module")
def exported():
    return {path.stem: slides.exported(path) for path in CHAPTERS}


def test_slide_types_follow_the_headings():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell("## Section"), nbformat.v4.new_markdown_cell("plain text"),
                nbformat.v4.new_markdown_cell("a closing line\n\n## Next section"),
                nbformat.v4.new_markdown_cell("### Detail"),
                nbformat.v4.new_markdown_cell("```python\n## a comment in a code block\n```")]
    assert slides.annotate(nb) == 4
    assert [c.metadata["slideshow"]["slide_type"] for c in nb.cells] == [
        "slide", "-", "slide", "-", "slide", "subslide", "-"]
    before = nbformat.writes(nb)
    slides.annotate(nb)
    assert nbformat.writes(nb) == before, "annotating twice changes nothing"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_committed_metadata_is_the_derived_one(path):
    """`make regen` wrote the slide metadata; a chapter needs nothing by hand."""
    nb = nbformat.read(path, as_version=4)
    stored = [c.metadata.get("slideshow") for c in nb.cells]
    slides.annotate(nb)
    assert stored == [c.metadata["slideshow"] for c in nb.cells]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_exports_a_sensible_deck(path, exported):
    nb = nbformat.read(path, as_version=4)
    sections = sum(1 for c in nb.cells if c.cell_type == "markdown"
                   and any(level <= 2 for level in slides.heading_levels(c.source)))
    count = slides.count(nb)
    assert sections <= count <= len(nb.cells)
    assert count >= 2, "a title slide and at least one section"
    html = exported[path.stem].read_text(encoding="utf-8")
    parser = _Sections()
    parser.feed(html)
    from course_lib.tooling.student_copy import dropped

    shown = [c for c in nb.cells if not dropped(c)]  # the deck leaves solutions and self-check answers out
    kinds = [c.metadata["slideshow"]["slide_type"] for c in shown]
    assert parser.counts.get(1) == kinds.count("slide")
    assert parser.counts.get(2) == kinds.count("slide") + kinds.count("subslide")
    assert "reveal" in html and nb.cells[0].source.splitlines()[0].lstrip("# ") in html


def _widget_notebook():
    """A chapter-like notebook whose code cell displayed a WireViewer, stored as `make regen` stores it."""
    from IPython.core.formatters import DisplayFormatter

    from course_lib.wire import Wire
    from course_lib.tooling.regen import normalise
    from course_lib.wire_viewer import WireViewer

    wire = Wire()
    wire.record("→", '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')
    wire.record("←", '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid cursor"}}')
    data, _ = DisplayFormatter().format(WireViewer(wire))
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("WireViewer(lab.wire)", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    nb.cells = [nbformat.v4.new_markdown_cell("# A widget"), nbformat.v4.new_markdown_cell("## The transcript"), cell]
    normalise(nb)
    return nb


def test_a_widget_is_stored_with_a_still_of_its_first_state():
    output = _widget_notebook().cells[2].outputs[0]
    assert sorted(output.data) == ["text/html", "text/plain"], "the random widget view is dropped, the still kept"
    still = output.data["text/html"]
    assert still.startswith("<div class='course-widget-still'>") and "<table class='course-table'" in still
    assert "class='course-refused'" in still and "error -32602: Invalid cursor" in still
    assert "(run the cell in JupyterLab" not in still


def test_the_static_deck_shows_the_widget_still_not_a_placeholder(tmp_path):
    path = tmp_path / "99_widget.ipynb"
    nbformat.write(_widget_notebook(), path)
    html = slides.export(path, tmp_path / "out").read_text(encoding="utf-8")
    assert "course-widget-still" in html and "error -32602: Invalid cursor" in html
    assert "(run the cell in JupyterLab" not in html


def _visible_text(html_text: str) -> str:
    """What a deck shows: the text between the tags (code is split into highlighted spans)."""
    import html as html_lib
    import re

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html_text))


def _solution_lines(nb) -> list[str]:
    """The distinctive lines of a chapter's solution cells: every line of every ``reference_``
    function body (or of the whole cell, for a solution without one) that no other cell has."""
    import ast

    from course_lib.tooling.student_copy import SOLUTION, tags

    others = "\n".join(c.source for c in nb.cells if SOLUTION not in tags(c))
    lines = []
    for cell in nb.cells:
        if SOLUTION not in tags(cell) or cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        bodies = [ast.get_source_segment(cell.source, node) for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("reference_")]
        for body in bodies or [cell.source]:
            lines += [line.strip() for line in body.splitlines()
                      if line.strip() and not line.strip().startswith("#") and line.strip() not in others]
    return lines


@pytest.mark.parametrize("path", [p for p in CHAPTERS if '"solution"' in p.read_text(encoding="utf-8")],
                         ids=lambda p: p.stem)
def test_no_deck_shows_a_solution(path, exported):
    """reveal.js ignores JupyterLab's "source hidden": the export leaves solution cells out."""
    nb = nbformat.read(path, as_version=4)
    lines = _solution_lines(nb)
    assert lines, "the chapter has a solution to hide"
    shown = _visible_text(exported[path.stem].read_text(encoding="utf-8"))
    assert [line for line in lines if line in shown] == []
    assert "reference_" not in shown and "reference solution" not in shown.lower()
    # the control: the same search finds the solution in a deck exported with it
    body, _ = slides._exporter().from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    assert all(line in _visible_text(body) for line in lines)


def test_a_deck_is_exported_once_per_content_and_again_when_the_chapter_changes(tmp_path):
    source = tmp_path / "99_sample.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · A sample\n\nOne sentence.")]
    nbformat.write(nb, source)
    first = slides.exported(source)
    assert first.read_text(encoding="utf-8") == slides.render(slides.deck_nb(source), source.stem)
    assert (first.parent / slides.REVEAL_DIR / "dist" / "reveal.js").is_file()  # the deck works offline
    made = first.stat().st_mtime_ns
    assert slides.exported(source) == first and first.stat().st_mtime_ns == made  # not made again
    nb.cells.append(nbformat.v4.new_markdown_cell("## Another slide"))
    nbformat.write(nb, source)
    second = slides.exported(source)
    assert second != first and not first.exists() and "Another slide" in second.read_text(encoding="utf-8")
    second.unlink()
