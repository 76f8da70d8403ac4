"""The real servers' report cards, as the chapter shows them: short, deterministic, next to their fixtures.

An audit line's detail can name a timing or a temporary path; the chapter's tables show only what
is the same on every run: the check, its subject, its era, its verdict, and the codes and counts
read off the details (``across_table``). ``against_fixtures`` compares each card with its expected
card in ``fixtures/audit/real/`` (the same restriction to an era as ``tests/world/test_real_servers.py``).
"""
from __future__ import annotations

import json
import re

from course_lib.chapters import real_servers
from course_lib.paths import FIXTURES
from course_lib.protocol import AUTO, LEGACY, MODERN_VERSION

CARDS_DIR = FIXTURES / "audit" / "real"
LAUNCH = {"stdout.before-input", "launch.answer", "stderr", "exit.eof"}
_CODE = re.compile(r"\b(?:error|code) (-?\d+)")
# A real Python server imports its framework before it answers (FastMCP: a few seconds on a busy
# machine), so its first reply, and its exit (after stdin EOF, or after its client died), get more
# time than a course server's; a passing audit is no slower.
BUDGET, REQUEST_TIMEOUT, EXIT_BUDGET = 60.0, 30.0, 15.0


async def audited(name: str, era: str = AUTO):
    """The audit of the real server ``name``, started as ``real_servers.prepared`` makes it."""
    from course_lib.audit import audit

    with real_servers.prepared(name) as server:
        return await audit(server.argv, env=server.env, cwd=server.cwd, era=era, budget=BUDGET,
                           request_timeout=REQUEST_TIMEOUT, exit_budget=EXIT_BUDGET)


def card_table(report, title: str | None = None):
    """The whole card, one row per line: check, subject, era, verdict (no detail)."""
    from course_lib.display import Table

    return Table(["check", "subject", "era", "verdict"],
                 [[line.check, line.subject, line.era, line.verdict] for line in report.lines], title=title)


def short_card(name: str, report) -> str:
    """A server's card in a few lines: its counts and exit status, then each check that WARNs or
    FAILs, once, with its subjects and the first detail."""
    server = real_servers.BY_NAME[name]
    counts = ", ".join(f"{n} {v}" for v, n in report.counts().items() if n)
    out = [f"{server.label}: {counts}; exit status {report.exit_code}"]
    flagged: dict[tuple[str, str], list] = {}
    for line in report.lines:
        if line.verdict in ("WARN", "FAIL"):
            flagged.setdefault((line.verdict, line.check), []).append(line)
    for (verdict, check), lines in flagged.items():
        subjects = ",".join(dict.fromkeys(line.subject for line in lines if line.subject))
        head = f"  {verdict} {f'{check} {subjects}'.strip()}: "
        out.append(head + _short(lines[0].detail, 100 - len(head)))
    return "\n".join(out)


def _short(detail: str, room: int) -> str:
    detail = re.sub(r"\d+\.\d+ s\b", "N s", detail)  # a timing is never shown
    return detail if len(detail) <= room else detail[:room - 1].rstrip() + "…"


def _lines(report, check: str) -> list:
    return [line for line in report.lines if line.check == check]


def _code(detail: str) -> str:
    found = _CODE.search(detail)  # "error -32603 ...", "code 0 (...)"
    if found:
        return found.group(1)
    bare = re.search(r"-32\d{3}", detail)  # "...: -32602"
    return bare.group(0) if bare else ""


def _answer(line) -> str:
    """What a probe line says the server answered, in a word."""
    if "served a page" in line.detail or "was served" in line.detail:
        return "page 1 again" if line.check == "cursor.unpaged" else "served"
    if "isError" in line.detail:
        return "isError"
    return _code(line.detail) or line.verdict


def _missing(line) -> str:
    """A missing resource's code, and whether the error named the URI (``data.uri``)."""
    return _code(line.detail) + (" data.uri" if "-uri)" in line.detail else "")


