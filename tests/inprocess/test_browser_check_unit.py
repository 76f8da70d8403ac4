"""In-process: the checks of tests/world/test_browser_check.py's subject that start no process."""
import json

import nbformat

from course_lib.paths import NOTEBOOKS, fixture
from course_lib.tooling import browser_clicks
from course_lib.tooling.browser_check import passed
from course_lib.tooling.lab_page import Result

PLAN = browser_clicks.load_plan()
STEPPER = json.loads(fixture("widgets", "stepper.json").read_text())


def widget_chapters() -> dict[str, nbformat.NotebookNode]:
    chapters = {p.stem: nbformat.read(p, as_version=4) for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))}
    return {stem: nb for stem, nb in chapters.items()
            if "course_lib.widgets" in "".join(c.source for c in nb.cells)}


def test_every_widget_chapter_has_a_click_plan_for_a_cell_it_has():
    chapters = widget_chapters()
    assert set(chapters) == set(PLAN["chapters"]), "a chapter with a widget and no clicks (or clicks for none)"
    for stem, entry in PLAN["chapters"].items():
        cells = [c for c in chapters[stem].cells if c.cell_type == "code" and entry["cell"] in c.source]
        assert len(cells) == 1, f"{stem}: the plan's cell {entry['cell']!r}"
    kinds = {entry["cell"].split("(")[0] for entry in PLAN["chapters"].values()}
    assert kinds == {"WireViewer", "PageStepper", "ScenarioPicker"}, "every kind of widget is clicked"


def controls(widget) -> tuple[set[str], set[str]]:
    """The labels of a widget's buttons (toggle buttons' options too) and of its dropdowns."""
    import ipywidgets as W

    buttons, dropdowns, stack = set(), set(), [widget]
    while stack:
        w = stack.pop()
        stack += list(getattr(w, "children", ()))
        if isinstance(w, W.Button):
            buttons.add(w.description)
        elif isinstance(w, W.ToggleButtons):
            buttons |= set(w.options)
        elif isinstance(w, W.Dropdown):
            dropdowns.add(w.description)
    return buttons, dropdowns


def test_the_plan_clicks_controls_the_widgets_have():
    from course_lib.wire import Wire
    from course_lib.page_stepper import PageStepper
    from course_lib.scenario_picker import ScenarioPicker
    from course_lib.wire_viewer import WireViewer

    made = {"WireViewer": WireViewer(Wire()), "PageStepper": PageStepper(), "ScenarioPicker": ScenarioPicker()}
    for stem, entry in PLAN["chapters"].items():
        buttons, dropdowns = controls(made[entry["cell"].split("(")[0]])
        for step in entry["steps"]:
            if "click" in step:
                assert step["click"] in buttons, (stem, step)
            else:
                assert step["select"][0] in dropdowns, (stem, step)
        assert len(entry["steps"]) >= 3, f"{stem}: a widget is clicked more than once or twice"


def test_stepper_rows_are_the_stepper_fixtures_rows():
    steps = browser_clicks.expectations(PLAN, "01_pagination")
    rows = [[str(v) for v in row] for row in STEPPER["modes"]["empty-token"]["steps"]]
    pages = [s["want"]["tables"]["page"] for s in steps if "page" in s["want"]["tables"]]
    assert pages == [[], rows[:1], rows[:2], rows[:3]]
    assert [s["action"] for s in steps][1:4] == [("click", "next page")] * 3


def test_mismatches_name_what_is_not_shown_yet():
    want = {"pre": "server stopped", "tables": {"page": [["1", "None"]]}, "disabled": ["next page"]}
    answered = {"pres": ["server stopped"], "text": "", "tables": {"page": [["1", "None"]]},
                "disabled": ["next page"]}
    assert browser_clicks.mismatches(want, answered) == []
    late = {"pres": ["starting…"], "text": "", "tables": {}, "disabled": []}
    assert browser_clicks.mismatches(want, late) == [
        "no text block shows 'server stopped' (shown: ['starting…'])",
        "table 'page' shows 0 rows [], expected 1 rows [['1', 'None']]",
        "button 'next page' is not disabled"]
    assert browser_clicks.mismatches({"contains": "<cursor>", "tables": {}}, {**late, "text": "c1"}) == [
        "the widget does not show '<cursor>'"]


def test_a_selection_without_widget_chapters_can_pass():
    quiet = Result("03_paging_server", code_cells=4, executed=4)
    report = {"results": [quiet], "left": [], "probe": None}
    assert passed(report)
    # A chapter that shows a widget still fails when none rendered, or when a click went unanswered.
    assert not passed({**report, "results": [Result("01_pagination", code_cells=4, executed=4, expects_widget=True)]})
    assert not passed({**report, "results": [Result("01_pagination", code_cells=4, executed=4, expects_widget=True,
                                                    widgets=1, problem="click 2 (button 'next page'): ...")]})
    assert not passed({**report, "left": ["kernel k still listed"]})
