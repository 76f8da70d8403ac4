"""A battery: a fixed JSON file under ``fixtures/grading/`` (written by hand, never derived from the
reference solutions), one entry per scenario with the server, the eras it runs in, the expected
outcome, a hint, and the time budget of one call (``budget_seconds``)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from course_lib.paths import fixture

ANY_ERA = "any"  # a row that needs no server (the allowlist's URI rows)


@dataclass(frozen=True)
class Scenario:
    name: str
    era: str
    server: str
    mode: str | None
    expect: dict
    hint: str
    args: tuple[str, ...] = field(default=())  # extra server arguments, e.g. ("--fault", "...")
    # Hints for one kind of failure ({"hang": ...}) or for one era ({"legacy": ...}): see ``hint_for``.
    hints: dict = field(default_factory=dict, compare=False, repr=False)


def read_spec(name: str) -> dict:
    return json.loads(fixture("grading", f"{name}.json").read_text(encoding="utf-8"))


def load_battery(name: str) -> tuple[str, list[Scenario], dict]:
    """Read ``fixtures/grading/NAME.json`` into scenarios (one per listed era)."""
    spec = read_spec(name)
    scenarios = [Scenario(s["name"], era, s.get("server", spec.get("server", "catalog")), s.get("mode"),
                          s["expect"], s["hint"], tuple(s.get("args", ())), dict(s.get("hints", {})))
                 for s in spec["scenarios"] for era in s.get("eras", spec.get("eras", ["legacy"]))]
    return spec["title"], scenarios, spec


def rows_of(spec: dict) -> dict[str, dict]:
    return {s["name"]: s for s in spec["scenarios"]}


def select(scenarios: list[Scenario], only: list[str] | None, eras: list[str] | None) -> list[Scenario]:
    if only is not None:
        unknown = set(only) - {s.name for s in scenarios}
        if unknown:
            raise ValueError(f"no scenario named {sorted(unknown)}")
        scenarios = [s for s in scenarios if s.name in only]
    if eras is not None:
        scenarios = [s for s in scenarios if s.era in eras]
    return scenarios


def hint_in_era(s: Scenario, row: dict) -> str:
    """The row's hint in ``s.era``: in legacy its ``legacy_hint`` (no 2026-07-28 setting applies there)."""
    return row.get("legacy_hint", s.hint) if s.era == "legacy" else s.hint


def expects_refusal(expect: dict) -> bool:
    return bool(expect.get("raises"))


def describe_refusal(refusal: dict) -> str:
    if "reason" in refusal:
        return f"{refusal.get('type', 'CatalogError')}({refusal['reason']})"
    if "code" in refusal:
        return f"MCPError {refusal['code']}"
    return refusal.get("type", "a typed error")


def requests_text(n: int, method: str = "tools/list") -> str:
    return f"{n} {method} request{'' if n == 1 else 's'}"


def describe_expectation(expect: dict) -> str:
    if "text" in expect:
        return expect["text"]
    tail = ""
    if "requests" in expect:
        tail = f", after exactly {requests_text(expect['requests'], expect.get('method', 'tools/list'))}"
    if "names" in expect:
        return f"returns {expect['names']}{tail}"
    if expects_refusal(expect):
        refusal = expect.get("refusal")
        what = f"raises {describe_refusal(refusal)}" if refusal else "raises an error (no list)"
        return f"{what}{tail}" + (", then sends nothing" if tail else "")
    if "value" in expect:
        return f"returns {expect['value']!r}"
    return json.dumps(expect)
