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
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SETTINGS = Path(__file__).with_name("lab_settings")
FIRST = "00_orientation.ipynb"


# jupyter_server's default ping timeout (ms, three of its 30 s intervals), now the interval too
PING = {"ws_ping_interval": 90000, "ws_ping_timeout": 90000}


def options(first: str = FIRST) -> list[str]:
    """JupyterLab's options for the course: its settings defaults, and the chapter it opens."""
    return [f"--LabApp.app_settings_dir={SETTINGS}", f"--LabApp.default_url=/lab/tree/{first}",
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


def main(argv: list[str]) -> None:
    if not argv or not Path(argv[0]).is_dir():
        sys.exit("usage: python -m course_lib.tooling.lab FOLDER [JUPYTER OPTION ...]")
    folder, rest = argv[0], argv[1:]
    trust(Path(folder))
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}", *options(), *rest]
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
