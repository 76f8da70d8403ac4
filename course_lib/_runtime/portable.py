"""Whether a process is alive, the same way on Linux and macOS.

The course runs on a student's laptop as well as on Linux. Nothing in ``course_lib`` uses a
Linux-only mechanism (``/proc``, abstract Unix socket names, ``prctl``, pidfds, ``SO_PEERCRED``):
process liveness and trees go through ``psutil``, the fast launcher through POSIX calls only.
``tests/stdio/test_portable.py`` holds the package to that (a scan of its source), and runs two
chapters with the temporary directory behind a symlink, as macOS has it.
"""
from __future__ import annotations

import psutil


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid still runs (a zombie awaiting its reaper counts as gone)."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # gone (psutil's ZombieProcess is one too)
        return False
    except psutil.AccessDenied:  # exists, but its state is not ours to read
        return True
