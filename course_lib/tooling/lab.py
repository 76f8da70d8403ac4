"""How ``make lab`` and ``make instructor`` start JupyterLab: at chapter 00, with no news pop-up.

``python -m course_lib.tooling.lab FOLDER [JUPYTER OPTION ...]`` serves FOLDER and opens its
first chapter. The course's defaults for JupyterLab's settings are the ``overrides.json`` in
``lab_settings/`` beside this file, given as the application settings directory on the command
line (JupyterLab reads ``overrides.json`` there): the news feed and the update check are off, so
nothing asks a student whether to fetch news. A student's own settings still win over these.

Two more things keep a student's terminal free of warnings that would mean nothing to them:
the course's notebooks are trusted before JupyterLab opens them (their outputs were made by
the course's own cells; ``jupyter trust`` does the same), so JupyterLab does not log "is not
trusted" for each chapter; and the websocket ping interval is given equal to jupyter_server's
default ping timeout (90 s), so the web server has no longer timeout to clamp and warn about, and
a busy laptop's browser keeps 90 s to answer a ping (the clamp would leave it 30 s).

The instructor view (``make instructor``, FOLDER ``notebooks``) never writes the course: the
committed chapters are never served in place. Each start copies them afresh into a scratch folder
outside the repository (:func:`instructor_copy`), and JupyterLab serves that copy with a workspace
folder and settings of its own (autosave off): a demo run in class, a click, even a save, change
only the scratch copy, and the instructor's tabs never mix with a student session's (the default
workspace is shared by every JupyterLab of a user).
"""
from __future__ import annotations

import getpass
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from course_lib.paths import NOTEBOOKS, ROOT

SETTINGS = Path(__file__).with_name("lab_settings")
FIRST = "00_orientation.ipynb"


# jupyter_server's default ping timeout (ms, three of its 30 s intervals), now the interval too
PING = {"ws_ping_interval": 90000, "ws_ping_timeout": 90000}


def options(first: str = FIRST, settings: Path = SETTINGS) -> list[str]:
    """JupyterLab's options for the course: its settings defaults, and the chapter it opens."""
    return [f"--LabApp.app_settings_dir={settings}", f"--LabApp.default_url=/lab/tree/{first}",
            *server_options()]


def server_options() -> list[str]:
    """The options every JupyterLab of the course gets (the browser check's too)."""
    return [f"--ServerApp.tornado_settings={json.dumps(PING)}"]


def trust(folder: Path, data_dir: Path | None = None) -> int:
    """Sign every notebook under ``folder`` as trusted (in ``data_dir``'s signature database,
    by default the user's, as ``jupyter trust`` does); return how many were signed."""
    import nbformat
    from nbformat.sign import NotebookNotary

    if data_dir is not None:
        Path(data_dir).mkdir(parents=True, exist_ok=True)
    notary = NotebookNotary(data_dir=str(data_dir)) if data_dir else NotebookNotary()
    signed = 0
    for path in sorted(Path(folder).rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        nb = nbformat.read(path, as_version=4)
        if not notary.check_signature(nb):
            notary.sign(nb)
            signed += 1
    return signed


# Autosave off in the instructor view (a save there only writes the scratch copy anyway).
AUTOSAVE_OFF = {"@jupyterlab/docmanager-extension:plugin": {"autosave": False}}


def scratch_home(course_root: Path = ROOT) -> Path:
    """The instructor view's scratch folder: outside the repository, one per user and checkout
    (``COURSE_INSTRUCTOR_HOME`` names another)."""
    import hashlib

    if os.environ.get("COURSE_INSTRUCTOR_HOME"):
        return Path(os.environ["COURSE_INSTRUCTOR_HOME"])
    tag = hashlib.sha256(str(course_root.resolve()).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"mcp-course-instructor-{getpass.getuser()}-{tag}"


def instructor_copy(source: Path = NOTEBOOKS, home: Path | None = None) -> tuple[Path, list[str]]:
    """Copy ``source`` afresh into the scratch folder; return the copy and its JupyterLab options.

    The copy replaces the last one (a scratch copy keeps nothing between starts); the options give
    JupyterLab a workspace folder and application settings of the instructor view's own."""
    home = Path(home or scratch_home())
    copy = home / "notebooks"
    if copy.exists():
        shutil.rmtree(copy)
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__",
                                                                 ".progress.json"))
    settings = home / "app-settings"
    settings.mkdir(exist_ok=True)
    overrides = json.loads((SETTINGS / "overrides.json").read_text(encoding="utf-8"))
    (settings / "overrides.json").write_text(json.dumps({**overrides, **AUTOSAVE_OFF}, indent=2))
    workspaces = home / "workspaces"
    workspaces.mkdir(exist_ok=True)
    return copy, [*options(settings=settings), f"--LabApp.workspaces_dir={workspaces}"]


def lab_argv(folder: Path, rest: list[str]) -> list[str]:
    """The JupyterLab command line for FOLDER: the instructor view when FOLDER is notebooks/."""
    own = options()
    if folder.resolve() == NOTEBOOKS.resolve():
        folder, own = instructor_copy()
        print(f"instructor view: a scratch copy of notebooks/ in {folder} (nothing here writes the course)",
              flush=True)
    trust(folder)
    return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}", *own, *rest]


def main(argv: list[str]) -> None:
    if not argv or not Path(argv[0]).is_dir():
        sys.exit("usage: python -m course_lib.tooling.lab FOLDER [JUPYTER OPTION ...]")
    argv = lab_argv(Path(argv[0]), argv[1:])
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
