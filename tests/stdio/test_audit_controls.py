"""The audit's negative controls, fixtures/audit/controls.json: a server with one lapse per case, which
an earlier audit judged wrongly (a false PASS, a wrong rule, a wrong word), and the line the audit
gives it now, verdict and detail. A false PASS is the worst defect an audit can have: each case is a
server that would earn one."""
import json
import sys

import anyio
import pytest

from course_lib._runtime.process import course_server_argv
from course_lib.audit import audit
from course_lib.paths import fixture

CONTROLS = json.loads(fixture("audit", "controls.json").read_text(encoding="utf-8"))["cases"]


def key(line) -> str:
    return f"{line.check}{'[' + line.subject + ']' if line.subject else ''}@{line.era}"


def argv_of(case: dict) -> list[str]:
    if "argv" in case:
        return [sys.executable if part == "{python}" else part for part in case["argv"]]
    return course_server_argv(case["server"][0], None, None, case["server"][1:])


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_each_lapse_gets_its_verdict_in_the_servers_words(name):
    case = CONTROLS[name]
    report = anyio.run(lambda: audit(argv_of(case), era=case["era"], budget=20, request_timeout=5))
    lines = {key(line): line for line in report.lines}
    line = lines[case["line"]]
    assert (line.verdict, case["detail"] in line.detail) == (case["verdict"], True), line
    for other, words in case.get("also", {}).items():
        assert words in lines[other].detail, lines[other]
    if case["verdict"] == "FAIL":
        assert report.exit_code == 1 and line.rule.startswith("MUST")
    details = " ".join(line.detail for line in report.lines)
    assert "reply_timeout" not in details and "the call ran" not in details
    assert report.leftovers == [] or name == "child-outlives-the-server"
