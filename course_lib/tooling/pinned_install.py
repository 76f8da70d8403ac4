"""The set-up's one installer: pinned packages go into a virtual environment through uv (pinned
itself, in ``pyproject.toml`` and ``.ci/constraints.txt``), run by the course's own interpreter.

``uv_install(python, *args)`` installs into the environment of the interpreter ``python``, named
explicitly, so uv never picks another one (an activated venv, a conda base, the first ``python3``
on the PATH). Every module is compiled to bytecode at install time, as pip does by default: the
Makefile exports ``PYTHONDONTWRITEBYTECODE``, so a module left uncompiled would be compiled again
in every process that imports it. The Makefile's own install of ``.venv`` runs the same command.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from course_lib.errors import CourseError

UV_FLAGS = ("--quiet", "--compile-bytecode")


def uv_argv(python: str | os.PathLike, *args: str) -> list[str]:
    """The command that installs ``args`` (``-r LOCK``, ``-c LOCK -e PATH``...) into ``python``'s environment."""
    return [sys.executable, "-m", "uv", "pip", "install", *UV_FLAGS, "--python", str(python), *args]


def uv_install(python: str | os.PathLike, *args: str, env: dict[str, str] | None = None) -> None:
    """Install ``args`` into ``python``'s environment with the pinned uv of this interpreter."""
    if importlib.util.find_spec("uv") is None:
        raise CourseError(f"{Path(sys.executable)} has no uv, the course's installer: install the "
                          "course's pins first (`make lab`, or pip install -c .ci/constraints.txt uv)")
    subprocess.run(uv_argv(python, *args), check=True, env=env)
