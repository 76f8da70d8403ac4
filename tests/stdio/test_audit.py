"""The audit against its hand-written oracle, fixtures/audit/expected.json, in both eras.

Each case audits one course server mode (or a pinned real server) with ``era="all"``, so one run
holds the audit to its card in the 2025-11-25 and the 2026-07-28 era. Two cases go through the
command line (``python -m course_lib.audit --json``), whose output must validate against
fixtures/audit/report.schema.json. The oracle itself is checked too: every check that can FAIL
is made to FAIL by some case, and every check is load-bearing (a case depends on it).
"""
import json
import re
import subprocess
import sys
import time

import anyio
import pytest

from course_lib import sdk129
from course_lib._runtime.process import course_server_argv
from course_lib.audit import ALL_CHECKS, CAN_FAIL, audit
from course_lib.audit.report import validate
from course_lib.chapters.peers_lab import everything_argv
from course_lib.paths import ROOT, fixture

from test_audit_unit import assert_card, key

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("audit", "expected.json").read_text(encoding="utf-8"))
CLI_CASES = ("catalog-normal", "catalog-cycle")


def argv_of(name: str) -> list[str]:
    server = ORACLE["cases"][name]["server"]
    if server == "everything":
        return everything_argv()
    if server == "sdk129-atlas":
        return sdk129.server_argv("atlas")
    return course_server_argv(server[0], None, None, server[1:])


def report_of(name: str) -> dict:
    if name in CLI_CASES:
        done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--json", "--", *argv_of(name)],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        data = json.loads(done.stdout)
        assert done.returncode == data["exit_code"]
        return data
    options = {k: v for k, v in ORACLE["cases"][name].items() if k in ("budget", "request_timeout", "exit_budget")}
    return anyio.run(lambda: audit(argv_of(name), **options)).to_dict()


@pytest.mark.parametrize("name", sorted(ORACLE["cases"]))
def test_the_audit_gives_each_mode_its_card(name):
    data = report_of(name)
    got = assert_card(data, name)
    assert data["leftovers"] == [] or got["exit.leftovers@all"] == "FAIL"
    assert {line["check"] for line in data["lines"]} <= set(ALL_CHECKS)
    assert {line["check"] for line in data["lines"] if line["verdict"] == "FAIL"} <= set(CAN_FAIL)


def test_the_cli_names_the_repeated_cursor_and_prints_a_narrow_table():
    done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--era", "legacy", "--",
                           *course_server_argv("catalog", "cycle")], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 1
    assert max(len(line) for line in done.stdout.splitlines()) <= 100
    [walk] = [line for line in done.stdout.splitlines() if line.startswith("list.walk")]
    assert walk.split()[1] == "FAIL"
    text = " ".join(done.stdout.split())  # a long detail wraps inside its column
    assert re.search(r"cursor_repeated: page 3 sent cursor '[A-Za-z0-9_-]{16}' again", text), text
    assert done.stdout.splitlines()[-1].endswith("exit status 1")


def test_the_exit_budget_is_the_clis_to_set():
    """flawed --mode linger outlives its dying client: the line names the budget given on the command
    line (the default is 2 s, as long as the SDK's stdio client waits)."""
    done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--json", "--era", "legacy", "--exit-budget", "0.7",
                           "--", *course_server_argv("flawed", "linger")], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    lines = {key(line): line for line in json.loads(done.stdout)["lines"]}
    died = lines["exit.client-died@all"]
    assert (died["verdict"], done.returncode) == ("FAIL", 1)
    assert died["detail"].startswith("1 process(es) still running 0.7 s after the client died"), died


def test_bad_usage_is_a_clear_error():
    done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--env", "NOEQUALS", "--", "x"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and "--env takes K=V" in done.stderr
    with pytest.raises(ValueError):
        anyio.run(audit, [])


def test_a_hang_gets_its_verdict_within_its_budget():
    """hostile --mode hang never answers page 3: the walk's request budget ends it, nothing is left."""
    started = time.monotonic()
    report = anyio.run(lambda: audit(course_server_argv("hostile", "hang"), era="legacy", budget=8, request_timeout=1))
    took = time.monotonic() - started
    [walk] = [line for line in report.lines if line.check == "list.walk"]
    assert (walk.verdict, walk.detail) == ("FAIL", "reply_timeout: no reply to request 5 (tools/list) within 1 s")
    assert report.exit_code == 1 and report.leftovers == [] and took < 60


def test_a_late_first_reply_is_one_verdict_naming_its_budget():
    """hostile --mode slow-reply answers its first request after --delay s: past the request budget,
    the card has one launch.late FAIL naming that budget, the era lines say "not checked" (not a list of
    timeouts), the exit status is 1, the audit ends within its budget and no server process is left."""
    import psutil

    delay, budget = "3.217", 20  # the delay also marks this test's server processes
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--json", "--budget", str(budget),
                           "--request-timeout", "1.5", "--", *course_server_argv("hostile", "slow-reply", None,
                                                                                 ["--delay", delay])],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    took = time.monotonic() - started
    data = json.loads(done.stdout)
    validate(data)
    lines = {key(line): line for line in data["lines"]}
    assert done.returncode == data["exit_code"] == 1
    assert [k for k, line in lines.items() if line["verdict"] == "FAIL"] == ["launch.late@legacy"], done.stdout
    assert "past the 1.5 s request budget" in lines["launch.late@legacy"]["detail"]
    for k in ("era.handshake@legacy", "era.envelope@2026-07-28"):
        assert (lines[k]["verdict"], lines[k]["detail"].split(":")[0]) == ("INFO", "not checked"), lines[k]
    assert "not probed" in lines["era.auto@auto"]["detail"]
    assert not any(k.startswith(("list.", "cursor.", "tool.", "method.")) for k in lines)
    assert data["leftovers"] == [] and took < 2 * budget, took
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if delay in (p.info["cmdline"] or [])]
    assert left == [], left
