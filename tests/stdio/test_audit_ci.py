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
from course_lib.paths import ROOT, fixture

KNOWN = fixture("audit", "ci", "flawed-silent-params.json")


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
