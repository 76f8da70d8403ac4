"""A recording cannot drift silently: re-recorded on the real servers, it is the committed one.

The reference and a wrong solution of chapter 2's exercise, and the references of the served exercises
of chapters 3, 4, 5, 6 and 8, of chapter 8's envelope checker and of the capstone's client (their one
real run with every row passing), are recorded again into a temporary folder (``make record``'s own code)
and compared, solution by solution, with ``fixtures/grading/transcripts/<exercise>.json``, once the
servers' random cursors, the length of a stopped call's wire and the seconds an audit line measured are
set aside (``transcripts.sanitized``)."""
import json

import pytest

from course_lib.tooling import transcripts as t
from course_lib.tooling.record import record

pytestmark = pytest.mark.anyio
AGAIN = {"walk_restart": ["reference", "keeps_the_refused_pages"],  # every row of the battery, and a wrong restart
         "tool_result": ["reference"], "snapshot_server": ["reference"],  # served: the harness's real replies
         "checked_tools": ["reference"], "read_handler": ["reference"],  # and the audit's lines
         "envelope": ["reference"],  # its replays in both interpreters
         "paging_server": ["reference"],  # and the lines of the labs that lend it cursors
         "capstone": ["reference"]}  # the facts of its refresh rows, the wire of its bundle rows


@pytest.mark.parametrize("exercise", AGAIN)
async def test_a_recording_made_again_is_the_committed_one(tmp_path, exercise):
    path = await record(exercise, tmp_path, AGAIN[exercise])
    again = json.loads(path.read_text(encoding="utf-8"))["solutions"]
    committed = t.recording(exercise)["solutions"]
    assert list(again) == AGAIN[exercise]
    # the sanitizing itself: tests/inprocess/test_transcripts_unit.py
    for label in AGAIN[exercise]:
        assert again[label]["fingerprint"] == committed[label]["fingerprint"], f"{label}: re-record with make record"
        text = t.sanitized(json.dumps(again[label], indent=1))
        assert text == t.sanitized(json.dumps(committed[label], indent=1)), f"{label} recorded differently now"
        if exercise == "walk_restart":
            assert "<cursor 0>" in text, "the cursors are the servers' own, set aside by name"

