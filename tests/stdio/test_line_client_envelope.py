"""The strict line client and the envelope controls, against the hand-written oracle
fixtures/atlas/envelope_controls.json: a real atlas session is captured, then replayed
through a stand-in server with one damaged reply at a time, in normal and ``python -O``.

Chapter 08 teaches the named checks, the ``assert`` trap in one cell and ``check_start``; the
proof that each check stops where it should lives here: the replays in both eras, the
assert-based checker under ``-O`` (the negative control), every process fault, and what the
SDK's own client does with the same damaged replies.
"""
import json
import logging.handlers
import os
import subprocess
import sys
import tempfile

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

from course_lib.chapters.envelope_controls import capture, check_reply_with_asserts, damaged, run_controls
from course_lib.paths import ROOT, fixture
from course_lib.line_client import WireError, check_reply

from test_line_client_envelope_unit import OUTCOME

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("atlas", "envelope_controls.json").read_text(encoding="utf-8"))
REPLAYS = [(row, mode) for row in ORACLE["replays"] for mode in ORACLE["modes"]]
DAMAGES = [row["case"] for row in ORACLE["replays"] if row["started"] and row["case"] != "valid"]


@pytest.fixture(scope="module")
def recorded():
    return anyio.run(capture, "legacy")


@pytest.fixture(scope="module")
def runs(recorded):
    """Every replay of the oracle, in both interpreters: one client process per mode."""
    done = anyio.run(run_controls, recorded, [row["case"] for row in ORACLE["replays"]])
    return {(r.case, r.mode): r for r in done}


def test_capture_is_a_clean_real_session(recorded):
    requests = [x for x in recorded["exchanges"] if "reply" in x]
    assert len(requests) == ORACLE["session"]["requests"]
    assert len(recorded["exchanges"]) - len(requests) == ORACLE["session"]["notifications"]
    assert recorded["content_checks"] == ORACLE["session"]["content_checks"]["legacy"]
    assert recorded["exit"] == {"returncode": 0, "forced": False, "trailing_stdout": 0, "stderr": ""}
    assert recorded["sdk"] == "2.3.0"
    assert [x["request"]["id"] for x in requests] == list(range(1, len(requests) + 1))
    # the handshake, then the reads: tools are not registered (-32601), an unknown URI -32002,
    # bad prompt arguments -32602; every other reply a result
    assert [x["request"]["method"] for x in recorded["exchanges"][:2]] == ["initialize", "notifications/initialized"]
    codes = {x["request"]["method"] + ":" + str(x["reply"]["error"]["code"])
             for x in requests if "error" in x["reply"]}
    assert codes == {"resources/read:-32002", "prompts/get:-32602", "tools/list:-32601"}


async def test_capture_in_the_stateless_era():
    recorded = await capture("2026-07-28")
    assert recorded["content_checks"] == ORACLE["session"]["content_checks"]["2026-07-28"]
    assert recorded["exit"]["returncode"] == 0 and not recorded["exit"]["forced"]
    assert recorded["exchanges"][0]["request"]["method"] == "resources/list"  # no handshake
    assert all("_meta" in x["request"]["params"] for x in recorded["exchanges"])
    assert len(recorded["exchanges"]) == ORACLE["session"]["requests"] - 1  # no initialize, no notification
    assert recorded["exit"] == {"returncode": 0, "forced": False, "trailing_stdout": 0, "stderr": ""}


@pytest.mark.parametrize("row,mode", REPLAYS, ids=[f"{r['case']}[{m}]" for r, m in REPLAYS])
def test_replay_fails_at_its_named_check(runs, row, mode):
    assert len(runs) == len(REPLAYS)
    run = runs[row["case"], mode]
    assert run.failed_at == row["fails_at"]
    assert run.started == row["started"]
    assert run.replies_checked == row["replies_checked"]
    # The interpreter really was (not) optimised: -O strips assert statements.
    assert run.asserts_active == (mode == "normal")
    # Started: the stand-in exited by itself after stdin EOF, silently; else no process existed.
    assert run.exit_clean is (True if row["started"] else None)


async def test_damaged_replays_in_the_stateless_era_fail_at_the_same_checks():
    """The 2026-07-28 capture, replayed with the same damages: same named check, no reply accepted."""
    stateless = await capture("2026-07-28")
    rows = await run_controls(stateless, DAMAGES)
    assert [(r.case, r.mode) for r in rows] == [(case, mode) for case in DAMAGES for mode in ORACLE["modes"]]
    fails_at = {row["case"]: row["fails_at"] for row in ORACLE["replays"]}
    assert all(r.failed_at == fails_at[r.case] and r.replies_checked == 0 for r in rows)


async def test_the_controls_catch_an_assert_based_client(recorded):
    """Control of the controls: the same replays with ``assert`` checks under -O pass or fail elsewhere;
    without -O the boolean id passes too (True == 1), the other damages stop at an AssertionError."""
    rows = await run_controls(recorded, DAMAGES, checkers=("asserts",))
    optimised = [r for r in rows if r.mode == "-O"]
    assert [(r.case, r.failed_at) for r in optimised] == \
        [(row["case"], row["fails_at"]) for row in ORACLE["asserts_checker_under_O"]]
    assert all(r.asserts_active is False for r in optimised)
    normal = {r.case: r.failed_at for r in rows if r.mode == "normal"}
    assert normal == {case: "passed" if case == "boolean-id" else "AssertionError" for case in DAMAGES}


