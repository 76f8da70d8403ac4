"""``make record``: re-run every recorded solution on the real servers and rewrite its transcript.

``python -m course_lib.tooling.record [EXERCISE ...] [--into FOLDER]`` grades each solution that
``fixtures/grading/transcripts/<exercise>.expected.json`` names, with its exercise's grader, and
records every row as its judge gets it (``grading.runner.RECORDER``). Before it writes anything it
checks the recording itself: each row judged again from its decoded outcome gets the verdict the
real run got, every row the run judged was recorded (a function that cannot be copied into a server runs
no row: each of its rows is what its copy said), and every function the chapter's visible cells
define that fits the exercise is named in the expected file (a new one needs its verdicts written).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import linecache
import sys
from dataclasses import asdict, replace
from pathlib import Path

import nbformat

from course_lib.audit.report import Report
from course_lib.grading import outcome as o
from course_lib.grading.child import SourceError
from course_lib.grading.runner import RECORDER
from course_lib.paths import ROOT
from course_lib.tooling import transcripts as t
from course_lib.tooling.solution_mutants import chapter_namespace
from course_lib.tooling.student_copy import definitions, solution_sources
from course_lib.tooling.visible import fitting, visible_cells


class RecordingFailed(Exception):
    pass


def dotted(name: str):
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def _module(path: Path):
    if path.stem in sys.modules:
        return sys.modules[path.stem]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def visible_functions(stem: str, starter: str) -> dict:
    """The functions the chapter's visible cells define that can be called as its starter is."""
    found: dict = {}
    for name, space in fitting(stem, starter)[1]:
        found.setdefault(name, space[name])
    return found


def solution(source: str, starter: str):
    path, _, name = source.partition(":")
    if not path.endswith(".ipynb"):
        return getattr(_module(ROOT / path), name)
    stem = Path(path).stem
    if name.startswith("visible:"):
        return visible_functions(stem, starter)[name.removeprefix("visible:")]
    namespace = chapter_namespace(visible_cells(stem))
    for n, cell in enumerate(solution_sources(nbformat.read(ROOT / path, as_version=4))):
        filename = f"<{stem} solution {n}>"  # registered: a served exercise copies the function's source
        linecache.cache[filename] = (len(cell), None, cell.splitlines(True), filename)
        exec(definitions(cell, filename), namespace)
    return namespace[name]


def nested(outcome: o.Outcome) -> o.Outcome:
    """A row whose state holds outcomes (by key: the capstone's read row, each URI's answer; or alone: the
    crash an audited server logged) or an audit's report (its lines), as data."""
    def data(v):
        if isinstance(v, o.Outcome):
            return t.encode(v)
        if isinstance(v, Report):
            return {"era": v.era, "lines": [asdict(line) for line in v.lines], "expected": v.expected}
        if isinstance(v, dict) and v and all(isinstance(x, o.Outcome) for x in v.values()):
            return {key: t.encode(x) for key, x in v.items()}
        return v

    return replace(outcome, state={k: data(v) for k, v in outcome.state.items()})


async def record_one(spec: dict, entry: dict) -> dict:
    """One solution's rows, checked: the verdict judged from each decoded row is the run's own."""
    rows: list = []
    token = RECORDER.set(lambda s, outcome: rows.append((s, t.encode(nested(outcome)))))
    try:
        servers = {"servers": [solution(x, spec["starter"]) for x in entry["servers"]]} if "servers" in entry else {}
        card = await dotted(spec["grader"])(solution(entry["source"], spec["starter"]), entry["battery"],
                                           only=entry.get("only"), **servers)
    finally:
        RECORDER.reset(token)
    judge, by_key = dotted(spec["judge"]), {(s.name, s.era): data for s, data in rows}
    for v in card.verdicts:
        if isinstance(getattr(v.outcome, "error", None), SourceError):  # a function that cannot be copied to a
            by_key.setdefault((v.scenario.name, v.scenario.era), t.encode(v.outcome))  # server: what its copy said
        data = by_key.get((v.scenario.name, v.scenario.era))
        if data is None:
            raise RecordingFailed(f"{entry['source']}: {v.scenario.name} ({v.scenario.era}) was not recorded: "
                                  f"{v.observed}")
        again = judge(v.scenario, t.decode(data))
        if (again.passed, again.failure_class, again.observed) != (v.passed, v.failure_class, v.observed):
            raise RecordingFailed(f"{entry['source']}: {v.scenario.name} ({v.scenario.era}) judged from its "
                                  f"recording is {again.observed!r}, the real run {v.observed!r}")
    return {"fingerprint": t.fingerprint(entry, spec.get("depends", ())), "rows": [
        {"scenario": v.scenario.name, "era": v.scenario.era, "outcome": by_key[(v.scenario.name, v.scenario.era)]}
        for v in card.verdicts]}


async def record(exercise: str, into: Path = t.FOLDER, labels: list[str] | None = None) -> Path:
    """Record the exercise's solutions (those of ``labels`` only, when given) into ``into``."""
    spec = t.expected(exercise)
    for stem in spec.get("visible", []) if labels is None else ():
        named = {e["source"].rpartition(":")[2] for e in spec["solutions"].values() if ":visible:" in e["source"]}
        missing = set(visible_functions(stem, spec["starter"])) - named
        if missing:
            raise RecordingFailed(f"{stem} shows {sorted(missing)}, which {exercise}.expected.json does not name: "
                                  "write their expected verdicts there")
    out = {"exercise": exercise, "command": t.COMMAND, "solutions": {}}
    for label, entry in spec["solutions"].items():
        if labels is None or label in labels:
            out["solutions"][label] = await record_one(spec, entry)
    path = into / f"{exercise}.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exercises", nargs="*", help="exercise names (default: every one with an expected file)")
    parser.add_argument("--into", type=Path, default=t.FOLDER, help="the folder to write into")
    args = parser.parse_args(argv)
    for exercise in args.exercises or t.exercises():
        try:
            path = asyncio.run(record(exercise, args.into))
            print("recorded", path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        except RecordingFailed as exc:
            print(f"not recorded: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
