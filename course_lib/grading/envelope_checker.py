"""Chapter 8's second exercise: ``my_check_reply(line, request_id)``, judged on damaged replays.

A real atlas session is captured in each era, its first reply damaged as each row of ``envelope.json`` says, and
replayed with the student's checker inside ``LineClient`` in a ``python`` and a ``python -O`` child interpreter.
A row passes only if, everywhere, the damaged reply is refused at its named check at the first reply."""
from __future__ import annotations

import copy
import json
import sys
import tempfile
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable

import anyio

from course_lib._runtime.process import started_server
from course_lib.chapters.envelope_controls import STANDIN, atlas_session, capture, damaged
from course_lib.errors import CheckFailed, CourseError
from course_lib.grading import outcome as o
from course_lib.grading.budget import observe_now
from course_lib.grading.battery import Scenario
from course_lib.grading.child import SourceError, child_argv, load, write_module
from course_lib.grading.runner import exercise, record, run
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.line_checks import asserts_active, python_argv
from course_lib.line_client import LineClient
from course_lib.scenarios import for_each

BATTERY = "envelope"
MODULE = "student_checker"


# -- the child: replays with the student's checker ------------------------------------------

def guarded(checker: Callable, budget: float) -> Callable[[bytes, int], dict]:
    """The student's checker as ``LineClient`` calls it, under its budget: anything else than returning the reply
    object or raising ``CheckFailed`` raises ``outcome.Failed``."""

    def check(line: bytes, request_id: int) -> dict:
        outcome = observe_now(lambda: checker(line, request_id), budget)
        error = outcome.error
        if isinstance(error, CheckFailed):
            raise error
        if outcome.kind == o.HUNG:
            raise o.Failed(o.HANG, f"no answer within {budget:g} s", outcome)
        if isinstance(error, AssertionError):
            raise o.Failed(o.WRONG_RESULT, f"raised AssertionError: {error}"[:200], outcome)
        if error is not None:
            raise o.Failed(o.CRASH, o.describe(o.crashed(error))[:219], o.crashed(error))
        value = outcome.value
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = check  # nothing a checker returns equals this
        if not isinstance(value, dict) or value != parsed:
            raise o.Failed(o.WRONG_RESULT, f"returned {value!r}"[:80] + ", not the reply object", o.returned(None))
        return value

    return check


def _record(outcome: o.Outcome) -> dict:
    """A replay's outcome as the child reports it (``outcome_of`` reads it back)."""
    refused = outcome.kind == o.REFUSED  # (only ever a CheckFailed: ``_replay``)
    return {"kind": outcome.kind, "failure": outcome.failure, "observed": outcome.observed, "budget": outcome.budget,
            "check": outcome.error.check if refused else None, "message": outcome.error.message if refused else None,
            "crash": o.crash_record(outcome.error) if outcome.kind == o.CRASHED else None}


def outcome_of(row: dict) -> o.Outcome:
    error = (CheckFailed(row["check"], row["message"]) if row["kind"] == o.REFUSED
             else o.crash_from(row["crash"]).error if row["crash"] else None)
    return o.Outcome(row["kind"], error=error, budget=row["budget"], failure=row["failure"], observed=row["observed"])


async def _replay(path: Path, checker: Callable, budget: float) -> dict:
    recorded = json.loads(path.read_text(encoding="utf-8"))
    wire = LineClient(python_argv(str(STANDIN), str(path)), era=recorded["era"], sdk=recorded["sdk"],
                      server_messages="judge", reply_timeout=30.0, exit_grace=10.0, checker=guarded(checker, budget))
    try:
        async with wire:
            await atlas_session(wire)
        outcome = o.returned(None)  # the session passed
    except o.Failed as exc:  # the checker did something else than return the reply or refuse it
        outcome = exc.outcome
    except CheckFailed as exc:
        outcome = o.raised(exc)
    except Exception as exc:  # the session failed after the checker accepted a reply
        said = str(exc) if isinstance(exc, CourseError) else o.last_line(exc)
        outcome = o.judged(o.WRONG_RESULT, f"the session failed after your checker accepted a reply: {said}"[:160],
                           o.Outcome(o.LAB_FAILED))
    return {"file": path.name, "asserts_active": asserts_active(), "replies_checked": wire.replies_checked,
            **_record(outcome)}


