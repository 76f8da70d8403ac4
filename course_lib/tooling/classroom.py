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

This module is the command line; the roster, the class's progress, the students' accounts and
copies are :mod:`course_lib.tooling.classroom_accounts`, the hub (its configuration, start and stop) is :mod:`course_lib.tooling.classroom_hub`,
the building of ``.venv-classroom`` :mod:`course_lib.tooling.classroom_install`.

The classroom needs a Linux machine and root (it makes system users); elsewhere it stops with
:class:`ClassroomUnsupported` before doing anything. A laptop runs ``make lab``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from course_lib.tooling.classroom_accounts import (COPY, STATE, ClassroomError, ClassroomUnsupported,  # noqa: F401
                                                   class_progress, home_of, parse_roster, read_roster,
                                                   remove_user, require_platform)
from course_lib.tooling.classroom_hub import passwords, prepare, supervise
from course_lib.tooling.classroom_install import install


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
    sys.exit(main(sys.argv[1:]))
