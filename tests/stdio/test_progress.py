"""A student's progress: the student copy records each check's best score, ``make progress``
prints it, and the chapters in notebooks/ (run by nbval and regen) never record anything."""
import json
import subprocess
import sys
import warnings
from datetime import datetime, timezone

import pytest

from course_lib import progress
from course_lib.paths import NOTEBOOKS, ROOT

from test_progress_unit import copy_of, fresh_copy

EARLY = datetime(2026, 12, 1, 21, 5, tzinfo=timezone.utc)
HEADER = ["chapter", "exercise", "best score", "when"]


def cli(folder) -> tuple[int, list[str], str]:
    run = subprocess.run([sys.executable, "-m", "course_lib.progress", str(folder)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    return run.returncode, run.stdout.splitlines(), run.stderr


def test_a_fresh_student_copy_prints_an_empty_table_and_a_hint(fresh_copy):
    assert json.loads((fresh_copy / progress.FILE).read_text()) == {"version": 1, "exercises": {}}
    code, lines, err = cli(fresh_copy)
    assert (code, err) == (0, "")
    assert lines[0].split() == ["chapter", "exercise", "best", "score", "when"]
    assert set(lines[1]) <= {"-", " "} and len(lines) == 3
    assert lines[2] == f"no exercise checked yet: run a check cell in {fresh_copy}/ (make lab)"


def test_a_solved_exercise_is_one_row(fresh_copy, tmp_path):
    folder = copy_of(fresh_copy, tmp_path)
    entry = progress.record("01", "my_walk", 12, 12, where=folder, now=EARLY)
    assert entry == {"chapter": "01", "exercise": "my_walk", "score": 12, "total": 12, "when": "2026-12-01 21:05 UTC"}
    code, lines, _ = cli(folder)
    assert code == 0 and len(lines) == 3
    assert lines[2].split() == ["01", "my_walk", "12/12", "2026-12-01", "21:05", "UTC"]
    assert progress.table(folder).columns == HEADER


def test_only_a_student_copy_records(tmp_path, monkeypatch):
    before = sorted(p.name for p in NOTEBOOKS.iterdir())
    assert progress.record("01", "my_walk", 12, 12, where=NOTEBOOKS) is None
    monkeypatch.chdir(NOTEBOOKS)  # a kernel's working directory under nbval and regen
    assert progress.record("01", "my_walk", 12, 12) is None
    assert sorted(p.name for p in NOTEBOOKS.iterdir()) == before, "nothing written next to the chapters"
    assert progress.record("01", "my_walk", 12, 12, where=tmp_path) is None  # no progress file: no copy
    assert list(tmp_path.iterdir()) == []
    code, lines, _ = cli(tmp_path)
    assert code == 0 and lines[-1] == f"{tmp_path}/ is not a student copy: make student (or make lab) writes one"
    ignored = subprocess.run(["git", "check-ignore", "-q", f"student/{progress.FILE}"], cwd=ROOT)
    assert ignored.returncode == 0, "the progress file is never committed"


def test_bad_scores_and_a_damaged_file_lose_nothing(fresh_copy, tmp_path):
    folder = copy_of(fresh_copy, tmp_path)
    for score, total in [(13, 12), (-1, 12), (0, 0), (1.5, 3), ("12", 12)]:
        with pytest.raises(progress.ProgressError, match="0..total"):
            progress.record("01", "my_walk", score, total, where=folder)
    with pytest.raises(progress.ProgressError, match="chapter and its exercise"):
        progress.record("", "my_walk", 1, 2, where=folder)
    assert progress.table(folder).rows == []
    damaged = '{"version": 1, "exercises": {"01/my_walk": {"score": 3}}}\n'
    (folder / progress.FILE).write_text(damaged)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert progress.record("01", "my_walk", 12, 12, where=folder) is None
    assert [str(w.message) for w in caught] == [f"score not recorded: {folder / progress.FILE} is not a progress "
                                                "file (KeyError('chapter')): delete it to start afresh"]
    assert (folder / progress.FILE).read_text() == damaged, "the damaged file is left as it was"
    code, lines, err = cli(folder)
    assert (code, lines) == (1, []) and err.strip().endswith("delete it to start afresh")


def test_make_progress_prints_the_table():
    dry = subprocess.run(["make", "-n", "-s", "progress"], cwd=ROOT, capture_output=True, text=True)
    if "No rule to make target" in dry.stderr:
        pytest.skip("the Makefile has no progress target yet")
    assert dry.returncode == 0, dry.stderr
    (line,) = [line for line in dry.stdout.splitlines() if "-m course_lib.progress" in line]
    assert line.split()[0].endswith(".venv/bin/python")
