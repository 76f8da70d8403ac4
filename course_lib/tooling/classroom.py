"""A class on one machine: ``make classroom CLASS=roster.txt`` (JupyterHub, each student their own copy).

``python -m course_lib.tooling.classroom serve ROSTER [--port 8000] [--idle-minutes 60] [--state DIR]
[--instructor NAME]`` starts the pinned JupyterHub (``jupyterhub``, the ``classroom`` extra) behind its
pinned proxy (``configurable-http-proxy``, locked in ``fixtures/classroom``, run by the Node.js of the
pinned wheel), on 127.0.0.1 only:

- the roster is one user name a line (``#`` starts a comment); each student signs in with their
  name and the workshop password (JupyterHub's shared-password authenticator), the instructor
  with the admin password; both are made once and kept in ``STATE/passwords.json`` (mode 600) and
  printed at the start (``CLASS_PASSWORD`` chooses the students' one);
- each student is a system user of their own (``useradd``, home mode 700): their copy of the
  course is ``~/course`` (the student copy, written at their first sign-in and never overwritten),
  their lab server and kernels run as them, so one cannot read another's copy or reach another's
  server (the hub admits a user only to their own server); the hub's database and cookie secret
  live in STATE (mode 700), so a restart of the hub keeps every account and every copy;
- an idle lab server stops itself after ``--idle-minutes`` without activity (its idle kernels
  first); stopping the hub (Ctrl-C or SIGTERM) stops every student's server and the proxy, and
  the command then stops whatever a hub stopped while starting left behind (``classroom_hub.sweep``);
- the instructor is the hub's admin; ``/hub/progress`` shows the class's progress table to an
  admin, and ``python -m course_lib.tooling.classroom progress ROSTER`` (``make classroom-progress``)
  prints it: each student's best score in every exercise, read from the progress file each
  student's checks write (:mod:`course_lib.progress`).

The student servers run from ``.venv-classroom`` (``python -m course_lib.tooling.classroom
install``), built from an interpreter every user may run: the course's own ``.venv`` may come from
a folder only its owner can read.

This module holds the roster, the class's progress, the students' accounts and copies, and the
command line; the hub (its configuration, start and stop) is :mod:`course_lib.tooling.classroom_hub`,
the building of ``.venv-classroom`` :mod:`course_lib.tooling.classroom_install`.

The classroom needs a Linux machine and root (it makes system users); elsewhere it stops with
:class:`ClassroomUnsupported` before doing anything. A laptop runs ``make lab``.
"""
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


def _options(argv: list[str], known: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    values, rest, args = dict(known), [], iter(argv)
    for arg in args:
        key = arg[2:].replace("-", "_") if arg.startswith("--") else None
        if key in known:
            values[key] = next(args, "")
        elif arg.startswith("--"):
            raise ClassroomError(f"unknown option {arg}", reason="usage")
        else:
            rest.append(arg)
    return rest, values


USAGE = ("usage: python -m course_lib.tooling.classroom serve ROSTER [--port 8000] [--idle-minutes 60] "
         "[--instructor instructor] [--state DIR] | progress ROSTER | install | remove-users ROSTER [NAME ...]")


def main(argv: list[str]) -> int:
    from course_lib.tooling.classroom_hub import passwords, prepare, supervise
    from course_lib.tooling.classroom_install import install

    try:
        command, rest = (argv[0], argv[1:]) if argv else ("", [])
        if command == "install":
            install()
            return 0
        if command == "progress" and len(rest) == 1:
            print(class_progress(read_roster(rest[0])).text())
            return 0
        if command == "remove-users" and rest:
            require_platform()
            for name in [*read_roster(rest[0]), *rest[1:]]:
                remove_user(name)
            return 0
        if command == "serve":
            rest, opts = _options(rest, {"port": "8000", "idle_minutes": "60", "instructor": "instructor",
                                         "state": str(STATE), "hub_port": "0", "api_port": "0"})
            if len(rest) != 1:
                raise ClassroomError(USAGE, reason="usage")
            argv, state = prepare(Path(rest[0]), Path(opts["state"]), int(opts["port"]), opts["instructor"],
                                  float(opts["idle_minutes"]), int(opts["hub_port"]), int(opts["api_port"]))
            secret = passwords(state)
            print(f"The class signs in at http://127.0.0.1:{opts['port']}/hub/login (loopback only: put a TLS "
                  f"proxy in front of it to reach other machines)\n"
                  f"  students: their roster name and the workshop password {secret['user_password']}\n"
                  f"  {opts['instructor']} (admin): the admin password in {state / 'passwords.json'}\n"
                  f"  the class's progress: http://127.0.0.1:{opts['port']}/hub/progress "
                  f"(or make classroom-progress)\nCtrl-C stops the hub and every student's server.", flush=True)
            return supervise(argv, state, [*read_roster(rest[0]), opts["instructor"]])
        raise ClassroomError(USAGE, reason="usage")
    except ClassroomError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    # the imported module's main: the errors classroom_hub and classroom_install raise are its classes
    from course_lib.tooling import classroom

    sys.exit(classroom.main(sys.argv[1:]))
