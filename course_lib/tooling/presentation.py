"""Is a chapter presentable? The measures behind ``tests/inprocess/test_presentation.py``.

An instructor presents a chapter as slides (``make slides``) or live in JupyterLab, so every
chapter keeps to a few rules:

* ``headings``: a markdown cell that opens a slide begins with its heading, and no markdown cell
  holds prose above a ``##``/``###`` heading (that prose belongs on the previous slide);
* ``slide_length``: no slide is longer than ``MAX_SLIDE_LINES`` rendered lines (``rendered_lines``);
* ``line_width``: every code line and every stored text output line fits ``WIDTH`` characters;
* ``minutes``: the estimate (markdown words / ``WORDS_PER_MINUTE`` + ``CODE_CELL_MINUTES`` for
  each code cell a student sees; a solution cell counts nothing) stays within ``MAX_MINUTES``;
* ``next_link``: every chapter but the last ends with ``**Next:** [NN_name](NN_name.ipynb)``
  naming the chapter that follows it.

The measured run times are :mod:`course_lib.tooling.presentation_timings`'s, the one-day and
two-day tracks :mod:`course_lib.tooling.presentation_tracks`'s.

``python -m course_lib.tooling.presentation [--measure] [--write-tracks] [NOTEBOOK ...]`` prints
each chapter's minutes and problems (every chapter when none is named) and the tracks; it exits
1 if any chapter has a problem. ``--measure`` executes the chapters first and rewrites their
entries in ``docs/timings.json``; ``--write-tracks`` rewrites ``docs/tracks.md``.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.slides import CONTINUE, SLIDE, SUBSLIDE, heading_levels, on_slide, slide_type, trimmed
from course_lib.tooling.presentation_timings import (CODE_CELL_MINUTES, WORDS_PER_MINUTE, cell_source,  # noqa: F401
                                                     chapters, minutes)
from course_lib.tooling.student_copy import SOLUTION, dropped, tags

WIDTH = 100
MAX_SLIDE_LINES = 40
MAX_MINUTES = 40

NEXT = re.compile(r"^\*\*Next:\*\*\s*\[[^\]]+\]\(([^)]+\.ipynb)\)")
_HEADING = re.compile(r"^#{1,6}\s")


def _hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def output_lines(cell) -> list[str]:
    """The lines a code cell's stored outputs show as text: streams, ``text/plain``, errors."""
    lines: list[str] = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            text = output.get("text", "")
        elif kind in ("execute_result", "display_data"):
            text = output.get("data", {}).get("text/plain", "")
        elif kind == "error":
            text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
        else:
            continue
        text = text if isinstance(text, str) else "".join(text)
        lines += text.rstrip("\n").splitlines()
    return lines


def rendered_lines(cell) -> int:
    """How many lines a cell takes on a slide: its markdown or code source lines (a hidden
    source counts nothing) plus its stored output lines (of an exercise check or a reference table, what its slide shows),
    a line over ``WIDTH`` characters counting as two. Trailing blank lines count nothing."""
    lines = [] if cell.cell_type == "code" and _hidden(cell) else cell_source(cell).rstrip().splitlines()
    if cell.cell_type == "code":
        shown = output_lines(cell)
        lines += on_slide(shown) if trimmed(cell) else shown
    return sum(1 if len(line) <= WIDTH else 2 for line in lines)


def slides_of(nb) -> list[list[int]]:
    """The cells of each slide (or sub-slide), by index, from the stored slide metadata that
    ``make regen`` writes (derived from the headings when a cell has none). Solution and
    answers cells are not on any slide: the decks and the student copy leave them out."""
    slides: list[list[int]] = []
    for i, cell in enumerate(nb.cells):
        if dropped(cell):
            continue
        kind = cell.metadata.get("slideshow", {}).get("slide_type") or slide_type(cell, i == 0)
        if kind in (SLIDE, SUBSLIDE) or not slides:
            slides.append([i])
        elif kind == CONTINUE:
            slides[-1].append(i)
    return slides


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")


def heading_problems(nb) -> list[str]:
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        source = cell_source(cell)
        opens = cell.metadata.get("slideshow", {}).get("slide_type") in (SLIDE, SUBSLIDE) or i == 0
        starts = bool(_HEADING.match(_first_line(source)))
        if opens and not starts:
            problems.append(f"cell {i} opens a slide but begins with {_first_line(source)[:50]!r}, not its heading")
        elif not starts and any(level in (2, 3) for level in heading_levels(source)):
            problems.append(f"cell {i} has prose before its heading {_first_heading(source)!r}")
    return problems


