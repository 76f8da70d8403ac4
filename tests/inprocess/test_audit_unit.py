"""In-process: the checks of tests/stdio/test_audit.py's subject that start no process."""
import json
import pytest
from course_lib.audit import ALL_CHECKS, CAN_FAIL, REPORT_ONLY
from course_lib.audit.report import Report, validate
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("audit", "expected.json").read_text(encoding="utf-8"))
# Verdicts no course server mode gives, shown on recorded exchanges (tests/inprocess/test_audit_rules_unit.py):
# every course server answers a read under the URI asked for.
SHOWN_ON_RECORDED = {"uri.canonical": {"WARN"}}


def card(name: str, oracle: dict = ORACLE) -> dict[str, str]:
    """The expected ``{key: verdict}`` of a case (of ``oracle``, the stdio one by default): its shapes,
    filled for their eras, then its lines."""
    case, out = oracle["cases"][name], {}
    for entry in case.get("shapes", []):
        shape, _, eras = entry.partition("@")
        for era in (eras.split(",") if eras else [None]):
            out.update({key.replace("{era}", era or ""): verdict for key, verdict in oracle["shapes"][shape].items()})
    for key, verdict in case.get("lines", {}).items():
        if verdict is None:
            out.pop(key, None)
        else:
            out[key] = verdict
    return out


def key(line) -> str:
    return f"{line['check']}{'[' + line['subject'] + ']' if line['subject'] else ''}@{line['era']}"


def assert_card(data: dict, name: str, oracle: dict = ORACLE) -> dict[str, str]:
    """A report (``to_dict``) holds to its case in ``oracle``: valid JSON, one line a key, exactly the
    card's keys and verdicts, the case's exit status and the words of its ``detail``; returns the verdicts."""
    validate(data)
    got = {key(line): line["verdict"] for line in data["lines"]}
    assert len(got) == len(data["lines"]), "two lines share a key"
    want = card(name, oracle)
    wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    extra = sorted(set(got) - set(want))
    assert not wrong and not extra, f"(got, expected): {wrong}; not in the card: {extra}"
    assert data["exit_code"] == oracle["cases"][name]["exit_code"]
    details = {key(line): line["detail"] for line in data["lines"]}
    for k, part in oracle["cases"][name].get("detail", {}).items():
        assert part in details[k], (k, details[k])
    return got


def test_every_fail_line_can_happen():
    """Each check that can FAIL does FAIL in some case of the oracle (a mode that triggers it)."""
    failing = {k.split("[")[0].split("@")[0] for name in ORACLE["cases"] for k, v in card(name).items() if v == "FAIL"}
    assert failing == set(CAN_FAIL)


def test_every_check_is_load_bearing():
    """Mutation: replace any check by a constant (always its most common verdict) or remove it, and some
    case's card no longer matches. Only checks that report a fact (INFO by design) may be constant."""
    cards = {name: card(name) for name in ORACLE["cases"]}
    for check in ALL_CHECKS:
        verdicts = {v for c in cards.values() for k, v in c.items() if k.split("[")[0].split("@")[0] == check}
        verdicts |= SHOWN_ON_RECORDED.get(check, set())
        assert verdicts, f"{check}: no case has a line of it (removing it would pass every test)"
        if check not in REPORT_ONLY:
            assert len(verdicts) > 1, f"{check}: always {verdicts} (a constant would pass every test)"


def test_a_report_renders_as_table_json_and_html():
    from course_lib.audit.report import Line

    report = Report(["srv"], "legacy", lines=[Line("list.walk", "FAIL", "MUST (spec: pagination)", "legacy",
                                                   "cursor_repeated: " + "x" * 300, "tools")])
    assert report.exit_code == 1 and all(len(row) <= 100 for row in report.table().splitlines())
    validate(json.loads(report.to_json()))
    assert "<table>" in report._repr_html_() and "FAIL" in report._repr_html_()
    with pytest.raises(ValueError):
        Line("x", "BAD", "MUST (x)", "legacy", "")
    report.lines.append(Line("x.y", "WARN", "SHOULD (x)", "legacy", ""))
    report.lines[0] = Line("list.walk", "FAIL", "SHOULD (x)", "legacy", "")  # only a MUST fails the run
    assert report.exit_code == 0