def across_row(name: str, report) -> list[str]:
    server = real_servers.BY_NAME[name]
    spoken = [era for era in (LEGACY, MODERN_VERSION) if report.eras.get(era) == "supported"]
    eras = "both" if len(spoken) == 2 else (spoken[0] if spoken else "none")
    paged = []
    for line in _lines(report, "list.walk"):
        pages = re.search(r"in (\d+) pages", line.detail)
        if pages and line.subject not in [p.split()[0] for p in paged]:
            paged.append(f"{line.subject} {pages.group(1)}")
    unpaged = _lines(report, "cursor.unpaged")
    forged = _lines(report, "cursor.forged")
    forged_said = (_answer(forged[0]) if forged else _answer(unpaged[0]) if unpaged else "-")
    non_string = _lines(report, "cursor.non-string")
    missing = _lines(report, "uri.missing")
    unknown = _lines(report, "tool.unknown")
    exit_eof = _lines(report, "exit.eof")
    return [server.name, eras, ", ".join(paged) or "no", forged_said,
            _answer(non_string[0]) if non_string else "-", _missing(missing[0]) if missing else "-",
            _answer(unknown[0]) if unknown else "-",
            "forced" if exit_eof and "forced" in exit_eof[0].detail else "by itself"]


def across_table(reports: dict):
    """One row per real server: what its audit found, in words and codes."""
    from course_lib.display import Table

    return Table(["server", "eras", "paginates", "forged", "cursor 1", "missing URI", "unknown tool",
                  "on EOF"],
                 [across_row(name, report) for name, report in reports.items()],
                 title="The real servers under the audit (auto)",
                 notes=["paginates: the lists that have more than one page, and how many pages. forged: a "
                        "cursor the server never issued. cursor 1: the number 1 as a cursor, sent only to "
                        "a list that paginates. data.uri: the error names the missing URI."])


def expected_card(name: str) -> dict:
    return json.loads((CARDS_DIR / f"{name}.json").read_text())


def expected_lines(card: dict, era: str) -> dict[tuple[str, str, str], str]:
    """The lines an audit in ``era`` must show: the card (written for ``all``) restricted to what
    that era runs: the launch and summary lines, the era probes it makes, and the list, cursor,
    URI and tool lines of the era it then audits (``auto``: the era it lands in). An era asked for
    by name that the server does not speak fails its era line (the audit audited nothing)."""
    probes = {LEGACY: {"era.handshake"}, MODERN_VERSION: {"era.envelope"},
              AUTO: {"era.handshake", "era.envelope", "era.auto"}}.get(era)
    if probes is None:  # "all": the whole card
        return {(c, s, e): v for c, s, e, v in card["lines"]}
    audited = card["eras"][AUTO] if era == AUTO else era
    if card["eras"][audited] != "supported":
        audited = None
    lines = {(check, subject, line_era): verdict for check, subject, line_era, verdict in card["lines"]
             if check in LAUNCH or line_era == "all" or check in probes
             or (not check.startswith("era.") and line_era == audited)}
    if era != AUTO and audited is None:
        lines.update({key: "FAIL" for key in lines if key[0] in probes})
    return lines


def differences(name: str, report, era: str = AUTO) -> list[str]:
    """Every line where the card differs from its fixture (empty when they agree)."""
    want, got = expected_lines(expected_card(name), era), report.verdicts()
    return [f"{' '.join(filter(None, key))}: expected {want.get(key)}, got {got.get(key)}"
            for key in sorted(set(want) | set(got)) if want.get(key) != got.get(key)]


def fixtures_table(reports: dict, era: str = AUTO):
    """Each card next to its fixture: how many lines, how many differ, the first difference."""
    from course_lib.display import Table

    rows = []
    for name, report in reports.items():
        wrong = differences(name, report, era)
        rows.append([name, len(report.lines), len(wrong), wrong[0] if wrong else "-"])
    return Table(["server", "lines", "differ from the fixture", "first difference"], rows,
                 title="Each card against fixtures/audit/real/NAME.json")
