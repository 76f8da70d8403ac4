"""The strict line client and the envelope controls, against the hand-written oracle
fixtures/atlas/envelope_controls.json: a real atlas session is captured, then replayed
through a stand-in server with one damaged reply at a time, in normal and ``python -O``."""
import json

import anyio
import pytest

from course_lib.envelope import capture, check_reply_with_asserts, run_controls
from course_lib.paths import fixture
from course_lib.wire import CHECKS, LineClient, WireError, check_reply

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("atlas", "envelope_controls.json").read_text(encoding="utf-8"))
REPLAYS = [(row, mode) for row in ORACLE["replays"] for mode in ORACLE["modes"]]


@pytest.fixture(scope="module")
def controls():
    """One real capture, then every replay: 7 cases x 2 modes with the strict client, the
    tempting assert-based checker under -O, and the process faults."""
    async def run():
        recorded = await capture("legacy")
        strict = await run_controls(recorded, [r["case"] for r in ORACLE["replays"]], modes=ORACLE["modes"])
        asserts = await run_controls(recorded, [r["case"] for r in ORACLE["asserts_checker_under_O"]],
                                     modes=("-O",), checkers=("asserts",))
        faults = await run_controls(recorded, [r["case"] for r in ORACLE["process_faults"]], modes=("normal",))
        return recorded, strict, asserts, faults
    return anyio.run(run)


def test_capture_is_a_clean_real_session(controls):
    recorded, *_ = controls
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
def test_replay_fails_at_its_named_check(controls, row, mode):
    _, strict, _, _ = controls
    [run] = [r for r in strict if (r.case, r.mode) == (row["case"], mode)]
    assert run.failed_at == row["fails_at"], run.message
    assert run.started is row["started"]
    assert run.replies_checked == row["replies_checked"]
    # The interpreter really was (not) optimised: -O strips assert statements.
    assert run.optimize == (1 if mode == "-O" else 0)
    assert run.asserts_active is (mode == "normal")
    if row["started"]:
        assert run.exit_clean is True  # the stand-in exited by itself after stdin EOF, silently
    else:
        assert run.exit_clean is None  # stopped before any process existed


def test_the_controls_catch_an_assert_based_client(controls):
    """Control of the controls: the same replays with ``assert`` checks under -O pass or fail elsewhere."""
    _, _, asserts, _ = controls
    assert [(r.case, r.failed_at) for r in asserts] == \
        [(row["case"], row["fails_at"]) for row in ORACLE["asserts_checker_under_O"]]
    assert all(r.optimize == 1 and r.asserts_active is False for r in asserts)


def test_process_faults_fail_at_their_checks(controls):
    _, _, _, faults = controls
    assert [(r.case, r.failed_at) for r in faults] == \
        [(row["case"], row["fails_at"]) for row in ORACLE["process_faults"]]
    assert all(r.started for r in faults)
    assert all(r.exit_clean is False for r in faults if r.case not in ("mute",))
    [mismatch] = [r for r in faults if r.case == "request-mismatch"]
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
    assert caught.value.reason == "sdk_version" and not wire.started


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
    assert caught.value.reason == reason


def test_assert_checker_accepts_a_boolean_id_even_without_O():
    assert check_reply_with_asserts(b'{"jsonrpc":"2.0","id":true,"result":{}}', 1)["id"] is True
