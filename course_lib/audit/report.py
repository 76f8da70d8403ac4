"""The report card: its lines, the terminal table, the JSON form (with its schema) and the HTML card."""
from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field

from course_lib.display import wrap_cell
from course_lib.paths import fixture

VERDICTS = ("PASS", "WARN", "FAIL", "INFO")
SCHEMA_ID = "course-audit-report/1"
WIDTH = 100
_COLUMNS = (("check", 22), ("verdict", 4), ("era", 10), ("subject", 14))  # then the detail


@dataclass(frozen=True)
class Line:
    """One verdict: which check, on what (``subject``), in which era, under which rule, and why."""

    check: str
    verdict: str
    rule: str
    era: str
    detail: str
    subject: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def name(self) -> str:
        """``check[subject]@era``: how an expected file and a JUnit test case name the line."""
        return f"{self.check}{f'[{self.subject}]' if self.subject else ''}@{self.era}"

    @property
    def key(self) -> tuple[str, str, str]:
        """What an expected card names: the check, its subject and its era."""
        return self.check, self.subject, self.era


@dataclass
class Report:
    """Every line of one audit, in the order the probes ran, and what the run itself saw."""

    command: list[str]
    era: str
    lines: list[Line] = field(default_factory=list)
    eras: dict[str, str] = field(default_factory=dict)  # era -> "supported" / "not supported" / negotiated
    processes: int = 0  # server processes the audit started (one per probe)
    leftovers: list[int] = field(default_factory=list)  # processes the stops had to sweep
    elapsed: float = 0.0
    expected: dict[str, str] | None = None  # --expected FILE: {key: verdict} of the known findings

    def add(self, check: str, verdict: str, rule: str, era: str, detail: str, subject: str = "") -> Line:
        line = Line(check, verdict, rule, era, detail, subject)
        self.lines.append(line)
        return line

    @property
    def failed(self) -> list[Line]:
        """The lines that fail a MUST and are not known findings: any one makes the exit status non-zero."""
        return [line for line in self.lines if line.verdict == "FAIL" and line.rule.startswith("MUST")
                and not self.is_known(line)]

    def is_known(self, line: Line) -> bool:
        """Whether ``line`` is a finding the expected file names, with its verdict."""
        return bool(self.expected) and self.expected.get(line.name) == line.verdict

    @property
    def stale(self) -> list[str]:
        """The expected file's entries that did not occur (that line, with that verdict)."""
        seen = {line.name: line.verdict for line in self.lines}
        return sorted(key for key, verdict in (self.expected or {}).items() if seen.get(key) != verdict)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def counts(self) -> dict[str, int]:
        return {v: sum(line.verdict == v for line in self.lines) for v in VERDICTS}

    def verdicts(self) -> dict[tuple[str, str, str], str]:
        """``{(check, subject, era): verdict}``: what an expected card holds the audit to."""
        return {line.key: line.verdict for line in self.lines}

    def to_dict(self) -> dict:
        return {"schema": SCHEMA_ID, "command": list(self.command), "era": self.era, "eras": dict(self.eras),
                "exit_code": self.exit_code, "counts": self.counts(), "processes": self.processes,
                "leftovers": list(self.leftovers), "elapsed_s": round(self.elapsed, 3),
                "lines": [asdict(line) for line in self.lines],
                **({"known": [x.name for x in self.lines if self.is_known(x)], "stale": self.stale}
                   if self.expected is not None else {})}

    def to_json(self, indent: int | None = 1) -> str:
        """The report as JSON, checked against ``fixtures/audit/report.schema.json`` first."""
        data = self.to_dict()
        validate(data)
        return json.dumps(data, indent=indent, ensure_ascii=False)

    def table(self, width: int = WIDTH) -> str:
        """The terminal card: one row per line (long details wrap), then the totals; ≤ ``width`` columns."""
        head = " ".join(name.ljust(size) for name, size in _COLUMNS) + " detail"
        rest = width - sum(size + 1 for _, size in _COLUMNS)
        rows = [head, "-" * min(width, len(head) + rest - 6)]
        for line in self.lines:
            cells = (line.check, line.verdict, line.era, line.subject)
            first = " ".join(_cut(text, size).ljust(size) for text, (_, size) in zip(cells, _COLUMNS))
            wrapped = wrap_cell(line.detail, rest - 1)  # a cursor with a "-" stays whole
            rows.append(f"{first} {wrapped[0]}")
            pad = " " * (width - rest + 1)
            rows.extend(pad + more for more in wrapped[1:3])
        counts = self.counts()
        if self.expected is not None:
            known = [x.name for x in self.lines if self.is_known(x)]
            rows.append(f"known findings (--expected): {len(known)}; stale entries: "
                        + (", ".join(self.stale) if self.stale else "none"))
        rows.append(f"{' '.join(f'{n} {v}' for v, n in counts.items())}; {self.processes} server processes, "
                    f"{len(self.leftovers)} left over; {self.elapsed:.1f} s; exit status {self.exit_code}")
        return "\n".join(row.rstrip()[:width] for row in rows)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        colour = {"PASS": "#1a7f37", "WARN": "#9a6700", "FAIL": "#cf222e", "INFO": "#57606a"}
        cells = "".join(
            f"<tr><td><code>{html.escape(x.check)}</code></td><td style='color:{colour[x.verdict]};"
            f"font-weight:bold'>{x.verdict}</td><td>{html.escape(x.era)}</td><td>{html.escape(x.subject)}</td>"
            f"<td>{html.escape(x.rule)}</td><td>{html.escape(x.detail)}</td></tr>" for x in self.lines)
        counts = ", ".join(f"{n} {v}" for v, n in self.counts().items())
        return (f"<div><b>Audit of</b> <code>{html.escape(' '.join(self.command))}</code> — {counts}; "
                f"exit status {self.exit_code}<table><tr><th>check</th><th>verdict</th><th>era</th>"
                f"<th>subject</th><th>rule</th><th>detail</th></tr>{cells}</table></div>")


def _cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size - 1] + "…"


def schema() -> dict:
    return json.loads(fixture("audit", "report.schema.json").read_text(encoding="utf-8"))


def validate(data: dict) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``data`` is a report as the schema describes it."""
    from jsonschema import Draft202012Validator

    Draft202012Validator(schema()).validate(data)
