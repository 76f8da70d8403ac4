"""The schema chapter's fixed oracles and the exact comparison of a run with them.

Both oracles were written by hand before any run, per scenario:

* ``fixtures/schema/expected.json``        what the client must observe;
* ``fixtures/schema/expected-audits.json`` exactly which requests each server must receive.

An entry may hold ``{"by_era": {"legacy": ..., "2026-07-28": ...}}`` where the eras differ.
``check`` holds one ``Run`` to both; the tables show a fixture, the runs and the audits. The
scenarios that make the runs are :mod:`course_lib.chapters.schema_lab`.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field

from course_lib.display import Table
from course_lib.chapters.negative_controls import require
from course_lib.paths import FIXTURES

FIXTURE_DIR = FIXTURES / "schema"


def fixture(name: str):
    path = FIXTURE_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"no fixture fixtures/schema/{name}.json")
    return path


def call_content(name: str):
    return json.loads(fixture(name).read_text(encoding="utf-8"))["call_content"]


def _for_era(entry: dict, era: str) -> dict:
    return entry["by_era"][era] if "by_era" in entry else entry


def expected(scenario: str, era: str) -> dict:
    """The hand-written expectation of one scenario in one era."""
    return _for_era(json.loads((FIXTURE_DIR / "expected.json").read_text(encoding="utf-8"))[scenario], era)


def expected_audits(scenario: str, era: str) -> dict:
    """The hand-written request audits of one scenario's servers, by role."""
    return _for_era(json.loads((FIXTURE_DIR / "expected-audits.json").read_text(encoding="utf-8"))[scenario], era)


# -- a run, as the oracles see it ------------------------------------------------------------

@dataclass
class Run:
    """One scenario in one era: what the client observed and what each server received."""

    scenario: str
    era: str
    observed: dict
    audits: dict = field(default_factory=dict)
    labs: dict = field(default_factory=dict)


# -- exact comparison ------------------------------------------------------------------------

def _request(entry: dict) -> str:
    detail = ", ".join(f"{k}={v!r}" for k, v in entry.items() if k != "method")
    return f"{entry.get('method')} {detail}".strip()


def audit_differences(expected_audit: dict, observed_audit: dict) -> list[str]:
    """Every difference between two audits, in words; empty when they are identical."""
    want = [_request(r) for r in expected_audit.get("requests", [])]
    got = [_request(r) for r in observed_audit.get("requests", [])]
    out = []
    matcher = difflib.SequenceMatcher(a=want, b=got, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            out += [f"extra request #{j + 1}: {got[j]}" for j in range(j1, j2)]
        if op in ("delete", "replace"):
            out += [f"missing request #{i + 1}: {want[i]}" for i in range(i1, i2)]
    if observed_audit.get("closed") != expected_audit.get("closed"):
        out.append(f"closed is {observed_audit.get('closed')!r}, expected {expected_audit.get('closed')!r}")
    return out


def compare_audits(expected_by_role: dict, observed_by_role: dict, label: str = "") -> None:
    """Exact comparison; the first difference fails the ``audit_oracle`` check."""
    for role in sorted(set(expected_by_role) | set(observed_by_role)):
        if role not in observed_by_role or role not in expected_by_role:
            require(False, "audit_oracle", f"{label}{role}: audit present on one side only")
        differences = audit_differences(expected_by_role[role], observed_by_role[role])
        require(not differences, "audit_oracle", f"{label}{role}: {'; '.join(differences)}")


def check(result: Run) -> None:
    """Compare one run with both fixed oracles; every server's finalizer must have run."""
    for role, audit in result.audits.items():
        require(audit.get("closed") is True, "finalizer_ran", f"{result.scenario}/{role}: the server's finalizer did not run")
    want = expected(result.scenario, result.era)
    require(result.observed == want, "case_oracle",
            f"{result.scenario} [{result.era}] differs from expected.json: observed {json.dumps(result.observed)}")
    compare_audits(expected_audits(result.scenario, result.era), result.audits, f"{result.scenario}/")


# -- views for the chapter -------------------------------------------------------------------

def outcome(call: dict) -> str:
    if call["status"] == "accepted":
        return f"accepted {json.dumps(call['content'])}"
    return f"client_schema_error: {call['error']}"


def runs_table(runs: list[Run]) -> Table:
    """One row per run: scenario, the decisive call, whether it matches both oracles.

    Runs of one era get the era as the table's title; runs of several eras get an era column.
    """
    runs = list(runs)
    eras = sorted({r.era for r in runs})
    rows = []
    for r in runs:
        call = r.observed.get("call") or r.observed.get("after_call")
        try:
            check(r)
            verdict = "match"
        except Exception as exc:  # shown, not hidden: a mismatch is a finding
            verdict = str(exc)
        rows.append([r.scenario, *([r.era] if len(eras) > 1 else []), outcome(call), verdict])
    if len(eras) > 1:
        return Table(["scenario", "era", "call alpha", "both oracles"], rows)
    return Table(["scenario", "call alpha", "both oracles"], rows, title=f"era: {eras[0]}" if eras else None)


def _schema_word(tool: dict) -> str:
    schema = tool.get("outputSchema")
    return f"{tool['name']}:{schema['properties']['value']['type']}" if schema else f"{tool['name']}:(no schema)"


def fixture_table(name: str) -> Table:
    """The fixture's answers in order: the cursor each request must carry and what it gets."""
    data = json.loads(fixture(name).read_text(encoding="utf-8"))
    rows = []
    for number, step in enumerate(data["pages"], 1):
        result = step["result"]
        extra = f"ttlMs={result['ttlMs']}" if "ttlMs" in result else ""
        rows.append([number, json.dumps(step["cursor"]), ", ".join(_schema_word(t) for t in result["tools"]),
                     json.dumps(result.get("nextCursor")), extra])
    rows.append(["call", "", "alpha {}", "", f"returns {json.dumps(data['call_content'])}"])
    return Table(["answer", "cursor", "tools (output type)", "nextCursor", "note"], rows, title=f"fixtures/schema/{name}.json")


def audit_table(audits: dict) -> Table:
    """Every request each server recorded, in order, and whether its finalizer ran."""
    rows = []
    for role, audit in audits.items():
        for number, entry in enumerate(audit["requests"], 1):
            rows.append([role, number, _request(entry)])
        rows.append([role, "", f"closed={audit['closed']}"])
    return Table(["server", "#", "request"], rows)
