"""One chapter in a JupyterLab page, in headless Chromium (the browser check's part).

``check_notebook`` opens the chapter once JupyterLab knows its kernel specs, clears the stored
outputs, runs all cells and waits (bounded by its ``timeout``) on JupyterLab's own signals: every
cell's execute request done, the kernel idle, every widget view in the outputs attached to the
page. It then reads the notebook model (error outputs outside cells tagged ``raises-exception``,
cells without an execution count, widget views), clicks the chapter's widget as its plan says
(:mod:`course_lib.tooling.browser_clicks`) and saves one screenshot. ``open_notebook`` opens a
notebook without running it (the check's stale widget probe).
"""
from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.lab_server import JupyterLab

ERROR_MIME = "application/vnd.jupyter.stderr"
MISSING_MODEL = "Error displaying widget: model not found"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PAGE_TIMEOUT_MS = 120_000


@dataclass
class Result:
    notebook: str
    seconds: float = 0.0
    code_cells: int = 0
    executed: int = 0
    errors: list[str] = field(default_factory=list)
    widgets: int = 0
    expects_widget: bool = False
    screenshot: str = ""
    problem: str = ""
    console: list[str] = field(default_factory=list)  # the page's console errors and warnings
    clicks: list = field(default_factory=list)  # browser_clicks.ClickResult, one per click made
    phases: dict = field(default_factory=dict)  # seconds: opening, Run All, the clicks

    @property
    def ok(self) -> bool:
        return (not self.problem and not self.errors and self.executed == self.code_cells
                and (self.widgets > 0 or not self.expects_widget))


# --------------------------------------------------------------------------- in the browser
# The page exposes JupyterLab's application object (``expose_app_in_browser``): the check waits
# on JupyterLab's own promises and signals (kernel specs loaded, session ready, kernel status,
# each cell's execution reply) and reads the notebook model, not the rendered prompts.

_HELPERS = """() => { window.courseCheck = {
    // Resolves once the kernel is idle and connected, as its own status signals report it.
    idle: kernel => new Promise(resolve => {
        const check = () => {
            if (kernel.status !== 'idle' || kernel.connectionStatus !== 'connected') return;
            kernel.statusChanged.disconnect(check);
            kernel.connectionStatusChanged.disconnect(check);
            resolve();
        };
        kernel.statusChanged.connect(check);
        kernel.connectionStatusChanged.connect(check);
        check();
    }),
    // Resolves with the text of the first dialog JupyterLab attaches to the page.
    dialog: () => new Promise(resolve => {
        const check = () => {
            const dialog = document.querySelector('.jp-Dialog');
            if (dialog) { observer.disconnect(); resolve(dialog.innerText.replace(/\\s+/g, ' ').trim()); }
        };
        const observer = new MutationObserver(check);
        observer.observe(document.body, {childList: true});
        check();
    }),
    // The cell's widget-view outputs: whether ipywidgets attached the view (it adds the view's
    // own widget once the model is found and the view created) and what the output shows.
    views: cell => cell.model.type !== 'code' ? [] : cell.model.outputs.toJSON().flatMap((output, k) => {
        if (!output.data || !output.data['%s']) return [];
        const child = cell.outputArea.widgets[k];
        return [{attached: Boolean(child && child.node.querySelector('.jp-OutputArea-output > .jupyter-widgets')),
                 text: child ? child.node.innerText.trim().slice(0, 80) : 'no output shown'}];
    }),
}; }""" % WIDGET_VIEW

# JupyterLab asks which kernel to use when it cannot start the one the notebook names: its
# kernel specs are not known yet, or the request for a session failed. The notebook opens once
# the specs are known; a dialog instead of a session fails the check with the dialog's text
# (accepting its choice would be a second try at starting the kernel).
_OPEN = """async path => {
    const app = window.jupyterapp;
    await app.restored;
    await app.serviceManager.kernelspecs.ready;
    const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    window.courseNotebook = panel;
    await panel.context.ready;
    const asked = await Promise.race([panel.sessionContext.ready.then(() => null), courseCheck.dialog()]);
    if (asked !== null) return asked;
    await courseCheck.idle(panel.sessionContext.session.kernel);
    return null;
}"""

