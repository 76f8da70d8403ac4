"""The one-day and two-day tracks: ``python -m course_lib.tooling.presentation --write-tracks``.

Two tracks, from three figures per chapter: presenting minutes (the estimate of
:func:`course_lib.tooling.presentation_timings.minutes`), exercise minutes (``fixtures/presentation/plan.json``:
an estimate per exercise, keyed by the student's function its exercise cell defines) and the MEASURED
run time (``docs/timings.json``, written by :mod:`course_lib.tooling.presentation_timings`). Their sum
is a chapter's content minutes.

The days rule (the plan's ``day``): a day is 8 hours door to door; lunch, two breaks, questions and,
on the first day, the set-up leave ``content_minutes`` (360) of content a day. The one-day track is
the chapters the plan marks ``one_day``: at most one day's content, covering the plan's ``topics``
(the five the course is named for), each in a one-day chapter with an exercise. The two-day track
places every chapter but the appendix (the last) on day 1 or day 2, each day at most one day's
content. ``tracks_table()`` renders both as a short Markdown table (``docs/tracks.md``, chapter 00's
tracks cell and the README).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.presentation_timings import (CODE_CELL_MINUTES, SLOW_CELL, WORDS_PER_MINUTE, chapters,
                                                     minutes, timings)

PLAN = ROOT / "fixtures" / "presentation" / "plan.json"
TRACKS_PAGE = ROOT / "docs" / "tracks.md"
TABLE_WIDTH = 75


def plan() -> dict:
    """The course plan: the chapters in order (one line each, by file stem), their exercises'
    minutes, the one-day selection, the day's length and its breaks."""
    return json.loads(PLAN.read_text(encoding="utf-8"))



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