async def _replay_dir(directory: Path) -> None:
    spec = json.loads((directory / "spec.json").read_text(encoding="utf-8"))
    try:
        checker = load(directory / f"{MODULE}.py", spec["function"])
    except Exception as exc:
        print(json.dumps({"import_error": o.crash_record(exc)}), flush=True)
        return
    for name in spec["files"]:
        print(json.dumps(await _replay(directory / name, checker, spec["budget"])), flush=True)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "replay":
        anyio.run(_replay_dir, Path(argv[1]))
        return 0
    print("usage: python [-O] -m course_lib.grading.envelope_checker replay DIR", file=sys.stderr)
    return 2


# -- the parent: the battery, the children, the verdicts -------------------------------------

def damage(recorded: dict, spec: dict) -> dict:
    """The capture with the first reply damaged as the battery's ``damage`` entry says."""
    if "case" in spec:
        return damaged(recorded, spec["case"])
    out = damaged(recorded, "valid")
    first = next(x for x in out["exchanges"] if "reply" in x)
    if "replace" in spec:
        first["reply"] = copy.deepcopy(spec["replace"])
    for key, value in spec.get("set", {}).items():
        first["reply"][key] = value
    for key in spec.get("drop", []):
        first["reply"].pop(key, None)
    return out


async def _run_child(directory: Path, files: list[str], mode: str, budget: float) -> dict[str, tuple]:
    """Replay ``files`` in one interpreter: ``(outcome, replies checked)`` per file (``HUNG`` without an answer)."""
    argv = child_argv("-m", __name__, "replay", str(directory), optimize=mode == "-O")
    rows, out = {}, b""
    async with started_server(argv, prefix="course-envelope-child-") as process:
        with anyio.move_on_after(budget * 4 * len(files) + 60):
            async for chunk in process.stdout:
                out += chunk
    for line in (line.decode() for line in out.split(b"\n")[:-1] if line.strip()):  # each finished line
        row = json.loads(line)
        if "import_error" in row:
            crash = o.crash_from(row["import_error"])
            return {name: (o.judged(o.CRASH, o.describe(crash), crash), 0) for name in files}
        rows[row["file"]] = (outcome_of(row), row["replies_checked"])
    for name in files:
        rows.setdefault(name, (o.judged(o.HANG, "the replay was stopped: it did not end within its budget",
                                        o.hung(budget)), 0))
    return rows


def _key(outcome: o.Outcome) -> str:
    """The battery's ``class_hints`` key of what a checker did (``scenario``: the scenario's own hint)."""
    if outcome.kind == o.CRASHED:
        return "assert" if isinstance(outcome.error, AssertionError) else "crashed"
    return {o.HUNG: "hung", o.RETURNED: "returned"}.get(outcome.kind, "scenario")


def _describe(found: tuple[o.Outcome, int], expected: str) -> tuple[str, str] | None:
    """None when the replay is right; otherwise (what happened, its hint class)."""
    outcome, replies_checked = found
    check = outcome.error.check if outcome.kind == o.REFUSED else None
    accepted = outcome.kind == o.RETURNED and outcome.failure is None  # the session went on to its end
    if expected == "passed":
        if accepted:
            return None
        if check is not None:
            return f"refused an undamaged reply at [{check}] {outcome.error.message}", "scenario"
    else:
        if check == expected and replies_checked == 0:
            return None
        if check == expected:
            return f"refused at [{check}] only at reply {replies_checked + 1}", "scenario"
        if check is not None:
            return f"refused at [{check}], not at {expected}", "scenario"
        if accepted:
            return "accepted the damaged reply (the session went on)", "scenario"
    return outcome.observed, _key(outcome)


