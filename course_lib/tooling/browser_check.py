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
   every widget view in the outputs attached to the page (one chapter's page:
   :mod:`course_lib.tooling.lab_page`);
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
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.chromium import CHROMIUM, CHROMIUM_ARGS, chromium_available
from course_lib.tooling.lab_page import MISSING_MODEL, WIDGET_VIEW, Result, check_notebook, open_notebook
from course_lib.tooling.lab_server import JupyterLab


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
        await open_notebook(page, lab, relpath)
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