def _first_heading(source: str) -> str:
    return next((line for line in source.splitlines() if _HEADING.match(line)), "")[:60]


def slide_problems(nb) -> list[str]:
    problems = []
    for cells in slides_of(nb):
        total = sum(rendered_lines(nb.cells[i]) for i in cells)
        if total > MAX_SLIDE_LINES:
            title = _first_line(cell_source(nb.cells[cells[0]]))[:50]
            problems.append(f"slide at cell {cells[0]} ({title!r}) has {total} lines "
                            f"(cells {cells[0]}–{cells[-1]}; at most {MAX_SLIDE_LINES})")
    return problems


def width_problems(nb) -> list[str]:
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = [len(line) for line in cell_source(cell).splitlines() if len(line) > WIDTH]
        out = [len(line) for line in output_lines(cell) if len(line) > WIDTH]
        if code:
            problems.append(f"cell {i}: {len(code)} code line(s) over {WIDTH} characters (longest {max(code)})")
        if out:
            problems.append(f"cell {i}: {len(out)} output line(s) over {WIDTH} characters (longest {max(out)})")
    return problems


def next_link_problems(path: Path, nb, following: Path | None) -> list[str]:
    """The last cell must be markdown ending with a ``**Next:**`` link to the following chapter
    (the last chapter needs none; a link it has must lead to an existing notebook)."""
    last = nb.cells[-1] if nb.cells else None
    text = cell_source(last).strip() if last is not None and last.cell_type == "markdown" else ""
    paragraph = " ".join(text.split("\n\n")[-1].split())  # the last paragraph, however it wraps
    match = NEXT.match(paragraph)
    if match is None:
        return [] if following is None else [f"does not end with a '**Next:** [{following.stem}]"
                                             f"({following.name})' line"]
    target = match.group(1)
    if not (path.parent / target).exists():
        return [f"**Next:** links to {target}, which does not exist"]
    if following is not None and target != following.name:
        return [f"**Next:** links to {target}, but the next chapter is {following.name}"]
    return []


@dataclass
class Report:
    path: Path
    minutes: float
    slides: int
    problems: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())


def check(path: Path, following: Path | None) -> Report:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    estimate = minutes(nb)
    report = Report(path, estimate, len(slides_of(nb)))
    report.problems = {
        "headings": heading_problems(nb),
        "slide_length": slide_problems(nb),
        "line_width": width_problems(nb),
        "minutes": [f"estimated {estimate:.0f} minutes (at most {MAX_MINUTES})"] if estimate > MAX_MINUTES else [],
        "next_link": next_link_problems(path, nb, following),
    }
    return report


def check_all(paths: list[Path] | None = None) -> list[Report]:
    """Every chapter's report; a chapter's successor is the next one in the notebooks folder."""
    every = chapters()
    paths = paths or every
    return [check(p, next((q for q in every if q.name > p.name), None) if p in every else None) for p in paths]



def main(argv: list[str]) -> int:
    from course_lib.tooling.presentation_timings import timings, write_timings
    from course_lib.tooling.presentation_tracks import (exercise_minutes, plan, rules, track_problems, tracks_table,
                                                        write_tracks)

    flags = {a for a in argv if a.startswith("--")}
    paths = [Path(a).resolve() for a in argv if not a.startswith("--")]
    if "--measure" in flags:
        write_timings(paths or chapters())
    if "--write-tracks" in flags:
        for written in write_tracks():
            print(f"wrote {written.relative_to(ROOT)}")
    reports = check_all(paths or None)
    measured = timings().get("chapters", {})
    planned = {e["stem"]: e for e in plan()["chapters"]}
    for r in reports:
        stem = r.path.stem
        run = measured.get(stem)
        exercise = exercise_minutes(planned.get(stem, {}))
        ran = f"run {run['run_seconds'] / 60:.1f} min (measured)" if run else "run not measured"
        print(f"{'ok  ' if r.ok else 'FAIL'} {r.path.name}: present {r.minutes:.0f} min (estimated), "
              f"exercise {exercise} min, {ran}, {r.slides} slides")
        for cell in (run or {}).get("slow_cells", []):
            print(f"     run before class: cell {cell['cell']} ({cell['seconds']} s)")
        for rule, problems in r.problems.items():
            for problem in problems:
                print(f"     {rule}: {problem}")
    print()
    print("\n".join(rules()))
    print()
    print(tracks_table())
    problems = track_problems()
    for problem in problems:
        print(f"FAIL track {problem}")
    return 0 if all(r.ok for r in reports) and not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
