"""The audit in continuous integration: a file of expected findings, and a JUnit XML report.

``--expected FILE`` is a JSON object ``{"findings": {"check[subject]@era": "FAIL" | "WARN", ...}}``
(the key as ``Line.name`` writes it). A line it names, with that verdict, is a known finding: it does
not fail the exit status. A finding it does not name fails it as before; an entry that no longer
occurs is stale, and the card says so. ``--junit FILE`` writes one test case per line of the card:
a MUST that fails (and is not known) is a ``<failure>``, a known finding is ``<skipped>``, and every
other line passes with its verdict and detail as its output.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from course_lib.audit.report import VERDICTS, Report


class ExpectedFileError(ValueError):
    """An expected-findings file that cannot be used: what is wrong, and where."""


def read_expected(path: str | Path) -> dict[str, str]:
    """``{key: verdict}`` from an expected-findings file; ``ExpectedFileError`` when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExpectedFileError(f"--expected {path}: {exc}") from None
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, dict):
        raise ExpectedFileError(f'--expected {path}: a JSON object {{"findings": {{"check[subject]@era": '
                                f'"FAIL"}}}} is expected')
    wrong = [f"{k}: {v!r}" for k, v in findings.items() if v not in VERDICTS or "@" not in k]
    if wrong:
        raise ExpectedFileError(f"--expected {path}: an entry is check[subject]@era: one of {VERDICTS}; "
                                f"got {wrong[0]}")
    return dict(findings)


def junit(report: Report) -> str:
    """The card as JUnit XML: one ``testcase`` per line (``classname`` the check, ``name`` the line)."""
    failed = {id(line) for line in report.failed}
    suite = ET.Element("testsuite", name="course-audit", tests=str(len(report.lines)), failures=str(len(failed)),
                       skipped=str(sum(report.is_known(line) for line in report.lines)),
                       time=f"{report.elapsed:.3f}")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="command", value=" ".join(report.command))
    for line in report.lines:
        case = ET.SubElement(suite, "testcase", classname=line.check, name=line.name)
        said = f"{line.verdict} {line.rule}: {line.detail}"
        if id(line) in failed:
            ET.SubElement(case, "failure", message=line.detail, type=line.rule).text = said
        elif report.is_known(line):
            ET.SubElement(case, "skipped", message=f"known finding: {line.detail}")
        ET.SubElement(case, "system-out").text = said
    for key in report.stale:
        case = ET.SubElement(suite, "testcase", classname="expected", name=key)
        ET.SubElement(case, "system-out").text = f"stale: the expected finding {key} no longer occurs"
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


__all__ = ["ExpectedFileError", "junit", "read_expected"]
