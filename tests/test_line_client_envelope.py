"""The strict line client and the envelope controls, against the hand-written oracle
fixtures/atlas/envelope_controls.json: a real atlas session is captured, then replayed
through a stand-in server with one damaged reply at a time, in normal and ``python -O``.

Chapter 9 runs the replays (in both eras), the assert-based checker and six process faults, and
nbval re-executes it against its stored tables; these tests hold those stored rows to the oracle
(so each replay process runs once per suite) and run the one fault the chapter does not show.
"""
import json

import anyio
import pytest

from course_lib.chapters.envelope_controls import capture, check_reply_with_asserts, run_controls
from course_lib.tooling.regen import stored_rows
from course_lib.paths import NOTEBOOKS, fixture
from course_lib.line_client import CHECKS, LineClient, WireError, check_reply

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("atlas", "envelope_controls.json").read_text(encoding="utf-8"))
REPLAYS = [(row, mode) for row in ORACLE["replays"] for mode in ORACLE["modes"]]
CHAPTER = NOTEBOOKS / "08_stateless_wire.ipynb"


def chapter_rows(cell: str) -> list[dict[str, str]]:
    return stored_rows(CHAPTER, cell)


@pytest.fixture(scope="module")
def recorded():
    return anyio.run(capture, "legacy")


def test_capture_is_a_clean_real_session(recorded):
    requests = [x for x in recorded["exchanges"] if "reply" in x]
    assert len(requests) == ORACLE["session"]["requests"]
    assert len(recorded["exchanges"]) - len(requests) == ORACLE["session"]["notifications"]
    assert recorded["content_checks"] == ORACLE["session"]["content_checks"]["legacy"]
    assert recorded["exit"] == {"returncode": 0, "forced": False, "trailing_stdout": 0, "stderr": ""}
    assert recorded["sdk"] == "2.3.0"
    assert [x["request"]["id"] for x in requests] == list(range(1, len(requests) + 1))


async def test_capture_in_the_stateless_era():
    recorded = await capture("2026-07-28")
    assert recorded["content_checks"] == ORACLE["session"]["content_checks"]["2026-07-28"]
    assert recorded["exit"]["returncode"] == 0 and not recorded["exit"]["forced"]
    assert recorded["exchanges"][0]["request"]["method"] == "resources/list"  # no handshake
    assert all("_meta" in x["request"]["params"] for x in recorded["exchanges"])


@pytest.mark.parametrize("row,mode", REPLAYS, ids=[f"{r['case']}[{m}]" for r, m in REPLAYS])
def test_replay_fails_at_its_named_check(row, mode):
    runs = {(r["case"], r["interpreter"]): r for r in chapter_rows("runs = await run_controls(recorded, cases)")}
    assert len(runs) == len(REPLAYS)
    run = runs[row["case"], mode]
    assert run["stopped at"] == row["fails_at"]
    assert run["started"] == str(row["started"])
    assert run["replies ok"] == str(row["replies_checked"])
    # The interpreter really was (not) optimised: -O strips assert statements.
    assert run["asserts"] == str(mode == "normal")
    # Started: the stand-in exited by itself after stdin EOF, silently; else no process existed.
    assert run["clean exit"] == ("True" if row["started"] else "")


def test_damaged_replays_in_the_stateless_era_fail_at_the_same_checks():
    """The 2026-07-28 capture, replayed with the same damages: same named check, no reply accepted."""
    rows = [r for r in chapter_rows("modern = await run_controls(stateless, damages)")
            if r["interpreter"] in ORACLE["modes"]]  # the line under the table is not a row
    damaged = [(row["case"], mode) for row, mode in REPLAYS if row["started"] and row["case"] != "valid"]
    assert [(r["damaged reply"], r["interpreter"]) for r in rows] == damaged
    fails_at = {row["case"]: row["fails_at"] for row in ORACLE["replays"]}
    assert all(r["stopped at"] == fails_at[r["damaged reply"]] and r["replies ok"] == "0" for r in rows)


def test_the_controls_catch_an_assert_based_client():
    """Control of the controls: the same replays with ``assert`` checks under -O pass or fail elsewhere."""
    rows = [r for r in chapter_rows("naive = await run_controls(") if r["interpreter"] == "-O"]
    assert [(r["damaged reply"], r["outcome"]) for r in rows] == \
        [(row["case"], row["fails_at"]) for row in ORACLE["asserts_checker_under_O"]]
    assert all(r["assert statements active"] == "False" for r in rows)


