"""Chapter 8's second exercise: ``my_check_reply(line, request_id)``, judged on damaged replays.

A real atlas session is captured in each era, its first reply damaged as each row of
``fixtures/grading/envelope.json`` says, and replayed through the stand-in with the student's
checker inside ``LineClient``, in a normal and a ``python -O`` child interpreter (the function is
copied there by ``grading.child``; each call is stopped at the budget by ``SIGALRM``). A row passes
only if, in both eras and both interpreters, the damaged reply is refused at its named check at
the first reply, and the undamaged session passes."""
from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import signal
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Callable

import anyio

from course_lib._runtime.process import started_server
from course_lib.chapters.envelope_controls import STANDIN, atlas_session, capture, damaged
from course_lib.errors import CheckFailed, CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, load_battery, select
from course_lib.grading.child import SourceError, child_argv, write_module
from course_lib.grading.outcome import crash_line
from course_lib.grading.scorecard import Scorecard, Verdict, publish
from course_lib.line_client import LineClient, asserts_active, python_argv
from course_lib.scenarios import for_each

BATTERY = "envelope"
MODULE = "student_checker"


# -- the child: replays with the student's checker ------------------------------------------

class CheckerProblem(Exception):
    """The student's checker did something other than return the reply or refuse it."""

    def __init__(self, kind: str, message: str, error_type: str | None = None):
        super().__init__(message)
        self.kind, self.error_type = kind, error_type


class _Hung(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hung()


def guarded(checker: Callable, budget: float) -> Callable[[bytes, int], dict]:
    """The student's checker as ``LineClient`` calls it: stopped after ``budget`` seconds; any
    outcome but a returned reply object or a ``CheckFailed`` becomes a ``CheckerProblem``."""

    def check(line: bytes, request_id: int) -> dict:
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, budget)
        try:
            value = checker(line, request_id)
        except CheckFailed:
            raise
        except _Hung:
            raise CheckerProblem("hung", f"no answer within {budget:g} s") from None
        except AssertionError as exc:
            raise CheckerProblem("assert", f"raised AssertionError: {exc}"[:200]) from None
        except Exception as exc:
            raise CheckerProblem("crashed", "your code crashed: " + crash_line(exc)[:200], type(exc).__name__) from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = CheckerProblem  # nothing a checker returns equals this
        if not isinstance(value, dict) or value != parsed:
            raise CheckerProblem("returned", f"returned {value!r}"[:80] + ", not the reply object")
        return value

    return check


async def _replay(path: Path, checker: Callable, budget: float) -> dict:
    recorded = json.loads(path.read_text(encoding="utf-8"))
    wire = LineClient(python_argv(str(STANDIN), str(path)), era=recorded["era"], sdk=recorded["sdk"],
                      server_messages="judge", reply_timeout=30.0, exit_grace=10.0, checker=guarded(checker, budget))
    row = {"file": path.name, "asserts_active": asserts_active()}
    try:
        async with wire:
            await atlas_session(wire)
        row.update(outcome="passed", check=None, message="")
    except CheckerProblem as exc:
        row.update(outcome=exc.kind, check=None, message=str(exc), error_type=exc.error_type)
    except CheckFailed as exc:
        row.update(outcome="refused", check=exc.check, message=exc.message)
    except CourseError as exc:  # the session failed after the checker accepted a reply
        row.update(outcome="later", check=exc.reason, message=str(exc))
    except Exception as exc:
        row.update(outcome="later", check=type(exc).__name__, message=f"{type(exc).__name__}: {exc}")
    row["replies_checked"] = wire.replies_checked
    return row


async def _replay_dir(directory: Path) -> None:
    spec = json.loads((directory / "spec.json").read_text(encoding="utf-8"))
    where = importlib.util.spec_from_file_location(MODULE, directory / f"{MODULE}.py")
    module = importlib.util.module_from_spec(where)
    try:
        where.loader.exec_module(module)
        checker = getattr(module, spec["function"])
    except Exception as exc:
        print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}), flush=True)
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


async def _run_child(directory: Path, files: list[str], mode: str, budget: float) -> dict[str, dict]:
    """Replay ``files`` in one interpreter; a file without an answer gets a ``hung`` row."""
    argv = child_argv("-m", __name__, "replay", str(directory), optimize=mode == "-O")
    rows: dict[str, dict] = {}
    lines: list[str] = []
    async with started_server(argv, prefix="course-envelope-child-") as process:
        buffer = b""
        with anyio.move_on_after(budget * 4 * len(files) + 60):
            async for chunk in process.stdout:
                buffer += chunk
                *done, buffer = buffer.split(b"\n")
                lines += [line.decode() for line in done if line.strip()]
    for line in lines:
        row = json.loads(line)
        if "import_error" in row:
            return {name: {"outcome": "crashed", "check": None, "replies_checked": 0,
                           "message": f"your code crashed on import: {row['import_error']}"} for name in files}
        rows[row["file"]] = row
    for name in files:
        rows.setdefault(name, {"outcome": "hung", "check": None, "replies_checked": 0,
                               "message": "the replay was stopped: it did not end within its budget"})
    return rows


