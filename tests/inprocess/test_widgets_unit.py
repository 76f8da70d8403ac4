"""In-process: the checks of tests/stdio/test_widgets.py's subject that start no process."""
import pytest
from course_lib.page_stepper import PageStepper
from course_lib.scenario_picker import ScenarioPicker
from course_lib.wire_viewer import WireViewer

pytestmark = pytest.mark.anyio


async def test_next_page_without_server_says_so():
    stepper = PageStepper()
    assert await stepper.next_page() is None
    assert "start a server first" in stepper.status.value


def test_only_widget_cells_have_ignored_outputs():
    """In the chapters, the outputs nbval ignores are exactly those of cells showing a widget."""
    import re

    import nbformat

    from course_lib.paths import NOTEBOOKS

    shows_widget = re.compile(r"^(WireViewer|PageStepper|ScenarioPicker)\(.*\)$|^stepper$", re.M)
    widget_cells = 0
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            ignored = "nbval-ignore-output" in cell.metadata.get("tags", [])
            last_line = cell.source.strip().splitlines()[-1] if cell.source.strip() else ""
            widget = bool(shows_widget.match(last_line))
            assert ignored == widget, f"{path.name}: {cell.source[:60]!r}"
            widget_cells += widget
    assert widget_cells >= 3
