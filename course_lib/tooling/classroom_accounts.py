"""The classroom's roster, its students' system accounts and copies, and the class's progress table
(:mod:`course_lib.tooling.classroom` is the command line; the hub and the install read these)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.paths import ROOT

STATE = ROOT / ".classroom"
COPY = "course"  # each student's copy: ~/course
FIRST = "00_orientation.ipynb"
NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
GECOS = "MCP course classroom"  # marks the system users the classroom made
RESERVED = {"root", "daemon", "bin", "sys", "nobody", "admin"}


class ClassroomError(CourseError):
    """A roster, a set-up or a state the classroom cannot use."""

    reason = "classroom"


class ClassroomUnsupported(ClassroomError):
    """The classroom needs Linux and root (it makes a system user per student)."""

    reason = "classroom_unsupported"


def require_platform() -> None:
    if not sys.platform.startswith("linux"):
        raise ClassroomUnsupported(f"make classroom serves a class from a Linux machine (system users, useradd); "
                                   f"this is {sys.platform}: each student can run make lab on their laptop")
    if os.geteuid() != 0:
        raise ClassroomUnsupported("make classroom runs as root: it makes a system user for each student "
                                   "(sudo make classroom CLASS=roster.txt)")


# -- the roster ---------------------------------------------------------------------------------

def parse_roster(text: str, where: str = "the roster") -> list[str]:
    """The user names of a roster: one a line, ``#`` comments, blank lines skipped."""
    names: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not NAME.fullmatch(name) or name in RESERVED:
            raise ClassroomError(f"{where}, line {number}: {name!r} is not a user name the classroom can make "
                                 "(lowercase letters, digits, - and _, at most 32, starting with a letter)",
                                 reason="bad_roster")
        if name in names:
            raise ClassroomError(f"{where}, line {number}: {name!r} is listed twice", reason="bad_roster")
        names.append(name)
    if not names:
        raise ClassroomError(f"{where} names no student", reason="bad_roster")
    return names


def read_roster(path: Path | str) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise ClassroomError(f"no roster at {path}: write one user name a line (make classroom CLASS=FILE)",
                             reason="bad_roster")
    return parse_roster(path.read_text(encoding="utf-8"), str(path))


# -- the class's progress -------------------------------------------------------------------------

def home_of(name: str) -> Path:
    import pwd

    try:
        return Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        raise ClassroomError(f"{name!r} has no system user (the classroom makes one at its start)",
                             reason="no_user") from None


def class_progress(students: list[str], copy_of=lambda name: home_of(name) / COPY) -> Table:
    """One row per student: how many exercises they checked, how many at full marks, and their
    best score in every exercise anyone in the class checked (``-``: not checked yet)."""
    from course_lib import progress

    found: dict[str, dict[str, dict]] = {}
    notes = []
    for name in students:
        try:
            found[name] = progress.read(copy_of(name))
        except (progress.ProgressError, ClassroomError) as exc:
            found[name] = {}
            notes.append(f"{name}: {exc}")
    exercises = sorted({key for entries in found.values() for key in entries})
    rows = []
    for name in students:
        entries = found[name]
        full = sum(e["score"] == e["total"] for e in entries.values())
        rows.append([name, len(entries), full,
                     *(f"{entries[k]['score']}/{entries[k]['total']}" if k in entries else "-" for k in exercises)])
    return Table(["student", "checked", "full marks", *exercises], rows, notes=notes)


# -- the students' accounts and copies --------------------------------------------------------------

def ensure_user(name: str) -> Path:
    """The student's system user (made if missing, marked by its comment), home mode 700."""
    import pwd

    try:
        home = Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment", GECOS, name],
                       check=True, capture_output=True)
        home = Path(pwd.getpwnam(name).pw_dir)
    os.chmod(home, 0o700)
    return home


def prepare_copy(name: str) -> Path:
    """Write the student copy into ``~/course`` (files the student has are kept), owned by them."""
    import pwd

    from course_lib.tooling.student_copy import generate

    home = ensure_user(name)
    entry = pwd.getpwnam(name)
    copy = home / COPY
    generate(copy)
    for path in [copy, *copy.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    return copy


def remove_user(name: str) -> None:
    """Remove a user the classroom made (its comment says so) with its home; others are refused."""
    import pwd

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return
    if entry.pw_gecos != GECOS:
        raise ClassroomError(f"{name!r} was not made by the classroom: not removed", reason="not_ours")
    import psutil

    # a hub that was killed leaves its students' servers running: they go first
    mine = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == entry.pw_uid]
    for process in mine:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(mine, timeout=10)
    subprocess.run(["userdel", "--remove", name], check=True, capture_output=True)