def _describe(row: dict, expected: str) -> tuple[str, str] | None:
    """None when the row is right; otherwise (what happened, its hint class)."""
    outcome, check = row["outcome"], row["check"]
    if expected == "passed":
        if outcome == "passed":
            return None
        if outcome == "refused":
            return f"refused an undamaged reply at [{check}] {row['message']}", "scenario"
    else:
        if check == expected and row["replies_checked"] == 0:  # (only a refusal names a check)
            return None
        if check == expected:
            return f"refused at [{check}] only at reply {row['replies_checked'] + 1}", "scenario"
        if outcome == "refused":
            return f"refused at [{check}], not at {expected}", "scenario"
        if outcome == "passed":
            return "accepted the damaged reply (the session went on)", "scenario"
    if outcome in ("assert", "crashed", "hung", "returned"):
        return row["message"], outcome
    return f"the session failed after your checker accepted a reply: {row['message']}"[:160], "scenario"


FAILURES = {"crashed": o.CRASH, "hung": o.HANG, "source": o.CRASH}


def failing(s: Scenario, observed: str, key: str, class_hints: dict, error_type: str | None = None) -> Verdict:
    error = {"NotImplementedError": NotImplementedError(), "NameError": NameError()}.get(error_type)
    return Verdict(replace(s, hint=class_hints.get(key, s.hint)), False, observed, FAILURES.get(key, o.WRONG_RESULT),
                   o.crashed(error) if error is not None else None)


def judge_envelope(s: Scenario, rows: dict, expected: str, eras: list[str], modes: list[str],
                   class_hints: dict) -> Verdict:
    """One row per (era, interpreter) of the replays: the scenario passes only if every one is right."""
    found: dict[str, list[tuple[str, str]]] = {}
    key, error_type = None, None
    for era in eras:
        for mode in modes:
            wrong = _describe(rows[(era, mode)], expected)
            if wrong is not None:
                found.setdefault(wrong[0], []).append((era, mode))
                key = key if key not in (None, "scenario") else wrong[1]
                error_type = error_type or rows[(era, mode)].get("error_type")
    if not found:
        return Verdict(s, True, "refused as expected" if expected != "passed" else "passed")
    observed = "; ".join(_label(combos, eras, modes) + text for text, combos in found.items())
    return failing(s, observed, key, class_hints, error_type)


def _label(combos: list[tuple[str, str]], eras: list[str], modes: list[str]) -> str:
    """Where a failure happened: nothing when everywhere, else the eras, the interpreters or both."""
    if len(combos) == len(eras) * len(modes):
        return ""
    whole_eras = [e for e in eras if all((e, m) in combos for m in modes)]
    if len(combos) == len(whole_eras) * len(modes):
        return " and ".join(whole_eras) + ": "
    whole_modes = [m for m in modes if all((e, m) in combos for e in eras)]
    if len(combos) == len(whole_modes) * len(eras):
        return " and ".join(whole_modes) + ": "
    return ", ".join(f"{e} {m}" for e, m in combos) + ": "


async def grade_envelope(student: Callable, battery: str = BATTERY, *, only: list[str] | None = None,
                         budget: float | None = None, modes: list[str] | None = None) -> Scorecard:
    """Grade ``my_check_reply(line, request_id)`` on the battery's damaged replays."""
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, None)
    budget = budget or spec.get("budget_seconds", 5.0)
    eras, modes = spec["era_list"], list(modes or spec["modes"])
    entries = {entry["name"]: entry for entry in spec["scenarios"]}
    title = f"{title} (each call stopped after {budget:g} s)"

    directory = Path(tempfile.mkdtemp(prefix="course-envelope-grade-"))
    try:
        write_module(directory, MODULE, student, spec.get("unavailable", ()))
    except SourceError as exc:
        shutil.rmtree(directory, ignore_errors=True)
        return publish(Scorecard(title, [failing(s, str(exc), "source", spec["class_hints"]) for s in scenarios],
                                 battery=battery))

    captures = await for_each(capture, eras)
    try:
        files, where = [], {}
        for index, s in enumerate(scenarios):
            for era in eras:
                name = f"{index:02d}-{era}.json"
                (directory / name).write_text(json.dumps(damage(captures[era], entries[s.name]["damage"])),
                                              encoding="utf-8")
                files.append(name)
                where[(s.name, era)] = name
        (directory / "spec.json").write_text(json.dumps({"function": student.__name__, "files": files,
                                                         "budget": budget}), encoding="utf-8")
        results = await for_each(lambda mode: _run_child(directory, files, mode, budget), modes)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    verdicts = [judge_envelope(s, {(e, m): results[m][where[(s.name, e)]] for e in eras for m in modes},
                               entries[s.name]["refused_at"], eras, modes, spec["class_hints"]) for s in scenarios]
    return publish(Scorecard(title, verdicts, battery=battery))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
