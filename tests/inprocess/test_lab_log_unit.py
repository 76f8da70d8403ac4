"""What a student's terminal shows during ``make lab``: no warning JupyterLab would log for the course.

The browser check (run by ``make test``) fails on any ``[W …]`` or ``[E …]`` line in its
JupyterLab's log; these tests hold the two pieces that keep that log clean, and the reading of
the log itself, without a browser."""
import json
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from course_lib.paths import NOTEBOOKS
from course_lib.tooling import lab
from course_lib.tooling.lab_server import JupyterLab


def test_the_course_notebooks_are_signed_trusted_in_the_given_database(tmp_path):
    folder, data = tmp_path / "course", tmp_path / "data"
    folder.mkdir()
    data.mkdir()
    for name in ("00_orientation.ipynb", "01_pagination.ipynb"):
        (folder / name).write_bytes((NOTEBOOKS / name).read_bytes())
    notary = NotebookNotary(data_dir=str(data))
    assert not notary.check_signature(nbformat.read(folder / "00_orientation.ipynb", as_version=4))
    assert lab.trust(folder, data) == 2
    assert all(notary.check_signature(nbformat.read(p, as_version=4)) for p in folder.glob("*.ipynb"))
    assert lab.trust(folder, data) == 0, "a second run finds them trusted"


def test_the_ping_interval_given_is_the_timeout_so_the_web_server_has_nothing_to_clamp():
    (option,) = [o for o in lab.options() if o.startswith("--ServerApp.tornado_settings=")]
    settings = json.loads(option.split("=", 1)[1])
    from jupyter_server.base.websocket import WS_PING_INTERVAL
    assert settings["ws_ping_interval"] == settings["ws_ping_timeout"] == 3 * WS_PING_INTERVAL
    assert option in lab.server_options()


def test_warnings_and_errors_in_the_log_are_reported_and_nothing_else(tmp_path):
    log = tmp_path / "jupyterlab.log"
    log.write_text("[I 2026 ServerApp] Serving notebooks\n"
                   "[W 2026 ServerApp] Notebook notebooks/00_orientation.ipynb is not trusted\n"
                   "[C 2026 ServerApp] \n    To access the server, open this file\n"
                   "[E 2026 ServerApp] Uncaught exception GET /api/kernels\n")
    fake = JupyterLab.__new__(JupyterLab)
    fake.workdir, fake.log = tmp_path, open(tmp_path / "other.log", "wb")
    try:
        assert fake.log_problems() == ["[W 2026 ServerApp] Notebook notebooks/00_orientation.ipynb is not trusted",
                                       "[E 2026 ServerApp] Uncaught exception GET /api/kernels"]
    finally:
        fake.log.close()
