"""In-process: the checks of tests/stdio/test_progress.py's subject that start no process."""
import json
from datetime import datetime, timezone

import pytest

from course_lib import progress
from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import generate

EARLY = datetime(2026, 12, 1, 21, 5, tzinfo=timezone.utc)
LATER = datetime(2026, 12, 2, 9, 30, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("course") / "student"
    generate(out)
    return out


def copy_of(fresh_copy, tmp_path):
    """A student copy of its own for one test: the fresh copy's progress file in a new folder."""
    (tmp_path / progress.FILE).write_bytes((fresh_copy / progress.FILE).read_bytes())
    return tmp_path


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
