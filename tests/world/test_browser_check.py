"""The browser check's click plan and verdicts, and its negative control in real JupyterLab + Chromium.

The plan (fixtures/widgets/clicks.json) is written by hand; these tests hold it to the chapters and
to the widgets it clicks, and show on a damaged copy of the course (a stepper that starts its work
on the loop the click arrived on, the old way) that the check fails at the click that copy answers
late. `make test` runs the check itself on the widget chapters (`make browser-check`).
"""
import os
import shutil
from pathlib import Path

import nbformat
import pytest

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling import browser_check, browser_clicks
from course_lib.tooling.browser_check import passed
from course_lib.tooling.chromium import CHROMIUM, chromium_available

PLAN = browser_clicks.load_plan()
# Skipped on a machine without Chromium; on CI (which installs it, .ci/run) a missing one is a failure.
needs_chromium = pytest.mark.skipif(not chromium_available() and not os.environ.get("CI"),
                                    reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium); CI has it")

# The one line that makes a widget start its work on the loop it was made on, and the damage: the
# loop the click arrived on (a kernel subshell's, when JupyterLab sends comms over a subshell).
FIXED = "        if self._loop is running:\n"
OLD_WAY = "        if running is not None:  # damaged: the loop the click arrived on\n"


def damaged_copy(root: Path) -> Path:
    """The course with a stepper (every widget) that starts its work the old way."""
    shutil.copytree(ROOT / "course_lib", root / "course_lib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("fixtures", "notebooks"):
        (root / name).symlink_to(ROOT / name, target_is_directory=True)
    scheduler = root / "course_lib" / "live_lab.py"
    source = scheduler.read_text()
    assert source.count(FIXED) == 1, "the damage no longer applies: update FIXED to the fix's line"
    scheduler.write_text(source.replace(FIXED, OLD_WAY))
    return root


def widget_cell_only(chapter: str, folder: Path) -> Path:
    """The chapter with only the cell that shows its widget (what the clicks need; the run is short)."""
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "code" and PLAN["chapters"][chapter]["cell"] in c.source]
    folder.mkdir()
    nbformat.write(nb, folder / f"{chapter}.ipynb")
    return folder / f"{chapter}.ipynb"


@needs_chromium
def test_a_stepper_that_lags_fails_at_its_first_next_page(tmp_path):
    assert chromium_available(), f"CI runs the browser check: no Chromium at {CHROMIUM}"
    course = damaged_copy(tmp_path / "course")
    chapter = widget_cell_only("01_pagination", tmp_path / "chapter")
    report = browser_check.run([chapter], probe=False, course_root=course, shots=tmp_path / "shots",
                               timeout=240, budget=300)
    (result,) = report["results"]
    lines = "\n".join(browser_check.report_lines(report))
    assert result.executed == result.code_cells == 1 and not result.errors, lines  # the widget's cell ran
    first, second = result.clicks[:2]
    assert (first.action, first.problem) == ("button 'start server'", ""), lines
    assert second.action == "button 'next page'" and len(result.clicks) == 2, lines
    assert second.problem.startswith(f"not answered within {PLAN['budget_s']:g} s: table 'page' shows 0 rows"), lines
    assert result.problem == second.line() and not passed(report)
    assert report["left"] == [], lines
