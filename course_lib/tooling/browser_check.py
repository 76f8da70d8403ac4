"""The real-browser check: every chapter in JupyterLab itself, in headless Chromium.

``python -m course_lib.tooling.browser_check [NOTEBOOK ...] [--timeout 300] [--budget 900] [--jobs 2] [--no-probe]``

``--timeout`` bounds one chapter, ``--budget`` the whole check (a chapter that cannot start
before the budget is spent fails as "not run").

1. copies the chapters into a temporary folder (JupyterLab autosaves what it runs; the
   committed notebooks are never touched) and starts JupyterLab on 127.0.0.1 with token auth
   and throwaway settings (no news toasts, every cell kept in the page);
2. opens each chapter in the system's Chromium through Playwright once JupyterLab knows its
   kernel specs, clears the stored outputs, runs all cells and waits (bounded by ``--timeout``
   per chapter) on JupyterLab's own signals: every cell's execute request done, the kernel idle,
   every widget view in the outputs attached to the page;
3. reads the notebook model: error outputs (tracebacks and stderr) outside cells tagged
   ``raises-exception``, cells without an execution count, widget views;
4. clicks the chapter's widget as its hand-written plan says (``fixtures/widgets/clicks.json``,
   driven by :mod:`course_lib.tooling.browser_clicks`): each click's answer must be on screen
   before the next click, within the plan's budget; a chapter that shows a widget and has no
   plan fails. Saves one screenshot per chapter in the git-ignored ``screenshots/`` folder;
5. opens a probe notebook whose stored widget view names a model no kernel has, and checks
   that JupyterLab shows "Error displaying widget: model not found" (the troubleshooting
   page's entry, reproduced);
6. shuts every kernel down through the REST API, stops JupyterLab, and fails if a kernel or a
   lab server process is left, or if JupyterLab logged a warning or an error (what a student's
   terminal would show during ``make lab``).

A selection of chapters without widgets passes on its own merits (each widget chapter must show
its widget, so nothing is required of the others).

``python -m course_lib.tooling.browser_check --slides [NOTEBOOK ...]`` (``make slides-check``: every
chapter's static deck, a few seconds each, in one browser) is the check of the slides instead
(:mod:`course_lib.tooling.slides_check`).

Playwright drives ``/usr/bin/chromium`` (``CHROMIUM`` overrides it); it never downloads a browser.
"""
from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.chromium import CHROMIUM, CHROMIUM_ARGS, chromium_available  # noqa: F401
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


async def _open(page, lab: JupyterLab, relpath: str) -> None:
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
        await _open(page, lab, relpath)
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


def missing_model_notebook(path: Path, data_dir: Path) -> None:
    """A notebook whose stored output is a widget view of a model that exists nowhere.

    It is signed as trusted, as JupyterLab signs a notebook a student ran and saved: only a
    trusted notebook renders widget views (an untrusted one shows their text instead).
    """
    from nbformat.sign import NotebookNotary

    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("import ipywidgets\nipywidgets.IntSlider()", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "IntSlider(value=0)",
        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "0" * 32}})]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    data_dir.mkdir(parents=True, exist_ok=True)
    NotebookNotary(data_dir=str(data_dir)).sign(nb)
    nbformat.write(nb, path)


async def check_missing_model(browser, lab: JupyterLab, relpath: str) -> str:
    """Open (without running) the probe notebook; return the text JupyterLab shows for its output."""
    page = await browser.new_page(viewport={"width": 1200, "height": 700})
    try:
        await _open(page, lab, relpath)
        output = page.locator(".jp-NotebookPanel .jp-OutputArea-output").first
        await page.wait_for_function(
            "() => { const o = document.querySelector('.jp-NotebookPanel .jp-OutputArea-output');"
            " return o && o.textContent.trim().length > 0 && !o.textContent.includes('Loading widget'); }",
            timeout=90_000)
        return (await output.text_content() or "").strip()
    finally:
        await page.close()


async def _drive(lab: JupyterLab, jobs: list[tuple[str, Path]], probe: str | None, shots: Path,
                 timeout: float, parallel: int, budget: float) -> tuple[list[Result], str | None]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            limiter = asyncio.Semaphore(parallel)
            deadline = time.monotonic() + budget

            async def one(rel, path):
                async with limiter:
                    left = deadline - time.monotonic()
                    if left < 30:
                        return Result(path.stem, problem=f"not run: the {budget:g} s budget of the whole check is spent")
                    res = await check_notebook(browser, lab, rel, path, shots, min(timeout, left))
                    print(f"{'ok    ' if res.ok else 'FAILED'} {res.notebook}  {res.seconds:.0f} s", flush=True)
                    return res

            results = await asyncio.gather(*(one(rel, path) for rel, path in jobs))
            probe_text = await check_missing_model(browser, lab, probe) if probe else None
        finally:
            await browser.close()
    return list(results), probe_text


def _copy_without_answers(source: Path, target: Path) -> None:
    """The chapter as the check runs it: a self-check's answers cell answers only in the instructor's
    ``notebooks/`` folder (anywhere else it refuses, by design), so the copy leaves it out."""
    import nbformat

    from course_lib.tooling.student_copy import ANSWERS, tags

    nb = nbformat.read(source, as_version=4)
    nb.cells = [cell for cell in nb.cells if ANSWERS not in tags(cell)]
    nbformat.write(nb, target)


