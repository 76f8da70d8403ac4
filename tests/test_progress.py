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
from course_lib.tooling.student_copy import generate

EARLY = datetime(2026, 12, 1, 21, 5, tzinfo=timezone.utc)
LATER = datetime(2026, 12, 2, 9, 30, tzinfo=timezone.utc)
HEADER = ["chapter", "exercise", "best score", "when"]


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("course") / "student"
    generate(out)
    return out


def copy_of(fresh_copy, tmp_path):
    """A student copy of its own for one test: the fresh copy's progress file in a new folder."""
    (tmp_path / progress.FILE).write_bytes((fresh_copy / progress.FILE).read_bytes())
    return tmp_path


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


def test_the_best_score_is_kept_over_a_worse_later_run(fresh_copy, tmp_path):
    folder = copy_of(fresh_copy, tmp_path)
    progress.record("06", "my_is_allowed", 9, 14, where=folder, now=EARLY)
    progress.record("06", "my_is_allowed", 3, 14, where=folder, now=LATER)  # worse: changes nothing
    assert progress.table(folder).rows == [["06", "my_is_allowed", "9/14", "2026-12-01 21:05 UTC"]]
    progress.record("06", "my_is_allowed", 9, 14, where=folder, now=LATER)  # as good: the first time stays
    assert progress.table(folder).rows == [["06", "my_is_allowed", "9/14", "2026-12-01 21:05 UTC"]]
    progress.record("06", "my_is_allowed", 14, 14, where=folder, now=LATER)  # better: replaces it
    progress.record("01", "my_walk", 0, 12, where=folder, now=LATER)
    assert progress.table(folder).rows == [["01", "my_walk", "0/12", "2026-12-02 09:30 UTC"],
                                          ["06", "my_is_allowed", "14/14", "2026-12-02 09:30 UTC"]]
    # a battery that grew is compared by fraction: 10/20 is worse than 9/14
    progress.record("06", "my_is_allowed", 7, 14, where=folder, now=EARLY)
    progress.record("01", "my_walk", 1, 24, where=folder, now=EARLY)
    assert progress.table(folder).rows[0] == ["01", "my_walk", "1/24", "2026-12-01 21:05 UTC"]


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


def test_a_check_cell_in_the_student_copy_records_its_card(fresh_copy, tmp_path, monkeypatch):
    """Every grader hands its card to ``scorecard.publish``: in a student copy that records the score."""
    from course_lib.grading.battery import Scenario
    from course_lib.grading.scorecard import Scorecard, Verdict, publish

    folder = copy_of(fresh_copy, tmp_path)
    monkeypatch.chdir(folder)  # a check cell runs in the notebook's folder
    rows = [Scenario(name, "legacy", "catalog", "normal", {}, "") for name in ("a", "b", "c")]
    publish(Scorecard("walk", [Verdict(rows[0], True, "ok"), Verdict(rows[1], True, "ok"),
                               Verdict(rows[2], False, "no")], battery="walk"))
    entries = json.loads((folder / progress.FILE).read_text())["exercises"]
    assert [(e["chapter"], e["exercise"], e["score"], e["total"]) for e in entries.values()] == [
        ("01_pagination", "walk", 2, 3)]


def test_a_check_in_notebooks_records_nothing(monkeypatch):
    from course_lib.grading.battery import Scenario
    from course_lib.grading.scorecard import Scorecard, Verdict, publish

    monkeypatch.chdir(NOTEBOOKS)
    before = sorted(p.name for p in NOTEBOOKS.iterdir())
    publish(Scorecard("walk", [Verdict(Scenario("a", "legacy", "catalog", "normal", {}, ""), True, "ok")],
                      battery="walk"))
    assert sorted(p.name for p in NOTEBOOKS.iterdir()) == before
