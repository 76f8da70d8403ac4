"""Every chapter can be presented: slides start at their headings, fit a projector, a part
lasts 20–40 minutes, and the chapters link in order. The measures live in
``course_lib.tooling.presentation`` (``python -m course_lib.tooling.presentation`` prints them)."""
import nbformat
import pytest

from course_lib.tooling import presentation as P

CHAPTERS = P.chapters()
FOLLOWING = {p: (CHAPTERS[i + 1] if i + 1 < len(CHAPTERS) else None) for i, p in enumerate(CHAPTERS)}
PLACEHOLDER = "(run the cell in JupyterLab to"
chapter = pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)


def read(path):
    return nbformat.read(path, as_version=4)


# -- the measures themselves, on hand-made cells ----------------------------------------------

def _md(source, kind="-"):
    cell = nbformat.v4.new_markdown_cell(source)
    cell.metadata["slideshow"] = {"slide_type": kind}
    return cell


def _code(source, text="", kind="-"):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["slideshow"] = {"slide_type": kind}
    if text:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return cell


def test_rendered_lines_count_source_and_outputs_and_long_lines_twice():
    assert P.rendered_lines(_md("## A heading\n\nOne line.\n\n")) == 3
    assert P.rendered_lines(_code("x = 1\n" + "y" * 101, text="a\n" + "b" * 100 + "\n")) == 1 + 2 + 1 + 1
    hidden = _code("solution()\nmore()", text="out\n")
    hidden.metadata["jupyter"] = {"source_hidden": True}
    assert P.rendered_lines(hidden) == 1, "a hidden source is not on the slide; its output is"


def test_slides_follow_the_stored_slide_metadata():
    nb = nbformat.v4.new_notebook()
    nb.cells = [_md("# Title", "slide"), _code("a"), _md("## One", "slide"), _code("b"), _md("### Two", "subslide"),
                _md("more")]
    assert P.slides_of(nb) == [[0, 1], [2, 3], [4, 5]]


def test_heading_rules():
    nb = nbformat.v4.new_notebook()
    nb.cells = [_md("# Title", "slide"), _md("## Fine\ntext", "slide"), _md("Prose first\n\n## Late", "slide"),
                _md("Prose\n\n### Stale metadata"), _md("```\n## in a fence\n```")]
    assert P.heading_problems(nb) == [
        "cell 2 opens a slide but begins with 'Prose first', not its heading",
        "cell 3 has prose before its heading '### Stale metadata'"]


def test_minutes_and_next_link(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [_md(" ".join(["word"] * 260)), _code("a"), _code("b"),
                _md("Done.\n\n**Next:** [01_b](01_b.ipynb) — the next part")]
    assert P.minutes(nb) == pytest.approx((260 + 7) / 130 + 2)  # "Done." and the Next line count too
    first, second = tmp_path / "00_a.ipynb", tmp_path / "01_b.ipynb"
    second.write_text("{}")
    assert P.next_link_problems(first, nb, second) == []
    assert P.next_link_problems(first, nb, tmp_path / "02_c.ipynb") == \
        ["**Next:** links to 01_b.ipynb, but the next chapter is 02_c.ipynb"]
    nb.cells[-1] = _md("The end.")
    assert P.next_link_problems(second, nb, None) == []
    assert P.next_link_problems(first, nb, second) == ["does not end with a '**Next:** [01_b](01_b.ipynb)' line"]


# -- every chapter ----------------------------------------------------------------------------

@chapter
def test_slides_begin_with_their_headings(path):
    assert P.heading_problems(read(path)) == []


@chapter
def test_no_slide_is_longer_than_40_lines(path):
    assert P.slide_problems(read(path)) == []


@chapter
def test_code_and_output_lines_fit_100_characters(path):
    assert P.width_problems(read(path)) == []


@chapter
def test_a_part_lasts_at_most_40_minutes(path):
    assert P.minutes(read(path)) <= P.MAX_MINUTES


@chapter
def test_every_chapter_but_the_last_links_to_the_next(path):
    assert P.next_link_problems(path, read(path), FOLLOWING[path]) == []


@chapter
def test_a_stored_widget_shows_its_first_state_not_a_placeholder(path):
    """A widget's stored output carries the HTML still of its first state (what the slides show)."""
    for i, cell in enumerate(read(path).cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLACEHOLDER in str(data.get("text/plain", "")):
                assert "course-widget-still" in str(data.get("text/html", "")), f"cell {i}"


def test_the_chapter_map_lists_every_chapter_in_order_with_its_minutes():
    """Chapter 00's map: one row per chapter, in order, each with the minutes this tool measures."""
    import re

    (cell,) = [c for c in read(CHAPTERS[0]).cells if c.get("id") == "00-map"]
    rows = re.findall(r"^\| [^|]+ \| \[(\d\d_\w+)\]\(\1\.ipynb\) \| .+ \| (\d+) \|$", cell.source, re.M)
    assert [stem for stem, _ in rows] == [p.stem for p in CHAPTERS]
    for stem, minutes in rows:
        measured = P.minutes(read(P.chapters()[[p.stem for p in CHAPTERS].index(stem)]))
        assert abs(int(minutes) - measured) <= 1, (stem, minutes, round(measured))
