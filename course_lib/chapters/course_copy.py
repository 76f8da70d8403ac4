"""A probe run in a temporary copy of the course, in a new Python process whose ``course_lib`` is
the copy (the negative controls' runner: :mod:`course_lib.chapters.negative_controls`).

``copy_course`` copies ``course_lib/`` and ``fixtures/`` into a folder; ``run_probes`` runs
``"module:function"`` probes there, one after the other in one child interpreter (servers started
by a probe run the copy too), and returns one report each: ``passed``, ``check_failed`` with the
check and its message, or ``error``, ``crashed`` or ``timeout`` with what was seen.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from course_lib.paths import ROOT

COPIED = ("course_lib", "fixtures")
PROBE_TIMEOUT = 180.0


def copy_course(target: Path) -> None:
    for name in COPIED:
        # Not the Node peers (150 MB; no probe runs them): copying them made each mutant slow.
        shutil.copytree(ROOT / name, target / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "node_modules"))



def probe_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(root)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# Runs before course_lib is imported, so that a copy whose package does not even import is
# reported as such (a "not a kill"), not as a crash without a report.
_BOOTSTRAP = """
import json, sys, traceback
from pathlib import Path
jobs = [(spec, Path(report)) for spec, report in zip(sys.argv[1::2], sys.argv[2::2])]
try:
    from course_lib.chapters.course_copy import _run_probe_here
except BaseException as exc:
    for _, report in jobs:
        report.write_text(json.dumps({"status": "error",
                                      "detail": traceback.format_exception_only(type(exc), exc)[-1].strip()}))
else:
    for spec, report in jobs:
        _run_probe_here(spec, report)
"""


def run_probe(probe: str, root: Path, *, timeout: float = PROBE_TIMEOUT, optimize: bool = False) -> dict:
    """Run ``probe`` in a new process with ``root``'s course_lib (``python -O`` if ``optimize``);
    return its report."""
    return run_probes([probe], root, timeout=timeout, optimize=optimize)[0]


def run_probes(probes: list[str], root: Path, *, timeout: float = PROBE_TIMEOUT, optimize: bool = False) -> list[dict]:
    """``run_probe`` for each of ``probes``, one after the other in one new process (``timeout``
    each); one report per probe."""
    reports = [root / f"probe-report-{i}.json" for i in range(len(probes))]
    for path in reports:
        path.unlink(missing_ok=True)
    argv = [sys.executable, *(["-O"] if optimize else []), "-c", _BOOTSTRAP,
            *(part for probe, path in zip(probes, reports) for part in (probe, str(path)))]
    env = probe_env(root)
    with open(os.devnull, "rb") as nothing, tempfile.TemporaryFile() as output:
        try:
            returncode = subprocess.run(argv, cwd=root, env=env, stdin=nothing, stdout=output,
                                        stderr=subprocess.STDOUT, timeout=timeout * len(probes)).returncode
        except subprocess.TimeoutExpired:
            returncode = None
        output.seek(0)
        text = output.read().decode(errors="replace")
    return [_report(path, root, returncode, text, timeout) for path in reports]


def _report(path: Path, root: Path, returncode: int | None, text: str, timeout: float) -> dict:
    if not path.exists():
        if returncode is None:
            return {"status": "timeout", "detail": f"probe ran past {timeout:g} s"}
        last = text.strip().splitlines()[-1:] or [""]
        return {"status": "crashed", "detail": f"exit code {returncode}: {last[0]}"}
    report = json.loads(path.read_text(encoding="utf-8"))
    # Paths inside the temporary copy are noise for a reader: name the copy, not its location.
    return {k: v.replace(str(root), "<copy>") if isinstance(v, str) else v for k, v in report.items()}


# -- the probe runner (executed inside the copy) -------------------------------------------

def _run_probe_here(spec: str, report_path: Path) -> None:
    import importlib
    import inspect

    def report(**data) -> None:
        report_path.write_text(json.dumps(data), encoding="utf-8")

    Failed: tuple | type = ()  # nothing counts as a check failure until course_lib imported
    try:
        import course_lib
        from course_lib.errors import CheckFailed as Failed

        here = Path(course_lib.__file__).resolve().parent.parent
        if here != report_path.parent.resolve():
            report(status="error", detail=f"probe imported course_lib from {here}, not from the copy")
            return
        module_name, _, function_name = spec.partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
        if inspect.iscoroutinefunction(function):
            import anyio

            anyio.run(function)
        else:
            function()
    except BaseException as exc:  # everything is reported; only a CheckFailed can count as a kill
        try:
            from course_lib.errors import unwrap

            cause = unwrap(exc)
        except Exception:
            cause = exc
        if isinstance(cause, Failed):
            report(status="check_failed", check=cause.check, message=cause.message)
        else:
            line = traceback.format_exception_only(type(cause), cause)[-1].strip()
            report(status="error", detail=line)
    else:
        report(status="passed")
