"""``make instructor`` never writes the course, in a real JupyterLab and a real headless Chromium.

One user's two sessions, as an instructor has them before a class: first the student lab (``make
lab``'s command on a student copy), where a chapter is opened in the default workspace; then the
instructor view (``make instructor``'s command, ``python -m course_lib.tooling.lab notebooks``),
sharing the same Jupyter folders. The instructor view must not reopen the student's tab (its own
workspace), and running every cell of chapter 01, clicking through its widget and saving it must
leave the committed chapter and ``git status`` as they were: the run lands in the scratch copy.
That run is also ``make test``'s real-browser check of chapter 01 (its every cell run, every click of
its widget answered): the browser check beside the suite leaves chapter 01 out (``BROWSER_SMOKE``).
"""
import asyncio
import contextlib
import os
import secrets
import shutil
import subprocess
import sys

import pytest

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling import lab
from course_lib.tooling.chromium import CHROMIUM, CHROMIUM_ARGS, chromium_available
from course_lib.tooling.lab_page import Result, check_notebook
from course_lib.tooling.lab_server import JupyterLab

from test_instructor_view_unit import digest

CHAPTER = "01_pagination.ipynb"
needs_chromium = pytest.mark.skipif(not chromium_available() and not os.environ.get("CI"),
                                    reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium); CI has it")


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


_OPEN_IN_DEFAULT = """async path => {
    const app = window.jupyterapp;
    await app.restored;
    await app.serviceManager.kernelspecs.ready;
    const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    await panel.context.ready;
    await panel.sessionContext.ready;
    return panel.context.path;
}"""

_OPEN_TABS = """async () => { await window.jupyterapp.restored;
    return Array.from(window.jupyterapp.shell.widgets('main')).map(w => w.title.label); }"""

# Run All in the page's current chapter, then save it: a deliberate save, after a run that
# changed the chapter's outputs, may only write the scratch copy.
_RUN_AND_SAVE = """async () => {
    const app = window.jupyterapp;
    await app.commands.execute('notebook:run-all-cells');
    await app.commands.execute('docmanager:save');
}"""


@contextlib.asynccontextmanager
async def lab_page(url: str, token: str):
    """A real Chromium and a page of it with JupyterLab at ``url`` loaded (its app up), closed after."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(f"{url}/lab?token={token}", wait_until="domcontentloaded")
            await page.wait_for_function("() => window.jupyterapp !== undefined")
            yield browser, page
        finally:
            await browser.close()


async def student_session(url: str, token: str, path: str) -> list[str]:
    """The student opens a chapter in the default workspace; returns the tabs open then."""
    async with lab_page(url, token) as (_, page):
        await page.evaluate(_OPEN_IN_DEFAULT, path)
        # JupyterLab stores the default workspace shortly after the layout changes
        await page.wait_for_timeout(3000)
        return await page.evaluate(_OPEN_TABS)


async def instructor_session(lab_: JupyterLab, shots) -> tuple[list[str], Result]:
    """The instructor opens the default workspace, then runs every cell of chapter 01, clicks
    through its widget (the browser check's plan) and saves every open document."""
    async with lab_page(lab_.url, lab_.token) as (browser, page):
        await page.wait_for_timeout(2000)  # the default workspace is restored by now
        tabs = await page.evaluate(_OPEN_TABS)
        await page.evaluate(_OPEN_IN_DEFAULT, CHAPTER)
        result = await check_notebook(browser, lab_, CHAPTER, NOTEBOOKS / CHAPTER, shots, 240)
        await page.reload(wait_until="domcontentloaded")
        await page.wait_for_function("() => window.jupyterapp !== undefined")
        await page.evaluate(_OPEN_IN_DEFAULT, CHAPTER)
        await page.evaluate(_RUN_AND_SAVE)
        return tabs, result


@needs_chromium
def test_after_the_student_lab_the_instructor_view_runs_and_clicks_a_chapter_and_git_stays_clean(tmp_path):
    before, committed = git_status(), digest(NOTEBOOKS / CHAPTER)
    home, scratch = tmp_path / "jupyter", tmp_path / "scratch"
    os.environ["COURSE_INSTRUCTOR_HOME"] = str(scratch)  # the server inherits it
    student = tmp_path / "student"
    student.mkdir()
    shutil.copy(NOTEBOOKS / "00_orientation.ipynb", student / "00_orientation.ipynb")
    try:
        run_tag = secrets.token_hex(8)
        command = [sys.executable, "-m", "course_lib.tooling.lab"]
        first = JupyterLab(student, tmp_path / "student-lab", run_tag, launcher=[*command, str(student)], home=home)
        try:
            first.wait_ready()
            student_tabs = asyncio.run(student_session(first.url, first.token, "00_orientation.ipynb"))
        finally:
            assert first.stop() == []
        assert "00_orientation.ipynb" in student_tabs
        assert list((home / "config" / "lab" / "workspaces").glob("*.jupyterlab-workspace")), \
            "the student session stored no default workspace: the test would prove nothing"

        second = JupyterLab(ROOT, tmp_path / "instructor-lab", run_tag, launcher=[*command, "notebooks"], home=home)
        try:
            second.wait_ready()
            tabs, result = asyncio.run(instructor_session(second, tmp_path / "shots"))
        finally:
            left = second.stop()
        assert left == []
    finally:
        os.environ.pop("COURSE_INSTRUCTOR_HOME", None)
    assert "00_orientation.ipynb" not in tabs, "the instructor view reopened the student session's tab"
    assert result.ok, (result.problem, result.errors)
    assert result.executed == result.code_cells > 0 and result.clicks, "every cell ran and the widget was clicked"
    # the run and the save landed in the scratch copy, not in the course
    assert digest(scratch / "notebooks" / CHAPTER) != committed
    assert digest(NOTEBOOKS / CHAPTER) == committed
    assert git_status() == before
