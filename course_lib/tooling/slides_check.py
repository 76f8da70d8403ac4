"""The static-slides check (``make slides-check``): one chapter's deck in headless Chromium.

It exports one chapter's deck (00 by default) from its stored outputs, opens it with the network
blocked (the deck's reveal.js comes from a CDN, so the deck shows as one long page: what is checked
is its content), and fails unless a course table is visible as an HTML ``<table>``, every widget
output shows its still (the first state) and no placeholder text remains; one screenshot of the
first table goes to ``screenshots/``. Run as ``python -m course_lib.tooling.browser_check --slides``.
"""
from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.browser_check import CHROMIUM, CHROMIUM_ARGS

SLIDES_DEFAULT = ROOT / "notebooks" / "00_orientation.ipynb"
PLACEHOLDER = "(run the cell in JupyterLab to"
COURSE_TABLE = "table.course-table"
WIDGET_STILL = ".course-widget-still"


@dataclass
class SlidesResult:
    notebook: str
    seconds: float = 0.0
    tables: int = 0            # course tables in the deck, as HTML <table> elements
    visible_tables: int = 0    # of which the browser lays out with a non-empty box
    stills: int = 0            # widget outputs shown as the still of their first state
    widget_outputs: int = 0    # widget outputs the chapter stores
    placeholders: int = 0      # places where the deck shows the placeholder text instead
    screenshot: str = ""
    problem: str = ""

    @property
    def ok(self) -> bool:
        return (not self.problem and self.visible_tables > 0 and self.placeholders == 0
                and self.stills == self.widget_outputs)

    def lines(self) -> list[str]:
        verdict = "ok" if self.ok else (self.problem or "FAILED")
        return [f"slides {self.notebook}: {self.visible_tables}/{self.tables} course tables visible as <table>, "
                f"{self.stills}/{self.widget_outputs} widget stills, {self.placeholders} placeholders, "
                f"{self.seconds:.1f} s, screenshot {self.screenshot or '-'}: {verdict}"]


def _widget_outputs(nb) -> int:
    return sum(1 for c in nb.cells for o in c.get("outputs", [])
               if PLACEHOLDER in str(o.get("data", {}).get("text/plain", "")))


async def _look_at_deck(deck: Path, result: SlidesResult, target: Path) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            # Offline and deterministic: only the deck's own file loads.
            await page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                             else route.abort())
            await page.goto(deck.as_uri(), wait_until="load")
            tables = page.locator(COURSE_TABLE)
            result.tables = await tables.count()
            result.visible_tables = await page.evaluate(
                "sel => Array.from(document.querySelectorAll(sel)).filter(t => {"
                " const r = t.getBoundingClientRect(); return r.width > 0 && r.height > 0 &&"
                " getComputedStyle(t).display === 'table'; }).length", COURSE_TABLE)
            result.stills = await page.locator(WIDGET_STILL).count()
            result.placeholders = (await page.inner_text("body")).count(PLACEHOLDER)
            target.parent.mkdir(parents=True, exist_ok=True)
            if result.tables:
                await tables.first.scroll_into_view_if_needed()
            await page.screenshot(path=str(target))
            if result.stills:  # and one of the first widget's still
                await page.locator(WIDGET_STILL).first.scroll_into_view_if_needed()
                await page.screenshot(path=str(target.with_name(f"{target.stem}-widget.png")))
        finally:
            await browser.close()


def check_slides(notebook: Path = SLIDES_DEFAULT, shots: Path | None = None) -> SlidesResult:
    """Export ``notebook``'s deck from its stored outputs and look at it in headless Chromium."""
    import nbformat

    from course_lib.tooling.slides import export

    started = time.monotonic()
    result = SlidesResult(notebook.stem)
    result.widget_outputs = _widget_outputs(nbformat.read(notebook, as_version=4))
    target = (shots or ROOT / "screenshots") / f"slides-{notebook.stem}.png"
    with tempfile.TemporaryDirectory(prefix="course-slides-") as tmp:
        deck = export(notebook, Path(tmp))
        try:
            asyncio.run(_look_at_deck(deck, result, target))
            result.screenshot = str(target.relative_to(ROOT) if target.is_relative_to(ROOT) else target)
        except Exception as exc:  # a browser-level failure is a failed check, reported
            result.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    result.seconds = time.monotonic() - started
    return result
