"""Negative controls: run known-wrong variants (mutants) of the course code in a temporary copy.

A check that cannot fail proves nothing. A mutant is one named edit to a course file plus the
probe that exercises it, the *named check* that must catch it and the message that check must
give. The edit is anchored on a name the module binds (``Binding``): a function, a method as
``Class.method``, or an imported name. ``new`` is a definition of that name, wrong on purpose; it
replaces the binding once the module has run, and may call the replaced one as ``original``::

    Mutant(name="swallow_caller_failure", path="course_lib/refresh.py",
           old=Binding("Candidate.__aexit__"), new=SWALLOWING_EXIT,
           probe="course_lib.chapters.schema_lab:probe_caller_failure",
           check="caller_failure_propagates", message="caller failure was swallowed")

where ``SWALLOWING_EXIT`` is the text of this definition::

    async def __aexit__(self, exc_type, exc, tb):
        await original(self, exc_type, exc, tb)
        return True

A name survives the refactors that rewrite a function's body or rename its local variables.
``old`` may also be exact source text that occurs once in the file (replaced by ``new``), for
a quick experiment; such an anchor breaks as soon as the text changes.

``run_mutant`` copies ``course_lib/`` and ``fixtures/`` into a fresh temporary directory,
applies the edit there (the real tree is never touched), compiles the edited file, and runs
the probe in a new Python process whose ``course_lib`` is the copy (servers started by the
probe run the copy too; the copy and the run are :mod:`course_lib.chapters.course_copy`). The mutant counts as **killed** only if the probe fails with
``CheckFailed`` at the designated check and the message contains the designated text.
A probe that passes means the mutant **survived**; a compile error, an import error, a
timeout, another exception or another check is **not a kill** and is reported as such.

Probes are ``"module:function"`` names of plain or async functions without arguments that
raise ``CheckFailed`` (through ``require``) when something is wrong.
"""
from __future__ import annotations

import ast
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from course_lib.chapters.course_copy import PROBE_TIMEOUT, copy_course, run_probe, run_probes
from course_lib.errors import CheckFailed, CourseError


def require(condition: object, check: str, message: str) -> None:
    """Fail the named check unless ``condition`` holds (unlike ``assert``, it survives ``-O``)."""
    if not condition:
        raise CheckFailed(check, message)


@dataclass(frozen=True)
class Binding:
    """An anchor a refactor keeps: a name bound at the top of a module, or ``Class.method``."""

    qualname: str


@dataclass(frozen=True)
class Mutant:
    """One known-wrong edit, and where it must be caught."""

    name: str
    path: str      # file to edit, relative to the course root (e.g. "course_lib/refresh.py")
    old: Binding | str  # the name to rebind, or exact text that must occur exactly once in the file
    new: str       # the wrong definition of that name (or the wrong code that replaces the text)
    probe: str     # "module:function" that exercises the edited code
    check: str     # the named check that must fail
    message: str   # text the failure message must contain
    why: str = ""  # one line: the mistake this mutant stands for


@dataclass(frozen=True)
class Outcome:
    """What happened to one mutant (or to one baseline probe)."""

    name: str
    verdict: str   # "killed" | "survived" | "wrong_check" | "not_a_kill" | "passed" (baseline)
    check: str | None = None
    message: str = ""
    detail: str = ""

    @property
    def killed(self) -> bool:
        return self.verdict == "killed"


class BadMutant(CourseError):
    """The mutant itself is unusable: its anchor is missing or ambiguous, or it does not compile."""

    reason = "bad_mutant"


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body binds at its top level."""
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _rebind(mutant: Mutant, source: str) -> str:
    """``source`` with ``mutant.new`` bound to the anchor's name once the module has run."""
    *owners, name = mutant.old.qualname.split(".")
    body = ast.parse(source).body
    for owner in owners:  # Class.method: walk down the class bodies
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == owner), [])
    if name not in _bound_names(body):
        raise BadMutant(f"{mutant.name}: {mutant.path} binds no {mutant.old.qualname!r}")
    new = textwrap.dedent(mutant.new).strip("\n")
    try:
        defined = _bound_names(ast.parse(new).body)
    except SyntaxError as exc:
        raise BadMutant(f"{mutant.name}: its definition does not compile: {exc.msg} (line {exc.lineno})") from None
    if name not in defined:
        raise BadMutant(f"{mutant.name}: its definition binds no {name!r}")
    return (f"{source.rstrip()}\n\n\n# Negative control {mutant.name}: a known-wrong {mutant.old.qualname}.\n"
            f"def _known_wrong(original):\n{textwrap.indent(new, '    ')}\n    return {name}\n\n\n"
            f"{mutant.old.qualname} = _known_wrong({mutant.old.qualname})\n")


