"""In-process: the checks of tests/stdio/test_audit_ci.py's subject that start no process."""
import json
import xml.etree.ElementTree as ET
from course_lib.audit.ci import junit
from course_lib.audit.report import Line, Report, validate


def card(expected=None) -> Report:
    lines = [Line("frame.malformed", "FAIL", "MUST (x)", "legacy", "no reply", "params"),
             Line("exit.leftovers", "FAIL", "MUST (y)", "all", "pid 1: helper"),
             Line("cursor.forged", "WARN", "SHOULD (z)", "legacy", "served", "tools"),
             Line("stderr", "INFO", "MAY (w)", "legacy", "0 lines")]
    return Report(["srv"], "legacy", lines=lines, expected=expected)


def test_known_findings_do_not_fail_new_ones_do_stale_ones_are_named():
    assert card().exit_code == 1 and len(card().failed) == 2
    known = card({"frame.malformed[params]@legacy": "FAIL", "exit.leftovers@all": "FAIL"})
    assert known.exit_code == 0 and known.stale == []
    one = card({"frame.malformed[params]@legacy": "FAIL", "uri.missing[resources]@legacy": "WARN",
                "cursor.forged[tools]@legacy": "FAIL"})  # a known WARN is not a known FAIL
    assert [line.name for line in one.failed] == ["exit.leftovers@all"] and one.exit_code == 1
    assert one.stale == ["cursor.forged[tools]@legacy", "uri.missing[resources]@legacy"]
    data = json.loads(one.to_json())
    validate(data)
    assert data["known"] == ["frame.malformed[params]@legacy"] and data["stale"] == one.stale
    assert "stale entries: cursor.forged[tools]@legacy, uri.missing" in one.table()


def test_junit_has_one_case_per_line():
    suite = ET.fromstring(junit(card({"exit.leftovers@all": "FAIL", "gone@all": "WARN"})))
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["frame.malformed[params]@legacy", "exit.leftovers@all",
                                              "cursor.forged[tools]@legacy", "stderr@legacy", "gone@all"]
    assert [c.find("failure") is not None for c in cases] == [True, False, False, False, False]
    assert cases[0].find("failure").get("message") == "no reply"
    assert cases[1].find("skipped").get("message") == "known finding: pid 1: helper"
    assert "stale" in cases[4].find("system-out").text
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "1")