def run(notebooks: list[Path], *, timeout: float = 300.0, parallel: int = 2, shots: Path | None = None,
        probe: bool = True, budget: float = 900.0, course_root: Path = ROOT) -> dict:
    """Run the check; return a report (also printed by ``main``).

    ``course_root`` is the folder whose ``course_lib`` the kernels import (a test points it at a
    damaged copy, to show that the check fails at the click that copy does not answer)."""
    from course_lib.tooling.pytest_plugin import surviving_servers

    shots = shots or ROOT / "screenshots"
    run_tag = secrets.token_hex(8)
    workdir = Path(tempfile.mkdtemp(prefix="course-browser-"))
    root_dir = workdir / "course"
    (root_dir / "notebooks").mkdir(parents=True)
    jobs = []
    for path in notebooks:
        copy = root_dir / "notebooks" / path.name
        _copy_without_answers(path, copy)
        jobs.append((f"notebooks/{path.name}", copy))
    probe_rel = None
    if probe:
        missing_model_notebook(root_dir / "stale_widget.ipynb", workdir / "data")
        probe_rel = "stale_widget.ipynb"
    started = time.monotonic()
    lab = JupyterLab(root_dir, workdir, run_tag, course_root)
    left: list[str] = []
    try:
        lab.wait_ready()
        results, probe_text = asyncio.run(_drive(lab, jobs, probe_rel, shots, timeout, parallel, budget))
    finally:
        left = lab.stop()
        deadline = time.monotonic() + 5
        while surviving_servers(run_tag) and time.monotonic() < deadline:
            time.sleep(0.2)
        left += [f"lab server pid {pid} still running: {cmd}" for pid, cmd in surviving_servers(run_tag)]
        logged = lab.log_problems()
        shutil.rmtree(workdir, ignore_errors=True)
    return {"results": results, "probe": probe_text, "left": left, "logged": logged,
            "seconds": time.monotonic() - started}


def report_lines(report: dict) -> list[str]:
    from course_lib.display import Table

    rows = [[r.notebook, f"{r.seconds:.0f} s", f"{r.executed}/{r.code_cells}", len(r.errors), r.widgets,
             r.screenshot or "-", "ok" if r.ok else (r.problem or "FAILED")] for r in report["results"]]
    lines = [Table(["chapter", "time", "cells run", "errors", "widgets", "screenshot", "verdict"], rows).text()]
    for r in report["results"]:
        lines += [f"  {r.notebook}: {e}" for e in r.errors]
        if r.phases:
            lines.append(f"  {r.notebook}: " + ", ".join(f"{k} {v:.0f} s" for k, v in r.phases.items()))
        lines += [f"  {r.notebook}: {c.line()}" for c in r.clicks]
        if not r.ok:  # what the page itself complained about, for whoever reads the failure
            lines += [f"  {r.notebook} console: {c}" for c in r.console[-8:]]
    if report["probe"] is not None:
        lines.append(f"stale widget probe shows: {report['probe']!r}")
    lines += [f"LEFT BEHIND: {item}" for item in report["left"]]
    lines += [f"JUPYTERLAB LOGGED: {line}" for line in report.get("logged", [])]
    lines.append(f"total {report['seconds']:.0f} s, {sum(len(r.errors) for r in report['results'])} error outputs")
    return lines


def passed(report: dict) -> bool:
    results = report["results"]
    # A chapter that shows a widget fails on its own when none rendered (Result.ok), so a
    # selection of chapters without widgets passes on its own merits.
    return (all(r.ok for r in results) and not report["left"] and not report.get("logged")
            and (report["probe"] is None or MISSING_MODEL in report["probe"]))


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--slides":
        from course_lib.tooling.slides_check import check_slides

        if not chromium_available():
            print(f"no Chromium at {CHROMIUM}: install it with 'apt-get install -y chromium'", file=sys.stderr)
            return 2
        started = time.monotonic()
        rest = argv[1:]
        results = check_slides([Path(a) for a in rest if a != "--navigate"] or None, navigate="--navigate" in rest)
        for result in results:
            print("\n".join(result.lines()))
        print(f"{len(results)} decks, {sum(r.ok for r in results)} ok, {time.monotonic() - started:.0f} s")
        return 0 if results and all(r.ok for r in results) else 1
    timeout, parallel, budget, probe, paths = 300.0, 2, 900.0, True, []
    args = iter(argv)
    for arg in args:
        if arg == "--timeout":
            timeout = float(next(args))
        elif arg == "--budget":
            budget = float(next(args))
        elif arg == "--no-probe":
            probe = False
        elif arg == "--jobs":
            parallel = int(next(args))
        else:
            paths.append(Path(arg))
    if not chromium_available():
        print(f"no Chromium at {CHROMIUM}: install it with 'apt-get install -y chromium'", file=sys.stderr)
        return 2
    paths = paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    report = run(paths, timeout=timeout, parallel=parallel, budget=budget, probe=probe)
    print("\n".join(report_lines(report)))
    return 0 if passed(report) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
