"""How ``make lab`` and ``make instructor`` start JupyterLab: at chapter 00, with no news pop-up.

``python -m course_lib.tooling.lab FOLDER [JUPYTER OPTION ...]`` serves FOLDER and opens its
first chapter. The course's defaults for JupyterLab's settings are the ``overrides.json`` in
``lab_settings/`` beside this file, given as the application settings directory on the command
line (JupyterLab reads ``overrides.json`` there): the news feed and the update check are off, so
nothing asks a student whether to fetch news. A student's own settings still win over these.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

SETTINGS = Path(__file__).with_name("lab_settings")
FIRST = "00_orientation.ipynb"


def options(first: str = FIRST) -> list[str]:
    """JupyterLab's options for the course: its settings defaults, and the chapter it opens."""
    return [f"--LabApp.app_settings_dir={SETTINGS}", f"--LabApp.default_url=/lab/tree/{first}"]


def main(argv: list[str]) -> None:
    if not argv or not Path(argv[0]).is_dir():
        sys.exit("usage: python -m course_lib.tooling.lab FOLDER [JUPYTER OPTION ...]")
    folder, rest = argv[0], argv[1:]
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}", *options(), *rest]
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