# Run All resolves once every cell's execute request is done (its reply and the kernel's idle
# status for it arrived); the kernel is then idle unless a widget is still talking to it.
_RUN_ALL = """async () => {
    const panel = window.courseNotebook;
    await window.jupyterapp.commands.execute('notebook:run-all-cells');
    await courseCheck.idle(panel.sessionContext.session.kernel);
}"""

_CELLS = """() => window.courseNotebook.content.widgets.map(cell => {
    const code = cell.model.type === 'code';
    return {
        code,
        count: code ? cell.model.executionCount : null,
        outputs: code ? cell.model.outputs.toJSON() : [],
        views: courseCheck.views(cell).filter(view => view.attached).length,
        missing: cell.node.textContent.includes('%s'),
    };
})""" % MISSING_MODEL

# Widget views the model holds that are not attached to the page yet, with what they show instead.
_UNATTACHED_VIEWS = """() => window.courseNotebook.content.widgets.flatMap((cell, i) =>
    courseCheck.views(cell).filter(view => !view.attached).map(view => `cell ${i} shows ${JSON.stringify(view.text)}`))"""

_STATE = """() => ({kernel: window.courseNotebook?.sessionContext.session?.kernel?.status || 'none',
    dialog: (document.querySelector('.jp-Dialog') || {}).innerText || ''})"""


async def _stuck(page) -> str:
    """What a page that never reached the awaited state shows: the kernel's status and any dialog."""
    state = await page.evaluate(_STATE)
    return f"kernel {state['kernel']}" + (f"; a dialog says {state['dialog'][:160]!r}" if state["dialog"] else "")


async def open_notebook(page, lab: JupyterLab, relpath: str) -> None:
    # A workspace of its own per page: no tab of another page is restored next to this one.
    workspace = "w" + secrets.token_hex(4)
    page.set_default_timeout(PAGE_TIMEOUT_MS)  # a busy machine loads JupyterLab slowly
    await page.goto(f"{lab.url}/lab/workspaces/{workspace}?reset&token={lab.token}", wait_until="domcontentloaded")
    await page.wait_for_function("() => window.jupyterapp !== undefined")
    await page.evaluate(_HELPERS)
    try:
        asked = await asyncio.wait_for(page.evaluate(_OPEN, relpath), 2 * PAGE_TIMEOUT_MS / 1000)
    except TimeoutError:
        raise RuntimeError(f"the notebook's kernel was not ready within {2 * PAGE_TIMEOUT_MS / 1000:g} s "
                           f"({await _stuck(page)})") from None
    if asked is not None:
        raise RuntimeError(f"JupyterLab asked instead of starting the notebook's kernel: {asked[:160]!r}")


def _errors(cell: dict, stored_stderr: str) -> list[str]:
    """Tracebacks, and stderr lines the chapter does not store."""
    found = []
    for output in cell["outputs"]:
        if output["output_type"] == "error":
            found.append(f"{output['ename']}: {output['evalue']}"[:160])
        elif output.get("name") == "stderr":
            text = "".join(output["text"]).strip()
            last = text.splitlines()[-1][:160] if text else ""
            if last and last.strip() not in stored_stderr:
                found.append(last)
    return found