def apply(mutant: Mutant, root: Path) -> None:
    """Apply the edit inside ``root`` (a copy), checking the anchor and that the result compiles."""
    path = root / mutant.path
    source = path.read_text(encoding="utf-8")
    if isinstance(mutant.old, Binding):
        edited = _rebind(mutant, source)
    else:
        count = source.count(mutant.old)
        if count != 1:
            raise BadMutant(f"{mutant.name}: anchor found {count} times in {mutant.path}, expected exactly once")
        edited = source.replace(mutant.old, mutant.new, 1)
    try:
        compile(edited, str(path), "exec")
    except SyntaxError as exc:
        raise BadMutant(f"{mutant.name}: edited {mutant.path} does not compile: {exc.msg} (line {exc.lineno})") from None
    path.write_text(edited, encoding="utf-8")


def _judge(mutant: Mutant, report: dict) -> Outcome:
    status = report.get("status")
    if status == "passed":
        return Outcome(mutant.name, "survived", detail="the probe passed with the mutant in place")
    if status == "check_failed":
        check, message = report["check"], report["message"]
        if check == mutant.check and mutant.message in message:
            return Outcome(mutant.name, "killed", check, message)
        return Outcome(mutant.name, "wrong_check", check, message,
                       f"expected [{mutant.check}] containing {mutant.message!r}")
    return Outcome(mutant.name, "not_a_kill", None, "", f"{status}: {report.get('detail', '')}")


def run_mutant(mutant: Mutant, *, timeout: float = PROBE_TIMEOUT) -> Outcome:
    """Apply ``mutant`` in a fresh temporary copy, run its probe, and judge the result."""
    with tempfile.TemporaryDirectory(prefix="course-mutant-") as tmp:
        root = Path(tmp)
        copy_course(root)
        apply(mutant, root)
        return _judge(mutant, run_probe(mutant.probe, root, timeout=timeout))


def run_baseline(probe: str, *, timeout: float = PROBE_TIMEOUT, optimize: bool = False) -> Outcome:
    """Run ``probe`` on an unedited copy (under ``python -O`` if ``optimize``): it must pass, or no
    kill means anything."""
    return run_baselines([probe], timeout=timeout, optimize=optimize)[0]


def run_baselines(probes: list[str], *, timeout: float = PROBE_TIMEOUT, optimize: bool = False) -> list[Outcome]:
    """``run_baseline`` for each of ``probes``, on one unedited copy, in one child interpreter."""
    with tempfile.TemporaryDirectory(prefix="course-baseline-") as tmp:
        root = Path(tmp)
        copy_course(root)
        reports = run_probes(probes, root, timeout=timeout, optimize=optimize)
    return [Outcome(probe, "passed") if report.get("status") == "passed" else
            Outcome(probe, "not_a_kill", report.get("check"), report.get("message", ""),
                    f"baseline failed: {report.get('status')}: {report.get('detail', report.get('message', ''))}")
            for probe, report in zip(probes, reports)]


def outcome_table(mutants: list[Mutant], outcomes: list[Outcome]):
    """Mutant, edited file, designated check and verdict, one row each (``failures_seen`` has the rest)."""
    from course_lib.display import Table

    by_name = {o.name: o for o in outcomes}
    rows = [[m.name, m.path.removeprefix("course_lib/"), m.check, by_name[m.name].verdict] for m in mutants]
    return Table(["mutant", "file", "must fail at", "verdict"], rows)


def failures_seen(outcomes: list[Outcome]) -> str:
    """What each probe reported, two lines a mutant: its name, then ``[check] message`` (or the error)."""
    lines = []
    for o in outcomes:
        lines += [f"{o.name}:", "    " + (f"[{o.check}] {o.message}" if o.check else o.detail)]
    return "\n".join(lines)
