"""The audit in CI: ``--expected FILE`` (known findings do not fail the exit status, new ones do, stale
entries are reported) and ``--junit FILE`` (one test case per line of the card), on recorded lines
and through the command line on a server that fails on purpose (``flawed --mode silent-params``)."""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from course_lib._runtime.process import course_server_argv
from course_lib.audit.ci import ExpectedFileError, junit, read_expected
from course_lib.audit.report import Line, Report, validate
from course_lib.paths import ROOT, fixture

KNOWN = fixture("audit", "ci", "flawed-silent-params.json")


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


@pytest.mark.parametrize("text,words", [("not json", "Expecting value"), ('{"x": 1}', '{"findings"'),
                                        ('{"findings": {"a@all": "BAD"}}', "got a@all: 'BAD'"),
                                        ('{"findings": {"no-era": "FAIL"}}', "got no-era")])
def test_a_bad_expected_file_is_a_clear_error(tmp_path, text, words):
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(ExpectedFileError, match="--expected") as info:
        read_expected(path)
    assert words in str(info.value)
    done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--expected", str(path), "--", "x"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and words in done.stderr


def test_the_command_line_on_a_server_that_fails_on_purpose(tmp_path):
    argv = course_server_argv("flawed", None, None, ["--mode", "silent-params"])
    runs = {}
    for name, extra in (("plain", []), ("known", ["--expected", str(KNOWN)])):
        xml = tmp_path / f"{name}.xml"
        done = subprocess.run([sys.executable, "-m", "course_lib.audit", "--era", "legacy", "--junit", str(xml), *extra,
                               "--", *argv], capture_output=True, text=True, cwd=ROOT, timeout=300)
        runs[name] = done, ET.fromstring(xml.read_text())
    (plain, plain_xml), (known, known_xml) = runs["plain"], runs["known"]
    assert plain.returncode == 1 and plain_xml.get("failures") == "1"
    [failed] = [c for c in plain_xml.findall("testcase") if c.find("failure") is not None]
    assert failed.get("name") == "frame.malformed[params]@legacy"
    assert known.returncode == 0 and known_xml.get("failures") == "0" and known_xml.get("skipped") == "1"
    assert "stale entries: cursor.tampered[tools]@legacy" in known.stdout
    counts = re.findall(r"(\d+) (?:PASS|WARN|FAIL|INFO)", plain.stdout.splitlines()[-1])
    assert len(plain_xml.findall("testcase")) == sum(map(int, counts)) > 20  # one case per line of the card
