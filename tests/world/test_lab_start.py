"""``make lab`` opens chapter 00 and JupyterLab never asks about its news feed.

A real JupyterLab server is started with the options ``make lab`` gives it
(``course_lib.tooling.lab.options()``), in a throwaway Jupyter home with no user settings: its
settings API must serve the course's defaults (news and update checks off), and its front page
must lead to chapter 00.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from course_lib.paths import NOTEBOOKS
from course_lib.tooling import lab

NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(NOTEBOOKS / lab.FIRST, root / lab.FIRST)
    port, token = _free_port(), "course-test"
    home = {name: str(tmp_path / name) for name in ("config", "data", "runtime", "user-settings")}
    env = dict(os.environ, JUPYTER_CONFIG_DIR=home["config"], JUPYTER_DATA_DIR=home["data"],
               JUPYTER_RUNTIME_DIR=home["runtime"], JUPYTER_PLATFORM_DIRS="1")
    argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={home['user-settings']}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}", *lab.options()]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = open(tmp_path / "lab.log", "wb")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5).close()
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, (tmp_path / "lab.log").read_text(errors="replace")[-2000:]
                assert time.monotonic() < deadline, "JupyterLab did not answer within 90 s"
                time.sleep(0.3)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_jupyterlab_serves_the_course_defaults_and_opens_chapter_00(server):
    base, token = server
    with urllib.request.urlopen(f"{base}/lab/api/settings/{NOTIFICATION}?token={token}", timeout=30) as r:
        answer = json.load(r)
    properties = answer["schema"]["properties"]
    # JupyterLab applies overrides.json to the schema's defaults; the user has set nothing.
    assert properties["fetchNews"]["default"] == "false"
    assert properties["checkForUpdates"]["default"] is False
    assert answer["settings"] == {}
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(f"{base}/?token={token}", timeout=30)
    assert redirect.value.code == 302
    assert redirect.value.headers["Location"].split("?")[0].endswith(f"/lab/tree/{lab.FIRST}")