async def test_process_faults_fail_at_their_checks(recorded):
    shown = [(r["server fault"], r["stopped at"]) for r in chapter_rows("faults = await run_controls(")]
    oracle = [(row["case"], row["fails_at"]) for row in ORACLE["process_faults"]]
    unshown = ["request-mismatch", "exit-code", "mute"]  # chapter 9 shows the stream faults only
    assert shown == [x for x in oracle if x[0] not in unshown]
    # The faults the chapter does not show run here.
    rest = await run_controls(recorded, unshown[1:], modes=("normal",))
    assert [(r.case, r.failed_at) for r in rest] == [x for x in oracle if x[0] in unshown[1:]]
    [mismatch] = await run_controls(recorded, ["request-mismatch"], modes=("normal",))
    assert (mismatch.case, mismatch.failed_at) in oracle
    assert mismatch.started and mismatch.exit_clean is False
    # exchanges[3] is request 3 (the first read): initialize and resources/list were answered, then
    # the stand-in refused the request it had not recorded and quit without a reply.
    assert mismatch.replies_checked == 2
    assert mismatch.message == "the server closed stdout before replying to request 3 (resources/read)"


async def test_wrong_sdk_stops_before_spawning():
    # A command that cannot start: reaching the spawn would raise LaunchError instead.
    wire = LineClient(["/nonexistent/server-binary"], sdk="1.29.0")
    with pytest.raises(WireError) as caught:
        async with wire:
            pass
    assert caught.value.check == "sdk_version" and not wire.started


@pytest.mark.parametrize("line,reason", [
    (b'{"jsonrpc":"2.0","id":1,"result":{}}', None),
    (b"server ready", "stdout_noise"),
    (b"[1]", "response_object"),
    (b'{"jsonrpc":"1.0","id":1,"result":{}}', "jsonrpc_version"),
    (b'{"id":1,"result":{}}', "jsonrpc_version"),
    (b'{"jsonrpc":"2.0","id":true,"result":{}}', "id_type"),
    (b'{"jsonrpc":"2.0","id":"1","result":{}}', "id_type"),
    (b'{"jsonrpc":"2.0","result":{}}', "id_type"),
    (b'{"jsonrpc":"2.0","id":2,"result":{}}', "id_match"),
    (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', "result_xor_error"),
    (b'{"jsonrpc":"2.0","id":1}', "result_xor_error"),
])
def test_check_reply_names_the_first_broken_rule(line, reason):
    if reason is None:
        assert check_reply(line, 1) == json.loads(line)
        return
    assert reason in CHECKS
    with pytest.raises(WireError) as caught:
        check_reply(line, 1)
    assert caught.value.check == reason


def test_assert_checker_accepts_a_boolean_id_even_without_O():
    assert check_reply_with_asserts(b'{"jsonrpc":"2.0","id":true,"result":{}}', 1)["id"] is True


def test_each_checker_alone_in_python_and_python_O():
    """Chapter 9's side-by-side cell: both checkers on the damaged first replies, in two interpreters."""
    rows = chapter_rows("side_by_side = []")
    shown = [(r["damaged reply"], r["interpreter"], r["assert version"], r["explicit version"]) for r in rows]
    assert shown == [(row["case"], interpreter, row["asserts"][mode], row["explicit"])
                     for row in ORACLE["checkers_alone"]
                     for interpreter, mode in (("python", "normal"), ("python -O", "-O"))]


def test_the_cell_written_checks_agree_with_check_reply_on_their_three_rules():
    rows = chapter_rows("agree_rows = []")
    assert len(rows) == 8  # the seven lines of the chapter's first table and a notification
    first = ("stdout_noise", "response_object", "jsonrpc_version")
    assert all(r["check_start"] in first + ("accepted",) and r["check_reply"] in CHECKS + ("accepted",) for r in rows)
    assert all((r["same"] == "True") == (r["check_reply"] in first + ("accepted",)) for r in rows)
    assert [r["check_start"] for r in rows].count("accepted") == 5  # the rules the exercise writes
