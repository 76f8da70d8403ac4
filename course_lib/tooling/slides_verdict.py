"""A deck's verdict in the slides check: what fails it, by named check, and what its notebook says
it must (not) show.

``SlidesResult`` holds what :mod:`course_lib.tooling.slides_check` measured in the browser and
names the checks that fail (``failures``). The rest reads the chapter's notebook: the lines of its
solution and answers cells (``solutions_shown``: none may be on a slide) and what the chapters'
owners fix in it (``reports``), compared with those listed in ``fixtures/slides/known_reports.json``.
"""
from __future__ import annotations

import html as html_lib
import json
import re
from dataclasses import dataclass, field

from course_lib.paths import ROOT

KNOWN_REPORTS = ROOT / "fixtures" / "slides" / "known_reports.json"
MIN_TEXT_PX = 16  # the smallest text a slide may show at 1280 x 720: readable from the back of a room
REPORTS = ("explanation sub-slide", "repeated section number", "stderr box")
_NUMBER = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)(?=[\s.·:)]|$)")  # a section, not the chapter title (#)


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
