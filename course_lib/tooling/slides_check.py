"""The slides check (``make slides-check``): every chapter's deck in one headless Chromium.

Each chapter is exported as ``make slides`` exports it (its stored outputs, the pinned reveal.js
next to it) and opened at 1280 x 720 with every request that is not a local file blocked and
recorded. Once the deck's reveal.js is ready, every slide is shown in turn and measured by the
browser (``MEASURE``), and the deck fails at a named check:

* ``overflow``: a slide taller than the slide, or a code, output or table line cut at the right;
* ``text_size``: text smaller than ``MIN_TEXT_PX`` in the slide's own 1280 x 720 pixels (each
  deck's smallest text size is reported either way);
* ``network``: the deck asked for anything but local files (a CDN, a web font);
* ``solution``: the deck shows a cell tagged ``solution`` or ``answers``, or ``reference_`` code;
* ``content``: a course table not laid out as an HTML ``<table>``, a widget without its still,
  placeholder text, or a script error on the page.

It also reports what the chapters' owners fix in the notebooks (``REPORTS``): an explanation
put on its own sub-slide after the output it explains, a section number used twice, and a red
stderr box on a slide. The reports known today are listed in ``fixtures/slides/known_reports.json``;
a new one fails the deck (``reports``), and so does a listed one that is gone (the list is then
out of date: remove it). The verdict and what the notebook says the deck must (not) show are
:mod:`course_lib.tooling.slides_verdict`. One screenshot of each deck's first table goes to
``screenshots/``.

``python -m course_lib.tooling.browser_check --slides [--navigate] [NOTEBOOK ...]`` (every chapter
by default; ``--navigate`` shows the slides one by one through the deck's URL, as a presenter
does, instead of measuring them all at once: slower, for a second opinion).
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.chromium import CHROMIUM, CHROMIUM_ARGS
from course_lib.tooling.slides_verdict import MIN_TEXT_PX, SlidesResult, known_reports, reports, solutions_shown

SLIDES_DEFAULT = ROOT / "notebooks" / "00_orientation.ipynb"
PLACEHOLDER = "(run the cell in JupyterLab to"
COURSE_TABLE = "table.course-table"
WIDGET_STILL = ".course-widget-still"
VIEWPORT = {"width": 1280, "height": 720}

# Runs in the page: measure every slide (a section without sections inside) against the slide's
# own box (`.reveal .slides`, what reveal.js lays out at its width and height and scales to the
# screen). With the deck's `Reveal` (ready: its layout done), every slide is displayed where
# reveal.js puts it, all at once, and read in one layout (showing the slides one by one costs a
# style pass over the whole deck each); a deck without the API is shown slide by slide through
# its URL's #/h/v. Either way the sizes read are the ones reveal.js shows.
MEASURE = """
async (navigate) => {
  const slidesEl = document.querySelector('.reveal .slides');
  const outer = Array.from(slidesEl.children).filter(e => e.tagName === 'SECTION');
  const leaves = [];
  outer.forEach((s, h) => {
    const inner = Array.from(s.children).filter(e => e.tagName === 'SECTION');
    (inner.length ? inner : [s]).forEach((leaf, v) => leaves.push([leaf, h, v]));
  });
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const widths = new Map();   // the width of one character, by font: one probe per font
  const charWidth = el => {
    const font = getComputedStyle(el).font;
    if (!widths.has(font)) {
      const probe = document.createElement('span');
      probe.textContent = 'x'.repeat(100);
      probe.style.cssText = 'position:absolute; white-space:pre; visibility:hidden';
      probe.style.font = font;
      el.appendChild(probe);
      widths.set(font, probe.getBoundingClientRect().width / 100);
      probe.remove();
    }
    return widths.get(font);
  };
  const out = [];
  const started = performance.now();
  const api = !navigate && !!(window.Reveal && Reveal.isReady && Reveal.isReady());
  const saved = leaves.map(([leaf]) => [leaf, leaf.style.display, leaf.parentElement.style.display]);
  if (api) saved.forEach(([leaf]) => { leaf.style.display = 'block'; leaf.parentElement.style.display = 'block'; });
  for (const [leaf, h, v] of leaves) {
    if (!api) { location.hash = `#/${h}/${v}`; await frame(); }
    const box = slidesEl.getBoundingClientRect();
    const scale = box.width / slidesEl.offsetWidth;
    const tall = Math.max(leaf.scrollHeight, leaf.offsetHeight);
    let lowest = box.top;
    let cut = 0, cutBlocks = [], wrapped = 0;
    for (const el of leaf.children) lowest = Math.max(lowest, el.getBoundingClientRect().bottom);
    for (const el of leaf.querySelectorAll('pre, table')) {
      if (el.tagName === 'PRE' && el.closest('table')) continue;
      const r = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      const clipped = el.scrollWidth > el.clientWidth + 1 && style.overflowX !== 'visible';
      const shown = Math.min(r.right, box.right) - r.left;   // what of it is on the slide, on screen
      const width = (clipped ? Math.min(el.clientWidth * scale, shown) : shown) / scale
                    - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      if (el.tagName === 'PRE') {
        const cw = charWidth(el) / scale;
        const lines = el.textContent.replace(/\\n$/, '').split('\\n');
        const long = lines.filter(l => l.length * cw > width + 1).length;
        const wraps = style.whiteSpace.startsWith('pre-wrap') || style.whiteSpace === 'break-spaces';
        if (wraps) { wrapped += long; } else if (long) { cut += long; cutBlocks.push(lines.find(l => l.length * cw > width + 1).slice(0, 60)); }
      } else {
        const rows = Array.from(el.rows).filter(row => row.getBoundingClientRect().right > box.right + 1 ||
                                                         (clipped && row.scrollWidth > el.clientWidth + 1));
        if (rows.length) { cut += rows.length; cutBlocks.push('table: ' + rows[0].textContent.trim().slice(0, 50)); }
      }
    }
    const wide = leaf.scrollWidth > leaf.clientWidth + 1;   // something sticks out at the right
    for (const el of wide ? leaf.querySelectorAll('p, li, h1, h2, h3, h4, img, code') : []) {
      if (el.closest('pre, table')) continue;
      if (el.getBoundingClientRect().right > box.right + 1) { cut += 1; cutBlocks.push(el.textContent.trim().slice(0, 60)); }
    }
    let smallest = Infinity;   // the smallest text shown, in the slide's own pixels (font size x zoom)
    const walk = document.createTreeWalker(leaf, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || !el || !el.getClientRects().length) continue;
      smallest = Math.min(smallest, parseFloat(getComputedStyle(el).fontSize) * (el.currentCSSZoom || 1));
    }
    const tables = Array.from(leaf.querySelectorAll('table.course-table'));
    const heading = leaf.querySelector('h1, h2, h3, h4, .course-continued');
    out.push({
      h, v, title: heading ? heading.textContent.replace(/¶$/, '').trim().slice(0, 60) : '',
      height: Math.round(Math.max(tall, (lowest - box.top) / scale)), slide_height: slidesEl.offsetHeight,
      cut, cut_blocks: cutBlocks.slice(0, 3), wrapped,
      smallest: smallest === Infinity ? null : Math.round(smallest * 10) / 10,
      tables: tables.length,
      visible_tables: tables.filter(t => { const r = t.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(t).display === 'table'; }).length,
      stills: leaf.querySelectorAll('.course-widget-still').length,
      placeholders: (leaf.innerText.match(/\\(run the cell in JupyterLab to/g) || []).length,
    });
  }
  if (api) saved.forEach(([leaf, own, stack]) => { leaf.style.display = own; leaf.parentElement.style.display = stack; });
  else location.hash = '#/0/0';
  out.forEach(s => { s.ms = Math.round(performance.now() - started); });
  return out;
}
"""


# -- the browser -------------------------------------------------------------------------------------

def _local(url: str) -> bool:
    return url.startswith(("file:", "data:", "about:", "blob:"))


async def look(browser, deck: Path, result: SlidesResult, shot: Path | None, timeout: float = 30.0,
               navigate: bool = False) -> None:
    """Open ``deck`` (network blocked, every other request recorded), wait for its reveal.js, and
    measure every slide into ``result`` (``navigate``: show the slides one by one through the
    URL, as a presenter does, instead of all at once: slower, the same sizes)."""
    context = await browser.new_context(viewport=VIEWPORT)
    try:
        page = await context.new_page()
        page.on("pageerror", lambda exc: result.page_errors.append(f"script error: {str(exc)[:150]}"))

        async def route(r):
            if _local(r.request.url):
                await r.continue_()
            else:
                result.requests.append(r.request.url[:120])
                await r.abort()

        await context.route("**/*", route)
        await page.goto(deck.as_uri(), wait_until="load")
        try:
            await page.wait_for_function("document.documentElement.dataset.courseDeck === 'ready'"
                                         " || (window.Reveal && Reveal.isReady && Reveal.isReady())",
                                         timeout=timeout * 1000)
        except Exception:
            result.problem = "reveal.js never became ready (did it load?)"
        slides = await page.evaluate(MEASURE, navigate)
        done = await page.evaluate("[document.documentElement.dataset.courseContinued,"
                                   " document.documentElement.dataset.courseShrunk]")
        result.continued, result.shrunk = (int(n or 0) for n in done)
        result.slides = len(slides)
        for s in slides:
            label = f"slide {s['h'] + 1}.{s['v'] + 1} {s['title']!r}"
            if s["height"] > s["slide_height"] + 1:
                result.taller.append(f"{label}: {s['height']}/{s['slide_height']} px")
            if s["cut"]:
                result.cut_lines += s["cut"]
                result.cut.append(f"{label}: {s['cut']} lines, e.g. {s['cut_blocks'][0]!r}")
            result.wrapped_lines += s["wrapped"]
            if s["smallest"] is not None:
                result.smallest_px = min(s["smallest"], result.smallest_px or s["smallest"])
                if s["smallest"] < MIN_TEXT_PX:
                    result.small.append(f"{label}: {s['smallest']} px")
            result.tables += s["tables"]
            result.visible_tables += s["visible_tables"]
            result.stills += s["stills"]
            result.placeholders += s["placeholders"]
        if shot is not None:
            first = next((s for s in slides if s["tables"]), slides[0] if slides else None)
            if first is not None:
                await page.evaluate("([h, v]) => window.Reveal && Reveal.slide ? Reveal.slide(h, v)"
                                    " : (location.hash = `#/${h}/${v}`)", [first["h"], first["v"]])
                shot.parent.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(shot))
                result.screenshot = str(shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot)
    finally:
        await context.close()


async def _look_at_decks(jobs: list[tuple[Path, SlidesResult, Path | None]], navigate: bool = False) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for deck, result, shot in jobs:
                started = time.monotonic()
                try:
                    await look(browser, deck, result, shot, navigate=navigate)
                except Exception as exc:  # a browser-level failure is a failed check, reported
                    result.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                result.seconds += time.monotonic() - started
        finally:
            await browser.close()


def check_decks(decks: dict[str, tuple[Path, object]], shots: Path | None = None,
                known: dict | None = None, navigate: bool = False) -> list[SlidesResult]:
    """Check already-exported decks: ``{name: (deck path, the notebook it was exported from)}``."""
    known = known_reports() if known is None else known
    jobs, results = [], []
    for name, (deck, nb) in decks.items():
        result = SlidesResult(name)
        shown = [c for c in nb.cells if not _dropped(c)]
        result.widget_outputs = sum(1 for c in shown for o in c.get("outputs", [])
                                    if PLACEHOLDER in str(o.get("data", {}).get("text/plain", "")))
        result.solutions = solutions_shown(nb, deck.read_text(encoding="utf-8"))
        result.reports = reports(nb)
        found = {f"{kind}: {item}" for kind, items in result.reports.items() for item in items}
        listed = {f"{kind}: {item}" for kind, items in known.get(name, {}).items() for item in items}
        result.new_reports, result.gone_reports = sorted(found - listed), sorted(listed - found)
        jobs.append((deck, result, None if shots is None else shots / f"slides-{name}.png"))
        results.append(result)
    asyncio.run(_look_at_decks(jobs, navigate))
    return results


def _dropped(cell) -> bool:
    from course_lib.tooling.student_copy import dropped

    return dropped(cell)


def check_slides(notebooks: list[Path] | None = None, shots: Path | None = None,
                 navigate: bool = False) -> list[SlidesResult]:
    """Each chapter's deck from its stored outputs (``slides.exported``), checked in one headless Chromium."""
    import nbformat

    from course_lib.tooling.slides import exported

    notebooks = notebooks or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    shots = shots or ROOT / "screenshots"
    decks, exporting = {}, {}
    for path in notebooks:  # the decks the tests exported already, when the notebooks are unchanged
        started = time.monotonic()
        decks[path.stem] = (exported(path), nbformat.read(path, as_version=4))
        exporting[path.stem] = time.monotonic() - started
    results = check_decks(decks, shots, navigate=navigate)
    for result in results:
        result.seconds += exporting[result.notebook]
    return results
