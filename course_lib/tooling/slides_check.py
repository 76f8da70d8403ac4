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
out of date: remove it). One screenshot of each deck's first table goes to ``screenshots/``.

``python -m course_lib.tooling.browser_check --slides [--navigate] [NOTEBOOK ...]`` (every chapter
by default; ``--navigate`` shows the slides one by one through the deck's URL, as a presenter
does, instead of measuring them all at once: slower, for a second opinion).
"""
from __future__ import annotations

import asyncio
import html as html_lib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.chromium import CHROMIUM, CHROMIUM_ARGS

SLIDES_DEFAULT = ROOT / "notebooks" / "00_orientation.ipynb"
KNOWN_REPORTS = ROOT / "fixtures" / "slides" / "known_reports.json"
PLACEHOLDER = "(run the cell in JupyterLab to"
COURSE_TABLE = "table.course-table"
WIDGET_STILL = ".course-widget-still"
VIEWPORT = {"width": 1280, "height": 720}
MIN_TEXT_PX = 16  # the smallest text a slide may show at 1280 x 720: readable from the back of a room
REPORTS = ("explanation sub-slide", "repeated section number", "stderr box")
_NUMBER = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)(?=[\s.·:)]|$)")  # a section, not the chapter title (#)

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


@dataclass
class SlidesResult:
    notebook: str
    seconds: float = 0.0
    slides: int = 0
    taller: list[str] = field(default_factory=list)      # "title: 812/720 px" of each slide taller than the slide
    cut_lines: int = 0                                   # lines (code, output, table rows) cut at the right
    cut: list[str] = field(default_factory=list)         # where: "title: the line's start"
    wrapped_lines: int = 0                               # lines the deck wrapped to fit (not cut: shown whole)
    continued: int = 0                                   # continuation slides the deck made
    shrunk: int = 0                                      # slides the deck shrank to fit
    smallest_px: float | None = None                     # the smallest text on any slide (slide pixels)
    small: list[str] = field(default_factory=list)       # "title: 12.8 px" of each slide with smaller text
    requests: list[str] = field(default_factory=list)    # every request that was not a local file
    solutions: list[str] = field(default_factory=list)   # solution or answers content the deck shows
    tables: int = 0              # course tables in the deck, as HTML <table> elements
    visible_tables: int = 0      # of which the browser lays out as a table when their slide shows
    stills: int = 0              # widget outputs shown as the still of their first state
    widget_outputs: int = 0      # widget outputs the chapter stores (on slides)
    placeholders: int = 0        # places where the deck shows the placeholder text instead
    page_errors: list[str] = field(default_factory=list)
    reports: dict[str, list[str]] = field(default_factory=dict)   # REPORTS found, each "cell N: heading"
    new_reports: list[str] = field(default_factory=list)          # found, and not in KNOWN_REPORTS
    gone_reports: list[str] = field(default_factory=list)         # in KNOWN_REPORTS, and not found
    screenshot: str = ""
    problem: str = ""

    def failures(self) -> dict[str, list[str]]:
        """What fails the deck, by named check (an empty list: the check passed)."""
        content = list(self.page_errors)
        if self.visible_tables != self.tables:
            content.append(f"{self.tables - self.visible_tables} of {self.tables} course tables not laid out as <table>")
        if self.stills != self.widget_outputs:
            content.append(f"{self.stills} widget stills for {self.widget_outputs} widget outputs")
        if self.placeholders:
            content.append(f"{self.placeholders} placeholders")
        if self.problem:
            content.append(self.problem)
        return {
            "overflow": [f"taller: {t}" for t in self.taller] + [f"cut: {c}" for c in self.cut],
            "text_size": [f"under {MIN_TEXT_PX} px: {s}" for s in self.small],
            "network": self.requests,
            "solution": self.solutions,
            "content": content,
            "reports": [f"new: {r}" for r in self.new_reports]
                       + [f"fixed, remove it from {KNOWN_REPORTS.name}: {r}" for r in self.gone_reports],
        }

    @property
    def ok(self) -> bool:
        return self.slides > 0 and not any(self.failures().values())

    def lines(self) -> list[str]:
        failed = [name for name, found in self.failures().items() if found]
        lines = [f"slides {self.notebook}: {self.slides} slides ({self.continued} continued, {self.shrunk} shrunk), "
                 f"{len(self.taller)} taller than the slide, {self.cut_lines} lines cut, "
                 f"smallest text {self.smallest_px if self.smallest_px is not None else '?'} px, "
                 f"{self.wrapped_lines} wrapped, {len(self.requests)} network requests, "
                 f"{self.visible_tables}/{self.tables} tables, {self.stills}/{self.widget_outputs} stills, "
                 f"{self.seconds:.1f} s: {'ok' if self.ok else 'FAILED ' + ', '.join(failed)}"]
        for name, found in self.failures().items():
            lines += [f"  {name}: {item}" for item in found[:12]]
        for kind, found in self.reports.items():
            lines += [f"  report {kind}: {item}" for item in found]
        return lines


# -- what the notebook says the deck must (not) show --------------------------------------------------

def _source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def solution_lines(nb) -> list[str]:
    """The distinctive lines of the cells only the instructor's copy has (tagged ``solution`` or
    ``answers``): each stripped line, longer than 20 characters, that no other cell has."""
    from course_lib.tooling.student_copy import dropped

    others = "\n".join(_source(c) for c in nb.cells if not dropped(c))
    lines = []
    for cell in nb.cells:
        if dropped(cell):
            lines += [line.strip() for line in _source(cell).splitlines()
                      if len(line.strip()) > 20 and not line.strip().startswith("#") and line.strip() not in others]
    return lines


def visible_text(deck_html: str) -> str:
    """What a deck shows as text: what is between the tags of its slides (code is split into spans)."""
    start = deck_html.find('<div class="slides">')
    body = re.sub(r"<(script|style)\b.*?</\1>", "", deck_html[max(start, 0):], flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", "", body))


def solutions_shown(nb, deck_html: str) -> list[str]:
    """Solution or answers content in a deck: such a cell's id, or one of its distinctive lines,
    or ``reference_`` code (a reference solution's name) anywhere on a slide."""
    from course_lib.tooling.student_copy import dropped

    shown = visible_text(deck_html)
    found = [f"cell {i} (tagged {', '.join(c.metadata.get('tags', []))}) is on a slide"
             for i, c in enumerate(nb.cells) if dropped(c) and c.get("id") and f'id="cell-id={c["id"]}"' in deck_html]
    found += [f"solution line shown: {line[:60]!r}" for line in solution_lines(nb) if line in shown]
    if "reference_" in shown:
        found.append("reference_ code shown")
    return found[:10]


def reports(nb) -> dict[str, list[str]]:
    """What the chapters' owners fix in the notebook (``REPORTS``), each as ``cell N: heading``."""
    from course_lib.tooling.presentation import slides_of
    from course_lib.tooling.slides import SUBSLIDE, slide_type

    found: dict[str, list[str]] = {kind: [] for kind in REPORTS}
    slides = slides_of(nb)
    for k, cells in enumerate(slides[1:], start=1):
        first = nb.cells[cells[0]]
        before = nb.cells[slides[k - 1][-1]]
        if ((first.metadata.get("slideshow", {}).get("slide_type") or slide_type(first, False)) == SUBSLIDE
                and all(nb.cells[i].cell_type == "markdown" for i in cells)
                and before.cell_type == "code" and before.get("outputs")):
            found["explanation sub-slide"].append(f"cell {cells[0]}: {_source(first).splitlines()[0][:60]}")
    seen: dict[str, int] = {}
    for cells in slides:
        for i in cells:
            cell = nb.cells[i]
            if cell.cell_type == "markdown":
                for line in _source(cell).splitlines():
                    match = _NUMBER.match(line)
                    if match and match.group(1) in seen:
                        found["repeated section number"].append(
                            f"cell {i}: {line[:60]} (also cell {seen[match.group(1)]})")
                    elif match:
                        seen[match.group(1)] = i
            elif any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", [])):
                found["stderr box"].append(f"cell {i}: {_source(cell).splitlines()[0][:60] if _source(cell) else ''}")
    return {kind: items for kind, items in found.items() if items}


def known_reports() -> dict[str, dict[str, list[str]]]:
    return json.loads(KNOWN_REPORTS.read_text(encoding="utf-8")) if KNOWN_REPORTS.exists() else {}


def _widget_outputs(nb) -> int:
    return sum(1 for c in nb.cells for o in c.get("outputs", [])
               if PLACEHOLDER in str(o.get("data", {}).get("text/plain", "")))


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
