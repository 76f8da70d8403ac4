"""Your progress through the exercises: ``make progress`` (``python -m course_lib.progress [FOLDER]``).

A check cell run in the student copy records its score with ``record`` in ``.progress.json``,
next to the chapters (``student/.progress.json``; ``student/`` is never committed). ``make
student`` creates that file empty, and ``record`` writes only into a folder that has one, so the
chapters in ``notebooks/`` (which nbval and regen run) never record anything. The file keeps,
for each exercise, the best score so far and when it was reached: a worse later run changes
nothing. ``python -m course_lib.progress`` prints one row per exercise.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from datetime import datetime, timezone
from pathlib import Path

from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.paths import NOTEBOOKS, ROOT

FILE = ".progress.json"
STUDENT = ROOT / "student"
VERSION = 1


class ProgressError(CourseError):
    """A score that cannot be recorded, or a progress file that cannot be read."""

    reason = "bad_progress"


def _folder(where: Path | str | None) -> Path:
    # A kernel's working directory is its notebook's folder (JupyterLab, nbval and regen alike).
    return Path.cwd() if where is None else Path(where)


def is_student_copy(where: Path | str | None = None) -> bool:
    """True for a folder ``make student`` wrote (it has a progress file), never for notebooks/."""
    folder = _folder(where).resolve()
    return folder != NOTEBOOKS.resolve() and (folder / FILE).is_file()


def start(where: Path | str) -> bool:
    """Create the empty progress file of a new student copy; True if it was created."""
    path = Path(where) / FILE
    if path.exists():
        return False
    _write(path, {})
    return True


def read(where: Path | str | None = None) -> dict[str, dict]:
    """The recorded exercises, ``"chapter/exercise"`` → its best score; {} without a progress file."""
    path = _folder(where) / FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["exercises"]
        for entry in entries.values():
            [entry[k] for k in ("chapter", "exercise", "score", "total", "when")]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ProgressError(f"{path} is not a progress file ({exc!r}): delete it to start afresh") from None
    return entries


def _write(path: Path, entries: dict) -> None:
    """Replace the file in one step: a reader never sees half of it."""
    fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"version": VERSION, "exercises": entries}, out, indent=1, sort_keys=True)
        out.write("\n")
    os.replace(tmp, path)


def _better(new: dict, old: dict) -> bool:
    # Compared as fractions: a battery that grew keeps its old best comparable.
    return new["score"] * old["total"] > old["score"] * new["total"]


def record(chapter: str, exercise: str, score: int, total: int, *, where: Path | str | None = None,
           now: datetime | None = None) -> dict | None:
    """Record one check's score (``score`` of ``total`` scenarios passed) of ``exercise`` in
    ``chapter``; ``where`` is the notebook's folder (by default the kernel's working directory).

    Returns the exercise's best entry, or None outside a student copy (nothing is written).
    A damaged progress file is left as it is, with a warning: a check never fails over it.
    """
    if not (isinstance(score, int) and isinstance(total, int) and 0 <= score <= total and total > 0):
        raise ProgressError(f"a score is 0..total of total > 0 scenarios, not {score!r}/{total!r}")
    if not (chapter and exercise):
        raise ProgressError("a score needs its chapter and its exercise")
    folder = _folder(where)
    if not is_student_copy(folder):
        return None
    try:
        entries = read(folder)
    except ProgressError as exc:
        warnings.warn(f"score not recorded: {exc}", stacklevel=2)
        return None
    when = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    new = {"chapter": chapter, "exercise": exercise, "score": score, "total": total, "when": when}
    key = f"{chapter}/{exercise}"
    if key not in entries or _better(new, entries[key]):
        entries[key] = new
        _write(folder / FILE, entries)
    return entries[key]


def table(where: Path | str | None = None) -> Table:
    """One row per exercise, in chapter order: chapter, exercise, best score, when."""
    entries = sorted(read(where).values(), key=lambda e: (e["chapter"], e["exercise"]))
    return Table(["chapter", "exercise", "best score", "when"],
                 [[e["chapter"], e["exercise"], f"{e['score']}/{e['total']}", e["when"]] for e in entries])


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else STUDENT
    resolved = folder.resolve()
    shown = resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else folder
    try:
        view = table(folder)
    except ProgressError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(view.text())
    if not view.rows:
        hint = (f"no exercise checked yet: run a check cell in {shown}/ (make lab)" if is_student_copy(folder)
                else f"{shown}/ is not a student copy: make student (or make lab) writes one")
        print(hint)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
