"""pytest plugin of the course (loaded from pyproject's addopts).

* points nbval at the course's single sanitizer file, wherever pytest is started from;
* fails the run if any course server process (or fork server) is still alive at the end (leak check).
"""
from __future__ import annotations

import os
import secrets
import sys
import time

from course_lib._runtime import startup as _startup
from course_lib.paths import ROOT

_startup.defer()  # this plugin loads before nbval imports nbformat (and jsonschema)

SANITIZER = ROOT / "tests" / "nbval_sanitize.cfg"
RUN_VAR = "COURSE_LAB_RUN"


def pytest_configure(config):
    if getattr(config.option, "nbval_sanitize_with", None) is None:
        config.option.nbval_sanitize_with = str(SANITIZER)
    # Every server started in this run (from tests or notebook kernels) inherits this tag.
    os.environ.setdefault(RUN_VAR, secrets.token_hex(8))


def surviving_servers(tag: str | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of live lab servers (and their children) started in this run."""
    tag = tag or os.environ.get(RUN_VAR)
    needle = f"{RUN_VAR}={tag}".encode()
    marker = b"COURSE_LAB_SERVER=1"  # set by connect() in every server's environment
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            if needle not in environ or marker not in environ:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state == b"Z":
            continue
        found.append((int(entry), cmd))
    return found


def pytest_sessionfinish(session, exitstatus):
    forkserver = sys.modules.get("course_lib._runtime.fastlaunch")
    if forkserver is not None:
        forkserver.shutdown()  # this process's fork server is a lab server process too
    if hasattr(session.config, "workerinput") or not os.path.isdir("/proc"):
        return  # xdist workers: the controller checks once, after every worker has finished
    deadline = time.monotonic() + 3.0  # kernels shut down asynchronously at the very end
    leaked = surviving_servers()
    while leaked and time.monotonic() < deadline:
        time.sleep(0.1)
        leaked = surviving_servers()
    if leaked:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"  pid {pid}: {cmd}" for pid, cmd in leaked]
        if reporter:
            reporter.write_line("LEAK CHECK FAILED: course server processes outlived the run:", red=True)
            for line in lines:
                reporter.write_line(line)
        session.exitstatus = 1
