"""The set-up never misleads: an unsupported Python is refused before anything is installed,
and what a failed set-up left behind is rebuilt by the next run, never trusted.

The real Makefile runs in a copy of the files its set-up reads, with stand-in interpreters:
shell scripts that answer the version question as Python 3.9 or 3.12 would, log every call,
create a stand-in ``.venv`` when asked for ``-m venv`` and fail at ``-m pip`` (so nothing is
ever installed, and the run stops where a real one would start installing).
"""
import os
import shutil
import subprocess

import pytest

from course_lib.paths import ROOT

SETUP_FILES = ("Makefile", "pyproject.toml", ".ci/constraints.txt", ".ci/constraints-sdk129.txt",
               ".ci/constraints-servers.txt",
               "fixtures/peers/package.json", "fixtures/peers/package-lock.json",
               "fixtures/slides/package.json", "fixtures/slides/package-lock.json",
               "fixtures/classroom/package.json", "fixtures/classroom/package-lock.json")
STAMP = ".venv/.installed"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def standin(path, version: str, log):
    """An interpreter that reports ``version``: usable by the course only from 3.11 on."""
    usable = 0 if tuple(map(int, version.split("."))) >= (3, 11) else 1
    path.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$1" in
  -c) case "$2" in *print*) echo {version};; *) exit {usable};; esac;;
  -m) [ "$2" = venv ] && mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0; exit 1;;
esac
exit 1
""")
    path.chmod(0o755)
    return path


@pytest.fixture
def course(tmp_path):
    root = tmp_path / "course"
    for name in SETUP_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    return root


# What an outer make (``make test`` runs this file) passes down to a make it starts.
OUTER_MAKE = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")


def make(course, python, goal="test"):
    env = {k: v for k, v in os.environ.items() if k not in OUTER_MAKE}
    return subprocess.run(["make", "--no-print-directory", goal, f"PYTHON={python}"], cwd=course,
                          capture_output=True, text=True, timeout=60, env=env)


def test_python_3_9_is_refused_before_anything_is_installed(course, tmp_path):
    log = tmp_path / "calls.log"
    old = standin(tmp_path / "python3.9", "3.9", log)
    run = make(course, old)
    assert run.returncode != 0
    ours = [line for line in run.stderr.splitlines() if not line.startswith(("make: ***", "make[1]: ***"))]
    assert len(ours) == 1, run.stderr  # one line, then make's own
    assert "needs Python 3.11 or newer" in ours[0] and f"{old} is 3.9" in ours[0]
    assert "make test PYTHON=python3.12" in ours[0]
    assert log.read_text().splitlines() == ["-c import sys; print(\"%d.%d\" % sys.version_info[:2])"]
    assert not (course / ".venv").exists()


def test_a_missing_python_is_named(course, tmp_path):
    run = make(course, tmp_path / "no-such-python", goal="lab")
    assert "is not found" in run.stderr and "make lab PYTHON=python3.12" in run.stderr
    assert not (course / ".venv").exists()


def test_a_venv_left_by_python_3_9_is_rebuilt_and_no_stamp_is_trusted(course, tmp_path):
    log = tmp_path / "calls.log"
    left = course / ".venv" / "bin"
    left.mkdir(parents=True)
    standin(left / "python", "3.9", tmp_path / "old.log")  # what `python3.9 -m venv` left
    (course / ".venv" / "leftover").write_text("from the failed run")
    sdk = course / ".venv-sdk129" / "bin"
    sdk.mkdir(parents=True)
    (sdk / "python").symlink_to(tmp_path / "removed-interpreter")  # dangling: unusable
    new = standin(tmp_path / "python3.12", "3.12", log)
    run = make(course, new)
    assert run.returncode != 0  # the stand-in's pip fails: the run stops where installing starts
    assert not (course / ".venv" / "leftover").exists(), "the unusable .venv was kept"
    assert f"-m venv {'.venv'}" in log.read_text().splitlines()
    assert not (course / ".venv-sdk129").exists(), "the unusable .venv-sdk129 was kept"
    assert not (course / STAMP).exists()


def test_a_usable_venv_is_kept_and_a_failed_run_removes_the_stamp(course, tmp_path):
    log = tmp_path / "calls.log"
    bin_dir = course / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    standin(bin_dir / "python", "3.12", log)
    (course / STAMP).write_text("")
    os.utime(course / STAMP, (0, 0))  # older than pyproject.toml: the set-up runs again
    run = make(course, tmp_path / "never-asked", goal=STAMP)
    assert run.returncode != 0
    calls = log.read_text().splitlines()
    assert calls[0].startswith("-c import sys, pip") and calls[1].startswith("-m pip install")
    assert not any("venv" in call.split()[:2] for call in calls), "a usable .venv was rebuilt"
    assert not (course / STAMP).exists(), "a failed set-up left its stamp"
