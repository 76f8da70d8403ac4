"""Which process mechanisms this machine may use.

The course runs on Linux and macOS. A few mechanisms exist on Linux only (``/proc``, abstract
Unix socket names, ``prctl``); each has a portable fallback built on the standard library or
``psutil``. ``COURSE_PORTABLE=1`` switches every Linux-only path off, so a Linux machine runs
exactly what a Mac runs (the test suite uses it to show the chapters do not depend on them).
"""
from __future__ import annotations

import os
import sys


def linux_extras() -> bool:
    """True when Linux-only mechanisms may be used: on Linux, unless ``COURSE_PORTABLE=1``."""
    return sys.platform.startswith("linux") and os.environ.get("COURSE_PORTABLE", "") != "1"


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid still runs (a zombie awaiting its reaper counts as gone)."""
    if pid is None:
        return False
    if linux_extras():
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
        except OSError:
            return True
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True