async def test_process_faults_fail_at_their_checks(recorded):
    oracle = [(row["case"], row["fails_at"]) for row in ORACLE["process_faults"]]
    alone = ["request-mismatch"]  # its message is checked below
    rest = await run_controls(recorded, [c for c, _ in oracle if c not in alone], modes=("normal",))
    assert [(r.case, r.failed_at) for r in rest] == [x for x in oracle if x[0] not in alone]
    messages = {r.case: r.message for r in rest}
    assert messages["stdout-banner"] == "reply to request 1 is not JSON: 'atlas server ready'"
    assert messages["stderr-line"] == "the server wrote to stderr: 'warning: cache is cold'"
    assert messages["linger"] == "the server did not exit by itself after stdin EOF"
    assert messages["trailing-line"] == "4 bytes left on stdout after the last reply"
    [mismatch] = await run_controls(recorded, ["request-mismatch"], modes=("normal",))
    assert (mismatch.case, mismatch.failed_at) in oracle
    assert mismatch.started and mismatch.exit_clean is False
    # exchanges[3] is request 3 (the first read): initialize and resources/list were answered, then
    # the stand-in refused the request it had not recorded and quit without a reply.
    assert mismatch.replies_checked == 2
    assert mismatch.message == "the server closed stdout before replying to request 3 (resources/read)"


CHILD = """
import json, sys
from course_lib.chapters.envelope_controls import check_reply_with_asserts
from course_lib.line_client import WireError, check_reply
""" + OUTCOME + """
for line in sys.stdin.buffer.read().splitlines():
    print(json.dumps([outcome(check, line) for check in (check_reply_with_asserts, check_reply)]))
"""


def first_reply(recorded: dict, case: str) -> bytes:
    """The damaged reply to request 1, as the stand-in server sends it."""
    return json.dumps(damaged(recorded, case)["exchanges"][0]["reply"]).encode()


def test_each_checker_alone_in_python_and_python_O(recorded):
    """Both checkers on the damaged first replies, each in a fresh python and python -O."""
    cases = [row["case"] for row in ORACLE["checkers_alone"]]
    replies = b"\n".join(first_reply(recorded, case) for case in cases)
    seen = {}
    for mode, flags in (("normal", []), ("-O", ["-O"])):
        done = subprocess.run([sys.executable, *flags, "-c", CHILD], input=replies, capture_output=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, timeout=120)
        seen[mode] = [json.loads(line) for line in done.stdout.splitlines()]
    for i, row in enumerate(ORACLE["checkers_alone"]):
        for mode in ("normal", "-O"):
            assert seen[mode][i] == [row["asserts"][mode], row["explicit"]], (row["case"], mode)


SDK_SERVER = """import json, sys
first_line, page = sys.argv[1], json.loads(sys.argv[2])
for line in sys.stdin:
    request = json.loads(line)
    if request.get("id") == 1:           # initialize: the damaged reply, verbatim
        print(first_line, flush=True)
    elif "id" in request:                # later requests: the captured page; notifications: none
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": page}), flush=True)
"""


async def sdk_on(recorded: dict, case: str) -> tuple[str, str]:
    """The plain SDK: ``session.initialize()`` gets the damaged reply, then ``list_resources()``."""
    page = next(x["reply"]["result"] for x in recorded["exchanges"] if x["request"]["method"] == "resources/list")
    argv = ["-c", SDK_SERVER, first_reply(recorded, case).decode(), json.dumps(page)]
    with tempfile.TemporaryFile("w+") as errlog:  # the server's stderr: never sys.stderr
        params = StdioServerParameters(command=sys.executable, args=argv)
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=1.5) as session:
                try:
                    answer = f"returned {(await session.initialize()).protocol_version}"
                except MCPError as exc:
                    answer = f"MCPError {exc.code}: {exc.message}"
                after = await session.list_resources()
    return answer, f"{len(after.resources)} resources"


async def test_the_sdks_own_client_keeps_the_session_and_names_no_damage(recorded):
    """The SDK drops what its types refuse (logged at ERROR) or a reply to an unknown id (DEBUG only,
    below the default WARNING), then times out; it reads result-and-error as the error; and it keeps
    the session: request 2 gets its page every time. No damage is named to the caller."""
    sdk_log = logging.getLogger("mcp")
    level, propagate = sdk_log.level, sdk_log.propagate
    sdk_log.setLevel(logging.DEBUG)
    sdk_log.propagate = False
    try:
        for row in ORACLE["sdk_client_on_damage"]:
            caught = logging.handlers.BufferingHandler(capacity=100)
            sdk_log.addHandler(caught)
            try:
                answer, after = await sdk_on(recorded, row["case"])
            finally:
                sdk_log.removeHandler(caught)
            logged = [f"{r.levelname} {r.getMessage()}" for r in caught.buffer]
            assert answer.startswith(row["initialize"]), (row["case"], answer)
            if row["logged"] is None:
                assert logged == [], (row["case"], logged)
            else:
                assert logged and logged[0].startswith(row["logged"]), (row["case"], logged)
            assert after == row["request_2"], row["case"]
    finally:
        sdk_log.setLevel(level)
        sdk_log.propagate = propagate
