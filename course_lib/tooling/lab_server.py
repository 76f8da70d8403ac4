"""A throwaway JupyterLab server for the browser check: 127.0.0.1, a random token, its own settings."""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.lab import server_options, trust

# No news toasts; every cell kept in the page (the check reads and clicks cells by index).
# Comms over kernel subshells stay at JupyterLab's default (one subshell per comm target), as a
# student has them: the widgets must answer clicks that reach the kernel on a subshell.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                          "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """A JupyterLab server on 127.0.0.1 with a random token, in its own process group."""

    def __init__(self, root_dir: Path, workdir: Path, run_tag: str, course_root: Path = ROOT,
                 launcher: list[str] | None = None, home: Path | None = None):
        """``launcher``: the course's own command instead (``python -m course_lib.tooling.lab
        FOLDER``, as ``make lab`` and ``make instructor`` run it), given only the address, the
        token and the page hooks, so its own workspace and settings folders are the ones tested;
        ``home``: the Jupyter folders (config, data, runtime), shared by two servers that stand
        for one user's two sessions (by default ``workdir``'s)."""
        self.root_dir, self.workdir = root_dir, workdir
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        home = home or workdir
        workdir.mkdir(parents=True, exist_ok=True)
        # the launcher's JupyterLab reads user settings where Jupyter keeps them by default
        settings = home / "config" / "lab" / "user-settings" if launcher else workdir / "user-settings"
        for name, value in SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
        env.update(PYTHONPATH=str(course_root), JUPYTER_CONFIG_DIR=str(home / "config"),
                   JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   COURSE_LAB_RUN=run_tag)
        where = [f"--ServerApp.root_dir={root_dir}", f"--LabApp.user_settings_dir={settings}",
                 f"--LabApp.workspaces_dir={workdir / 'workspaces'}", *server_options()]
        argv = [*(launcher or [sys.executable, "-m", "jupyterlab", *where]), "--no-browser", "--ip=127.0.0.1",
                f"--port={self.port}", f"--IdentityProvider.token={self.token}",
                "--LabApp.expose_app_in_browser=True"]  # the check waits on the application's own signals
        if not launcher:
            trust(root_dir, home / "data")  # as make lab does: no "is not trusted" warning
        if os.geteuid() == 0:
            argv.append("--allow-root")
        self.log = open(workdir / "jupyterlab.log", "wb")
        self.proc = subprocess.Popen(argv, env=env, cwd=root_dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def api(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}; see {self.log.name}")
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"JupyterLab did not answer within {timeout:g} s")

    def shutdown_kernels(self) -> None:
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def log_problems(self) -> list[str]:
        """The warnings and errors JupyterLab logged (``[W …]``, ``[E …]``): a student's terminal
        shows the same lines, so the check fails on any."""
        if not self.log.closed:
            self.log.flush()
        text = (self.workdir / "jupyterlab.log").read_text(errors="replace")
        return [line.strip() for line in text.splitlines() if line.startswith(("[W ", "[E "))]

    def stop(self) -> list[str]:
        """Stop every kernel and the server; return what was left behind (should be nothing)."""
        left = []
        try:
            self.shutdown_kernels()
            kernels = self.api("GET", "/api/kernels")
            left += [f"kernel {k['id']} still listed" for k in kernels]
            self.api("POST", "/api/shutdown")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            left.append("JupyterLab did not exit after /api/shutdown")
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        try:
            os.killpg(self.proc.pid, 0)
            left.append("processes left in JupyterLab's process group")
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()
        return left
