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

Two tracks, from three figures per chapter: presenting minutes (the estimate above), exercise
minutes (``fixtures/presentation/plan.json``: an estimate per exercise, keyed by the student's
function its exercise cell defines) and the MEASURED run time (``docs/timings.json``: every cell
executed with nbclient in a real kernel, by ``--measure``, rounded so a re-run rarely changes it).
Their sum is a chapter's content minutes. Cells that take ``SLOW_CELL`` seconds or more are
flagged: an instructor runs them before class.

The days rule (the plan's ``day``): a day is 8 hours door to door; lunch, two breaks, questions and,
on the first day, the set-up leave ``content_minutes`` (360) of content a day. The one-day track is
the chapters the plan marks ``one_day``: at most one day's content, covering the plan's ``topics``
(the five the course is named for), each in a one-day chapter with an exercise. The two-day track
places every chapter but the appendix (the last) on day 1 or day 2, each day at most one day's
content. ``tracks_table()`` renders both as a short Markdown table (``docs/tracks.md``).

``python -m course_lib.tooling.presentation [--measure] [--write-tracks] [NOTEBOOK ...]`` prints
each chapter's minutes and problems (every chapter when none is named) and the tracks; it exits
1 if any chapter has a problem. ``--measure`` executes the chapters first and rewrites their
entries in ``docs/timings.json``; ``--write-tracks`` rewrites ``docs/tracks.md``.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.slides import CONTINUE, SLIDE, SUBSLIDE, heading_levels, on_slide, slide_type, trimmed
from course_lib.tooling.student_copy import SOLUTION, dropped, tags

WIDTH = 100
MAX_SLIDE_LINES = 40
MAX_MINUTES = 40
WORDS_PER_MINUTE = 130
CODE_CELL_MINUTES = 1.5
NEXT = re.compile(r"^\*\*Next:\*\*\s*\[[^\]]+\]\(([^)]+\.ipynb)\)")
_HEADING = re.compile(r"^#{1,6}\s")
PLAN = ROOT / "fixtures" / "presentation" / "plan.json"
TIMINGS = ROOT / "docs" / "timings.json"
TRACKS_PAGE = ROOT / "docs" / "tracks.md"
SLOW_CELL = 10  # seconds: a cell this slow is run before class (its outputs are then ready)
TABLE_WIDTH = 75


def chapters(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def _source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


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
    lines = [] if cell.cell_type == "code" and _hidden(cell) else _source(cell).rstrip().splitlines()
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


def minutes(nb) -> float:
    """Presenting minutes: markdown words at ``WORDS_PER_MINUTE`` plus ``CODE_CELL_MINUTES`` for
    each non-empty code cell; a solution cell (and the markdown that introduces it) counts nothing."""
    cells = [c for c in nb.cells if SOLUTION not in tags(c)]
    words = sum(len(_source(c).split()) for c in cells if c.cell_type == "markdown")
    code = sum(c.cell_type == "code" and bool(_source(c).strip()) for c in cells)
    return words / WORDS_PER_MINUTE + CODE_CELL_MINUTES * code


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")


def heading_problems(nb) -> list[str]:
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        source = _source(cell)
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
            title = _first_line(_source(nb.cells[cells[0]]))[:50]
            problems.append(f"slide at cell {cells[0]} ({title!r}) has {total} lines "
                            f"(cells {cells[0]}–{cells[-1]}; at most {MAX_SLIDE_LINES})")
    return problems


def width_problems(nb) -> list[str]:
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = [len(line) for line in _source(cell).splitlines() if len(line) > WIDTH]
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
    text = _source(last).strip() if last is not None and last.cell_type == "markdown" else ""
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


# -- the tracks ---------------------------------------------------------------------------------

def plan() -> dict:
    """The course plan: the chapters in order (one line each, by file stem), their exercises'
    minutes, the one-day selection, the day's length and its breaks."""
    return json.loads(PLAN.read_text(encoding="utf-8"))


def timings() -> dict:
    """The measured run times (``--measure`` writes them): ``{"chapters": {stem: {...}}, ...}``."""
    return json.loads(TIMINGS.read_text(encoding="utf-8")) if TIMINGS.exists() else {"chapters": {}}


def _round(seconds: float, step: int) -> int:
    return int(step * round(seconds / step))


def measure(path: Path, timeout: int = 600) -> dict:
    """Execute a chapter top to bottom in a real kernel (nbclient, nothing written back) and time
    each cell; the chapter's run time counts the cells a deck shows (no solution or answers cell),
    rounded to 5 s; each cell of ``SLOW_CELL`` s or more is flagged, rounded to 5 s."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_before = os.environ.pop("PYTEST_CURRENT_TEST", None)
    seconds: dict[int, float] = {}
    started = time.monotonic()
    try:
        client = NotebookClient(nb, kernel_name="python3", timeout=timeout, record_timing=False,
                                store_widget_state=False, resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                t = time.monotonic()
                client.execute_cell(cell, i)
                seconds[i] = time.monotonic() - t
    finally:
        if env_before is not None:
            os.environ["PYTEST_CURRENT_TEST"] = env_before
    shown = [i for i in seconds if not dropped(nb.cells[i])]
    return {"run_seconds": _round(sum(seconds[i] for i in shown), 5),
            "wall_seconds": _round(time.monotonic() - started, 5),
            "slow_cells": [{"cell": i, "seconds": max(_round(seconds[i], 5), SLOW_CELL)}
                           for i in shown if seconds[i] >= SLOW_CELL]}


def write_timings(paths: list[Path]) -> dict:
    """Measure ``paths`` one after the other and rewrite their entries in ``docs/timings.json``."""
    data = timings()
    data.setdefault("chapters", {})
    for path in paths:
        data["chapters"][path.stem] = measure(path)
        print(f"measured {path.stem}: {data['chapters'][path.stem]}", flush=True)
    data["chapters"] = dict(sorted(data["chapters"].items()))
    data["load_average"] = round(os.getloadavg()[0] * 2) / 2
    data["cores"] = os.cpu_count()
    data["how"] = ("python -m course_lib.tooling.presentation --measure: every cell executed with nbclient in a "
                   "real kernel; run_seconds counts the cells a deck shows; load_average: the machine's at the end")
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data


@dataclass
class ChapterTime:
    stem: str
    present: int       # presenting minutes (``minutes``)
    exercise: int      # the exercise's minutes (the plan's estimate)
    run: float         # measured run minutes (``docs/timings.json``), 0 when not measured
    slow_cells: list[dict]
    one_day: bool

    @property
    def total(self) -> float:
        return self.present + self.exercise + self.run


def exercise_minutes(entry: dict) -> int:
    """A chapter's exercise minutes: the sum over its exercises (a chapter may have several)."""
    return sum(e["minutes"] for e in entry.get("exercises", []))


def chapter_times() -> list[ChapterTime]:
    """Every chapter of the plan, in its order, with its three figures."""
    import nbformat

    measured = timings().get("chapters", {})
    out = []
    for entry in plan()["chapters"]:
        stem = entry["stem"]
        nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        run = measured.get(stem, {})
        out.append(ChapterTime(stem, round(minutes(nb)), exercise_minutes(entry),
                               round(run.get("run_seconds", 0) / 60, 1), run.get("slow_cells", []),
                               bool(entry.get("one_day"))))
    return out


def content_minutes() -> int:
    """One day's content: the plan's door-to-door day less lunch, breaks, questions (and set-up)."""
    return plan()["day"]["content_minutes"]


def tracks(times: list[ChapterTime] | None = None,
           two_days: dict[str, int | None] | None = None) -> dict[str, list[tuple[str, list[str], float]]]:
    """``{"one day": [(day, stems, content minutes)], "two days": [...]}``, from the plan's
    choices: ``one_day`` chapters make the one-day track (the others are left for a second day);
    ``two_days`` gives each chapter its day of the two-day track (null: the appendix, read alone).
    A day's minutes are its chapters' content (present + exercise + run)."""
    times = times or chapter_times()
    days = two_days if two_days is not None else {e["stem"]: e.get("two_days") for e in plan()["chapters"]}

    def day(label: str, chosen: list[ChapterTime]) -> tuple[str, list[str], float]:
        return label, [t.stem for t in chosen], sum(t.total for t in chosen)

    one = [day("day 1", [t for t in times if t.one_day]),
           ("not in it", [t.stem for t in times if not t.one_day], 0.0)]
    two = [day(f"day {n}", [t for t in times if days[t.stem] == n]) for n in (1, 2)]
    two.append(("appendix", [t.stem for t in times if days[t.stem] not in (1, 2)], 0.0))
    return {"one day": [d for d in one if d[1]], "two days": [d for d in two if d[1]]}


def track_problems(both: dict | None = None, times: list[ChapterTime] | None = None,
                   topics: dict[str, str] | None = None) -> list[str]:
    """What breaks the days rule: a day over ``content_minutes``; a topic of the course's name that
    the one-day track lacks, or teaches without an exercise; a chapter other than the appendix (the
    last) left out of the two-day track."""
    times = times or chapter_times()
    both = both or tracks(times)
    limit = content_minutes()
    problems = [f"{name}, {day}: {total:.0f} content minutes (at most {limit})"
                for name, track in both.items() for day, _, total in track if total > limit]
    one_day = {stem for day, stems, _ in both["one day"] if day == "day 1" for stem in stems}
    exercises = {t.stem: t.exercise > 0 for t in times}
    for topic, stem in (plan()["topics"] if topics is None else topics).items():
        if stem not in one_day:
            problems.append(f"one day: {topic} ({stem}) is not in it")
        elif not exercises.get(stem):
            problems.append(f"one day: {topic} ({stem}) has no exercise")
    left = [stem for day, stems, _ in both["two days"] if day == "appendix" for stem in stems]
    problems += [f"two days: {stem} is left out (only the appendix, {times[-1].stem}, may be)"
                 for stem in left if stem != times[-1].stem]
    return problems


def _hours(minutes_: float) -> str:
    m = int(round(minutes_))
    return f"{m // 60} h {m % 60:02d}"


def tracks_table(times: list[ChapterTime] | None = None) -> str:
    """Both tracks as one Markdown table, a row per chapter (at most ``TABLE_WIDTH`` columns):
    its presenting, exercise and measured run minutes and its day in each track, then each
    day's total with its breaks."""
    times = times or chapter_times()
    both = tracks(times)
    where = {name: {stem: day for day, stems, _ in track for stem in stems} for name, track in both.items()}
    rows = [("chapter", "talk", "task", "run", "one day", "two days")]
    for t in times:
        run = f"{t.run:.1f}" + ("*" if t.slow_cells else "")
        rows.append((t.stem, str(t.present), str(t.exercise), run,
                     where["one day"][t.stem].replace("not in it", "-"),
                     where["two days"][t.stem]))
    for name in both:
        for day, stems, total in both[name]:
            if total:
                rows.append((f"total, {name}, {day}", "", "", "", _hours(total) if name == "one day" else "",
                             _hours(total) if name == "two days" else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1, 2, 3}

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if i in right else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    lines = [line(rows[0]), rule] + [line(r) for r in rows[1:]]
    return "\n".join(lines)


def rules() -> list[str]:
    """The days rule in words, from the plan (what ``make presentation`` and the tracks page state)."""
    import textwrap

    day = plan()["day"]
    text = (f"A day is {day['door_to_door'] // 60} hours door to door: {day['lunch']} minutes of lunch, "
            f"{len(day['breaks'])} breaks of {day['breaks'][0]} minutes, {day['questions']} minutes of questions "
            f"and, on the first day, {day['setup_first_day']} minutes of set-up leave about six hours: the budget "
            f"is {day['content_minutes']} content minutes a day. Content = talk (markdown words / "
            f"{WORDS_PER_MINUTE} + {CODE_CELL_MINUTES} minutes for each code cell a student sees) + task (the "
            "exercises) + run (the measured run time). The one-day track teaches the five topics the course is "
            "named for, each with an exercise; the two-day track every chapter but the appendix.")
    return textwrap.wrap(text, 95)


def tracks_page() -> str:
    """``docs/tracks.md``: what ``--write-tracks`` writes (``tests/inprocess/test_presentation.py`` compares)."""
    measured = timings()
    topics = ", ".join(f"{topic} (`{stem}`)" for topic, stem in plan()["topics"].items())
    return "\n".join([
        "# Teaching the course: a one-day and a two-day track",
        "",
        "Generated by `python -m course_lib.tooling.presentation --write-tracks` from",
        "`fixtures/presentation/plan.json` (the chapters, the exercises' minutes, the tracks, the day)",
        "and `docs/timings.json` (run times measured by `--measure`).",
        "",
        *rules(),
        "",
        f"The five topics: {topics}.",
        "",
        "Minutes per chapter: *talk* is the presenting estimate, *task* the plan's estimate for the",
        "chapter's exercises, *run* the measured run time of its cells (`*`: it has a cell of",
        f"{SLOW_CELL} s or more: run it before class, see `make presentation`). `-`: not in the",
        "one-day track; `appendix`: read alone, after the course.",
        f"Measured at a load average of {measured.get('load_average', '?')} on {measured.get('cores', '?')} cores.",
        "",
        tracks_table(),
        "",
    ])


TRACKS_CELL = "00-tracks"  # chapter 00's cell that shows the tracks
README_MARKS = ("<!-- tracks: written by python -m course_lib.tooling.presentation --write-tracks -->",
                "<!-- /tracks -->")


def tracks_cell_source() -> str:
    return "\n".join([
        "### Two tracks: one day, two days",
        "",
        "Minutes per chapter: *talk* (presenting), *task* (its exercises), *run* (its cells, measured;",
        "`*`: run it before class). A day holds six hours of content once lunch, breaks, questions and",
        "set-up are counted; `docs/tracks.md` states the rule, and `make presentation` prints the table.",
        "",
        tracks_table(),
    ])


def readme_with_tracks(text: str) -> str:
    start, end = README_MARKS
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{tracks_table()}\n{end}{tail}"


def write_tracks() -> list[Path]:
    """Write the tracks into docs/tracks.md, chapter 00's tracks cell and the README. Chapter 00's
    own talk minutes count the cell's words, so the cell is written until it no longer changes."""
    import nbformat

    path = chapters()[0]
    for _ in range(5):
        nb = nbformat.read(path, as_version=4)
        (cell,) = [c for c in nb.cells if c.get("id") == TRACKS_CELL]
        source = tracks_cell_source()
        if cell.source == source:
            break
        cell.source = source
        nbformat.write(nb, path)
    TRACKS_PAGE.write_text(tracks_page(), encoding="utf-8")
    readme = ROOT / "README.md"
    readme.write_text(readme_with_tracks(readme.read_text(encoding="utf-8")), encoding="utf-8")
    return [TRACKS_PAGE, path, readme]


def main(argv: list[str]) -> int:
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