def judge_envelope(s: Scenario, rows: dict, expected: str, eras: list[str], modes: list[str],
                   class_hints: dict) -> Verdict:
    """One ``(outcome, replies checked)`` per (era, interpreter): it passes only if every one is right."""
    found: dict[str, list[tuple[str, str]]] = {}
    key, seen = None, None
    for era in eras:
        for mode in modes:
            wrong = _describe(rows[(era, mode)], expected)
            if wrong is not None:
                found.setdefault(wrong[0], []).append((era, mode))
                if key in (None, "scenario") and wrong[1] != "scenario":
                    seen = rows[(era, mode)][0]
                key = key if key not in (None, "scenario") else wrong[1]
    if not found:
        return Verdict(s, True, "refused as expected" if expected != "passed" else "passed")
    observed = "; ".join(_label(combos, eras, modes) + text for text, combos in found.items())
    failure = seen.failure if seen is not None else o.WRONG_RESULT
    return Verdict(replace(s, hint=class_hints.get(key, s.hint)), False, observed, failure, seen)


def _label(combos: list[tuple[str, str]], eras: list[str], modes: list[str]) -> str:
    """Where a failure happened: nothing when everywhere, else the eras, the interpreters or both."""
    if len(combos) == len(eras) * len(modes):
        return ""
    for whole, across in (([e for e in eras if all((e, m) in combos for m in modes)], modes),
                          ([m for m in modes if all((e, m) in combos for e in eras)], eras)):
        if len(combos) == len(whole) * len(across):  # whole eras, else whole interpreters
            return " and ".join(whole) + ": "
    return ", ".join(f"{e} {m}" for e, m in combos) + ": "


def unwritten(s: Scenario, said: str, spec: dict) -> Verdict:
    """A row of a checker that cannot be written to the child (``SourceError``: ``said``): a crash."""
    return Verdict(replace(s, hint=spec["class_hints"]["source"]), False, said, o.CRASH, o.crashed(SourceError(said)))


async def grade_envelope(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                         budget: float | None = None, modes: list[str] | None = None) -> Scorecard:
    """Grade ``my_check_reply(line, request_id)``: one lab replays every row's damaged files in each interpreter."""
    ex = exercise(battery, only, budget=budget, default=5.0)
    spec, entries = ex.spec, ex.rows
    eras, modes = spec["era_list"], list(modes or spec["modes"])

    with tempfile.TemporaryDirectory(prefix="course-envelope-grade-", ignore_cleanup_errors=True) as folder:
        directory = Path(folder)
        try:
            write_module(directory, MODULE, student, spec.get("unavailable", ()))
        except SourceError as exc:
            for s in ex.scenarios:  # no replay: what the copy said
                record(s, o.returned(None).with_wire((), unwritten=str(exc)))
            verdicts = [unwritten(s, str(exc), spec) for s in ex.scenarios]
            return publish(Scorecard(ex.title, verdicts, ex.budget, battery))

        @asynccontextmanager
        async def open_lab(_):
            captures = await for_each(capture, eras)
            files, where = [], {}
            for index, s in enumerate(ex.scenarios):
                for era in eras:
                    name = f"{index:02d}-{era}.json"
                    (directory / name).write_text(json.dumps(damage(captures[era], entries[s.name]["damage"])),
                                                  encoding="utf-8")
                    files.append(name)
                    where[(s.name, era)] = name
            (directory / "spec.json").write_text(json.dumps({"function": student.__name__, "files": files,
                                                             "budget": ex.budget}), encoding="utf-8")
            results = await for_each(lambda mode: _run_child(directory, files, mode, ex.budget), modes)
            yield lambda s: {(e, m): results[m][where[(s.name, e)]] for e in eras for m in modes}

        async def row(s: Scenario, replays) -> Verdict:
            record(s, o.returned(None).with_wire((), replays=[  # the judge's input: each replay as its child said
                {"era": era, "mode": mode, "replies_checked": checked, **_record(outcome)}
                for (era, mode), (outcome, checked) in replays(s).items()]))
            return judge_envelope(s, replays(s), entries[s.name]["refused_at"], eras, modes, spec["class_hints"])

        return await run(ex, open_lab, row, key=lambda s: battery, calls=len(ex.scenarios) * len(eras) * len(modes))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
