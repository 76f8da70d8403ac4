"""pytest plugin of the course (loaded from pyproject's addopts).

* points nbval at the course's single sanitizer file, wherever pytest is started from;
* fails the run if any course server process (or fork server) is still alive at the end (leak check);
* marks every test with its layer, from the directory its file sits in (``course_lib.tooling.layers``):
  ``inprocess``, ``stdio``, ``world`` or ``notebook``, so ``pytest -m inprocess`` (``make check``)
  runs the fast layer; fails an ``inprocess`` test that starts a process, and a test file outside
  the layer directories.
"""
from __future__ import annotations

import os
import secrets
import sys
import time

import pytest

from course_lib._runtime import startup as _startup
from course_lib.paths import ROOT
from course_lib.tooling import layers as _layers

_startup.defer()  # this plugin loads before nbval imports nbformat (and jsonschema)

SANITIZER = ROOT / "tests" / "nbval_sanitize.cfg"
RUN_VAR = "COURSE_LAB_RUN"


def pytest_configure(config):
    for name, meaning in _layers.LAYERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning} (given by the course's plugin)")
    config.addinivalue_line("markers", f"{_layers.MISPLACED}: a test file outside the layer directories")
    if getattr(config.option, "nbval_sanitize_with", None) is None:
        config.option.nbval_sanitize_with = str(SANITIZER)
    # Every server started in this run (from tests or notebook kernels) inherits this tag.
    os.environ.setdefault(RUN_VAR, secrets.token_hex(8))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these markers
def pytest_collection_modifyitems(config, items):
    _layers.mark(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    _layers.watch(item, item.config.rootpath)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    finally:
        _layers.judge(item)


def surviving_servers(tag: str | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of live lab servers (and their children) started in this run."""
    import psutil

    tag = tag or os.environ.get(RUN_VAR)
    if not tag:
        return []
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["status", "environ", "cmdline"]):
        environ = proc.info["environ"] or {}
        # COURSE_LAB_SERVER=1 is set by connect() in every server's environment
        if (proc.pid != me and environ.get(RUN_VAR) == tag and environ.get("COURSE_LAB_SERVER") == "1"
                and proc.info["status"] not in (None, psutil.STATUS_ZOMBIE)):
            found.append((proc.pid, " ".join(proc.info["cmdline"] or ())))
    return found


def pytest_sessionfinish(session, exitstatus):
    forkserver = sys.modules.get("course_lib._runtime.fastlaunch")
    if forkserver is not None:
        forkserver.shutdown()  # this process's fork server is a lab server process too
    if hasattr(session.config, "workerinput"):
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