async def check_notebook(browser, lab: JupyterLab, relpath: str, nb_path: Path, shots: Path,
                         timeout: float) -> Result:
    import nbformat
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    nb = nbformat.read(nb_path, as_version=4)
    result = Result(nb_path.stem, code_cells=sum(c.cell_type == "code" for c in nb.cells),
                    expects_widget="course_lib.widgets" in "".join(c.source for c in nb.cells))
    allowed = {i for i, c in enumerate(nb.cells) if "raises-exception" in c.metadata.get("tags", [])}
    # JupyterLab renders a stderr stream like an error; the stderr a chapter stores (an SDK
    # warning it teaches, checked by nbval) is expected, anything else on stderr is an error.
    stored_stderr = {i: "".join(o.get("text", "") for o in c.get("outputs", []) if o.get("name") == "stderr")
                     for i, c in enumerate(nb.cells)}
    page = await browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: result.console.append(f"{m.type}: {m.text[:240]}")
            if m.type in ("error", "warning") else None)
    started = time.monotonic()
    try:
        await open_notebook(page, lab, relpath)
        result.phases["open"] = time.monotonic() - started
        await page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        cells = await page.evaluate(_CELLS)
        if any(c["count"] is not None or c["outputs"] for c in cells):  # or a cell that never ran counts as run
            raise RuntimeError("stored outputs were still there after Clear Outputs of All Cells")
        try:
            await asyncio.wait_for(page.evaluate(_RUN_ALL), max(1.0, started + timeout - time.monotonic()))
        except TimeoutError:
            result.problem = f"still running after {timeout:g} s ({await _stuck(page)})"
        result.phases["run all"] = time.monotonic() - started - result.phases["open"]
        if not result.problem:
            try:
                await page.wait_for_function(f"() => ({_UNATTACHED_VIEWS})().length === 0", timeout=30_000)
            except PlaywrightTimeout:
                result.problem = "widget views not attached after 30 s: " + "; ".join(
                    await page.evaluate(_UNATTACHED_VIEWS))
        cells = await page.evaluate(_CELLS)
        result.seconds = time.monotonic() - started
        if len(cells) != len(nb.cells):
            result.problem = result.problem or f"page shows {len(cells)} cells, notebook has {len(nb.cells)}"
        for i, cell in enumerate(cells):
            if not cell["code"]:
                continue
            result.executed += cell["count"] is not None
            if i not in allowed:
                result.errors += [f"cell {i}: {e}" for e in _errors(cell, stored_stderr.get(i, ""))]
                if cell["missing"]:
                    result.errors.append(f"cell {i}: {MISSING_MODEL}")
            result.widgets += cell["views"]
        if result.expects_widget and result.ok:
            clicking = time.monotonic()
            await _click_widgets(page, nb, result)
            result.phases["clicks"] = time.monotonic() - clicking
            result.seconds = time.monotonic() - started
        widget = page.locator(".jupyter-widgets.widget-container").first
        if await widget.count():
            await widget.scroll_into_view_if_needed()
        shots.mkdir(parents=True, exist_ok=True)
        target = shots / f"{nb_path.stem}.png"
        await page.screenshot(path=str(target))
        result.screenshot = str(target.relative_to(ROOT) if target.is_relative_to(ROOT) else target)
    except Exception as exc:  # a browser-level failure is a failed chapter, reported, not a crash
        result.problem = result.problem or f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
        result.seconds = time.monotonic() - started
    finally:
        await page.close()
    return result



async def _click_widgets(page, nb, result: Result) -> None:
    """Drive the chapter's widget by real clicks, as its plan in fixtures/widgets/clicks.json says."""
    from course_lib.tooling import browser_clicks

    plan = browser_clicks.load_plan()
    entry = plan["chapters"].get(result.notebook)
    if entry is None:
        result.problem = f"it shows a widget but {'/'.join(browser_clicks.PLAN_FILE)} has no clicks for it"
        return
    cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and entry["cell"] in c.source]
    if not cells:
        result.problem = f"no cell shows {entry['cell']!r}, the cell its clicks are planned for"
        return
    steps = browser_clicks.expectations(plan, result.notebook)
    result.clicks = await browser_clicks.drive(page, cells[0], steps, plan["budget_s"])
    failed = [c for c in result.clicks if c.problem]
    if failed:
        result.problem = failed[0].line()
    elif len(result.clicks) != len(steps):
        result.problem = f"{len(result.clicks)} of {len(steps)} planned clicks made"

