"""Every chapter can be presented: slides start at their headings, fit a projector, a part
lasts 20–40 minutes, and the chapters link in order. The measures live in
``course_lib.tooling.presentation`` and its ``presentation_timings`` and ``presentation_tracks``
(``python -m course_lib.tooling.presentation`` prints them)."""
import re

import nbformat
import pytest

from course_lib.paths import NOTEBOOKS
from course_lib.tooling import presentation as P
from course_lib.tooling import presentation_timings as timings
from course_lib.tooling import presentation_tracks as T

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
    solution = [_md("### A solution " + "word " * 100), _code("solve()"), _code("")]
    for cell in solution[:2]:
        cell.metadata["tags"] = ["solution"]
    nb.cells = [_md(" ".join(["word"] * 260)), _code("a"), _code("b"), *solution,
                _md("Done.\n\n**Next:** [01_b](01_b.ipynb) — the next part")]
    # "Done." and the Next line count too; a solution cell and an empty code cell count nothing
    assert P.minutes(nb) == pytest.approx((260 + 7) / 130 + 2 * 1.5)
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


def test_the_chapter_map_names_each_days_chapters_as_the_plan_places_them():
    """Chapter 00's short map: the chapters of each day after the orientation, and the appendix."""
    (cell,) = [c for c in read(CHAPTERS[0]).cells if c.get("id") == "00-map"]
    days = {n: [e["stem"][:2] for e in T.plan()["chapters"] if e.get("two_days") == n and e["stem"] != CHAPTERS[0].stem]
            for n in (1, 2)}
    text = " ".join(cell.source.split())
    assert f"Day one ({days[1][0]}–{days[1][-1]})" in text and f"Day two ({days[2][0]}–{days[2][-1]})" in text
    assert f"{CHAPTERS[-1].name[:2]} is the appendix" in text
    assert [e["stem"] for e in T.plan()["chapters"] if e.get("two_days") is None] == [CHAPTERS[-1].stem]


# -- the tracks -------------------------------------------------------------------------------

def _times(**minutes):
    return [T.ChapterTime(stem, present, exercise, run, [], one_day)
            for stem, (present, exercise, run, one_day) in minutes.items()]


def test_a_day_leaves_about_six_hours_of_content():
    """8 hours door to door, less lunch, two breaks, questions and (day 1) set-up: about 6 hours."""
    day = T.plan()["day"]
    assert day["content_minutes"] == T.content_minutes() == 360
    left = day["door_to_door"] - day["lunch"] - sum(day["breaks"]) - day["questions"]
    assert (left - day["setup_first_day"], left) == (345, 375)
    assert "the budget is 360 content minutes a day" in " ".join(T.rules())


def test_the_plan_lists_every_chapter_once_in_order_with_its_exercise():
    """One line per chapter, keyed by file stem; an exercise's minutes go with the function its
    chapter's exercise cell asks for, and only a chapter with an exercise cell has one."""
    from course_lib.tooling.student_copy import tags

    entries = T.plan()["chapters"]
    assert [e["stem"] for e in entries] == [p.stem for p in CHAPTERS]
    for entry in entries:
        nb = read(NOTEBOOKS / f"{entry['stem']}.ipynb")
        tasks = [c for c in nb.cells if "exercise" in tags(c)]
        planned = entry.get("exercises", [])
        assert len(planned) == len(tasks), entry["stem"]
        for task, exercise in zip(tasks, planned):
            name, minutes_ = exercise["name"], exercise["minutes"]
            assert re.search(rf"^(async def|def|class) {name}\b", task.source, re.M), (entry["stem"], name)
            assert 5 <= minutes_ <= 60 and minutes_ % 5 == 0


def test_both_tracks_fit_their_days():
    """The one-day track fits a day and teaches the five topics, each with an exercise; each day of
    the two-day track fits a day; every chapter is placed once in each track, and only the
    appendix is left out of the two-day track."""
    both = T.tracks()
    assert T.track_problems(both) == []
    (label, stems, total), *rest = both["one day"]
    assert label == "day 1" and total <= T.content_minutes()
    assert sorted(T.plan()["topics"].values()) == sorted(set(T.plan()["topics"].values()) & set(stems))
    for name, track in both.items():
        placed = [stem for _, stems, _ in track for stem in stems]
        assert sorted(placed) == [p.stem for p in CHAPTERS], name
    assert both["two days"][-1] == ("appendix", [CHAPTERS[-1].stem], 0.0)


def test_what_breaks_the_days_rule_is_a_problem():
    times = _times(a=(200, 30, 1.0, True), b=(150, 0, 0.5, True), c=(10, 0, 0, False), z=(5, 0, 0, False))
    tracks = T.tracks(times, {"a": 1, "b": 2, "c": None, "z": None})
    assert [d for d, _, _ in tracks["one day"]] == ["day 1", "not in it"]
    topics = {"paging": "a", "cursors": "c", "caching": "b"}
    assert T.track_problems(tracks, times, topics) == [
        "one day, day 1: 382 content minutes (at most 360)",
        "one day: cursors (c) is not in it",
        "one day: caching (b) has no exercise",
        "two days: c is left out (only the appendix, z, may be)"]
    fits = _times(a=(100, 30, 1.0, True), z=(5, 0, 0, False))
    assert T.track_problems(T.tracks(fits, {"a": 1, "z": None}), fits, {}) == []


def test_the_talk_minutes_agree_with_the_days_tool_where_it_is_beside_the_course():
    """``../shared/tools/days.py`` (beside a checkout of the course) computes the same talk minutes."""
    import runpy

    tool = P.ROOT.parent / "shared" / "tools" / "days.py"
    if not tool.exists():
        pytest.skip(f"no {tool} beside this checkout")
    days = runpy.run_path(str(tool))
    for path in CHAPTERS:
        assert days["talk"](str(path)) == pytest.approx(P.minutes(read(path))), path.stem


def test_the_tracks_table_is_short():
    table = T.tracks_table()
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= T.TABLE_WIDTH
    assert [line.split("|")[1].strip() for line in lines[2:2 + len(CHAPTERS)]] == [p.stem for p in CHAPTERS]
    assert "total, one day, day 1" in table and "total, two days, day 2" in table


def test_every_chapter_has_a_measured_run_time():
    """``--measure`` ran every chapter: docs/timings.json has each one, rounded to 5 s."""
    measured = timings.timings()["chapters"]
    assert sorted(measured) == [p.stem for p in CHAPTERS]
    for stem, run in measured.items():
        assert isinstance(run["run_seconds"], int) and run["run_seconds"] % 5 == 0, stem
        assert all(c["seconds"] >= timings.SLOW_CELL for c in run["slow_cells"]), stem


def test_the_committed_tracks_page_is_what_the_command_writes():
    assert T.TRACKS_PAGE.read_text(encoding="utf-8") == T.tracks_page(), \
        "docs/tracks.md is stale: python -m course_lib.tooling.presentation --write-tracks"


def test_chapter_00_and_the_readme_show_the_tracks_the_command_writes():
    (cell,) = [c for c in read(CHAPTERS[0]).cells if c.get("id") == T.TRACKS_CELL]
    assert cell.source == T.tracks_cell_source(), "python -m course_lib.tooling.presentation --write-tracks"
    readme = (P.ROOT / "README.md").read_text(encoding="utf-8")
    assert T.readme_with_tracks(readme) == readme, "python -m course_lib.tooling.presentation --write-tracks"

