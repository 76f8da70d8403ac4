"""The class's JupyterHub: its configuration, its start and its stop (``make classroom``).

:func:`prepare` checks the set-up, makes the users and writes the hub's configuration into STATE
(the hub reads it through :func:`configure`: passwords, the students' lab servers, ``/hub/progress``);
:func:`supervise` runs the hub until it stops, then :func:`sweep` stops whatever it left. The roster,
the accounts and the command line are :mod:`course_lib.tooling.classroom`'s; the students'
interpreter is :mod:`course_lib.tooling.classroom_install`'s.
"""
from __future__ import annotations

import html
import json
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.classroom_accounts import (COPY, FIRST, GECOS, NAME, ClassroomError, class_progress, ensure_user,
                                          prepare_copy, read_roster, require_platform)
from course_lib.tooling.classroom_install import VENV, readable_by_all, student_environment


def singleuser() -> Path:
    command = VENV / "bin" / "jupyterhub-singleuser"
    if not command.exists():
        raise ClassroomError(f"{command.relative_to(ROOT)} is missing: python -m course_lib.tooling.classroom "
                             "install (make classroom runs it)", reason="not_installed")
    if not (readable_by_all(command) and readable_by_all(VENV / "bin" / "python")
            and readable_by_all(ROOT / "course_lib" / "__init__.py", run=False)):
        raise ClassroomError(f"the students cannot run {command} or read the course: every folder above "
                             f"{ROOT} must be searchable by others (chmod o+x)", reason="not_readable")
    return command


def proxy_command() -> list[str]:
    from course_lib.chapters import peers_env

    script = peers_env.CLASSROOM_DIR / "node_modules" / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
    if not script.exists():
        raise ClassroomError("JupyterHub's proxy is not installed: python -m course_lib.chapters.peers_lab install "
                             "(the set-up of make lab runs it)", reason="not_installed")
    return [peers_env.node(), str(script)]



# -- the hub ------------------------------------------------------------------------------------------

def passwords(state: Path) -> dict[str, str]:
    """The workshop password and the admin password, made once and kept in STATE (mode 600)."""
    path = state / "passwords.json"
    if path.exists():
        kept = json.loads(path.read_text())
    else:
        kept = {"user_password": secrets.token_urlsafe(9), "admin_password": secrets.token_urlsafe(33)}
    if os.environ.get("CLASS_PASSWORD"):
        kept["user_password"] = os.environ["CLASS_PASSWORD"]
    if len(kept["user_password"]) < 8:
        raise ClassroomError("the workshop password needs at least 8 characters", reason="bad_password")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(kept, out)
    os.chmod(path, 0o600)
    return kept


def settings(roster: Path, state: Path, port: int, instructor: str, idle_minutes: float,
             hub_port: int = 0, api_port: int = 0) -> dict:
    """What the hub's configuration reads (written to STATE/classroom.json by ``serve``)."""
    return {"roster": str(Path(roster).resolve()), "state": str(state), "port": port,
            "hub_port": hub_port or port + 81, "api_port": api_port or port + 1,
            "instructor": instructor, "idle_seconds": int(idle_minutes * 60)}


def spawner_args(idle_seconds: int) -> list[str]:
    """The students' lab servers: the course's JupyterLab settings, and they stop when idle."""
    from course_lib.tooling.lab import SETTINGS, server_options

    return [f"--LabApp.app_settings_dir={SETTINGS}",
            f"--ServerApp.shutdown_no_activity_timeout={idle_seconds}",
            f"--MappingKernelManager.cull_idle_timeout={idle_seconds}",
            f"--MappingKernelManager.cull_interval={max(10, min(300, idle_seconds // 4))}",
            "--MappingKernelManager.cull_connected=True",
            "--LabApp.expose_app_in_browser=True",  # the class check waits on the application's signals
            *server_options()]


def configure(c, classroom: dict) -> None:
    """Fill JupyterHub's configuration ``c`` for the class ``classroom`` (see :func:`settings`)."""
    state = Path(classroom["state"])
    students = read_roster(classroom["roster"])
    secret = passwords(state)
    c.JupyterHub.ip = "127.0.0.1"
    c.JupyterHub.port = classroom["port"]
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = classroom["hub_port"]
    c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(state / "cookie_secret")
    c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = True  # the hub's stop stops every student's server
    c.JupyterHub.cleanup_proxy = True
    c.ConfigurableHTTPProxy.command = proxy_command()
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{classroom['api_port']}"
    c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = secret["user_password"]
    c.SharedPasswordAuthenticator.admin_password = secret["admin_password"]
    c.Authenticator.allowed_users = set(students)
    c.Authenticator.admin_users = {classroom["instructor"]}
    c.Spawner.cmd = [str(singleuser())]
    c.Spawner.ip = "127.0.0.1"
    c.Spawner.notebook_dir = f"~/{COPY}"
    c.Spawner.default_url = f"/lab/tree/{FIRST}"
    c.Spawner.args = spawner_args(classroom["idle_seconds"])
    c.Spawner.environment = student_environment()
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 90
    c.Spawner.pre_spawn_hook = lambda spawner: prepare_copy(spawner.user.name)
    c.JupyterHub.extra_handlers = [(r"/progress", progress_handler(students))]
    bench = os.environ.get("CLASSROOM_BENCH_TOKEN")
    if bench:  # the capacity bench (classroom_bench) starts and drives the students' servers
        c.JupyterHub.services = [{"name": "capacity-bench", "api_token": bench}]
        c.JupyterHub.load_roles = [{"name": "capacity-bench", "services": ["capacity-bench"],
                                    "scopes": ["read:users", "admin:servers", "access:servers"]}]


def progress_handler(students: list[str]):
    """``/hub/progress``: the class's progress table, for the hub's admins only (made in the hub,
    which alone imports jupyterhub)."""
    from jupyterhub.handlers import BaseHandler
    from tornado import web

    class ProgressHandler(BaseHandler):
        @web.authenticated
        def get(self):
            if not self.current_user.admin:
                raise web.HTTPError(403, "the class's progress is for the instructor")
            table = class_progress(students)
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish("<!doctype html><title>Class progress</title><h1>Class progress</h1>"
                        f"{table._repr_html_()}<pre hidden>{html.escape(table.text())}</pre>")

    return ProgressHandler


CONFIG = """# Written by python -m course_lib.tooling.classroom serve: the hub reads the class from {settings!r}.
import json
from course_lib.tooling import classroom_hub

classroom_hub.configure(c, json.load(open({settings!r})))
"""


def prepare(roster: Path, state: Path, port: int, instructor: str, idle_minutes: float,
            hub_port: int = 0, api_port: int = 0) -> tuple[list[str], Path]:
    """Everything before the hub starts: checks, users, passwords, configuration; returns the
    hub's command line and the folder it runs in."""
    require_platform()
    students = read_roster(roster)
    if instructor in students:
        raise ClassroomError(f"the instructor {instructor!r} is also on the roster", reason="bad_roster")
    if not NAME.fullmatch(instructor):
        raise ClassroomError(f"{instructor!r} is not a user name the classroom can make", reason="bad_roster")
    singleuser()
    proxy_command()
    state = Path(state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    for name in [*students, instructor]:
        ensure_user(name)
    path = state / "classroom.json"
    path.write_text(json.dumps(settings(roster, state, port, instructor, idle_minutes, hub_port, api_port)))
    config = state / "jupyterhub_config.py"
    config.write_text(CONFIG.format(settings=str(path)))
    return [sys.executable, "-m", "jupyterhub", "-f", str(config)], state


def stop_hub(proc, grace: float) -> None:
    """Stop a hub started with ``subprocess.Popen(..., start_new_session=True)``: SIGTERM (its own stop,
    which stops the class's servers), then after ``grace`` seconds SIGKILL to its whole group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def sweep(state: Path, names: list[str]) -> list[str]:
    """After the hub: stop what it may have left (it stops its proxy and the students' servers on a
    normal stop, not when stopped while starting): the proxy of its pid file, then every process of
    the class's users. Returns what was stopped."""
    import psutil

    stopped: list[str] = []
    found: list = []
    try:
        proxy = psutil.Process(int((state / "proxy.pid").read_text().strip()))
        if "configurable-http-proxy" in " ".join(proxy.cmdline()):
            found.append(proxy)
    except (OSError, ValueError, psutil.Error):
        pass
    uids = set()
    for name in names:
        try:
            uids.add(_ours(name))
        except (ClassroomError, KeyError):
            pass
    found += [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
    for process in found:
        try:
            stopped.append(f"{process.pid} {' '.join(process.cmdline())[:80]}")
            process.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(found, timeout=10)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass
    (state / "proxy.pid").unlink(missing_ok=True)
    return stopped


def _ours(name: str) -> int:
    """The uid of a user the classroom made (its comment says so)."""
    import pwd

    entry = pwd.getpwnam(name)
    if entry.pw_gecos != GECOS:
        raise ClassroomError(f"{name!r} was not made by the classroom", reason="not_ours")
    return entry.pw_uid


def supervise(argv: list[str], state: Path, names: list[str], grace: float = 20.0) -> int:
    """Run the hub until it stops, then :func:`sweep`: nothing of the class outlives the command.

    Ctrl-C reaches the hub directly (the terminal signals the whole group); SIGTERM and SIGHUP are
    passed on. A hub still starting may miss them, so they are passed on again every ``grace``
    seconds, and after three times the hub is killed (the sweep then stops what it left)."""
    import time

    hub = subprocess.Popen(argv, cwd=state)
    asked: list[float] = []

    def stop(signum, _frame):
        asked.append(time.monotonic())
        hub.send_signal(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, lambda signum, frame: asked.append(time.monotonic()))
    try:
        while hub.poll() is None:
            time.sleep(0.5)
            if asked and time.monotonic() - asked[-1] > grace:
                if len(asked) >= 3:
                    hub.kill()
                else:
                    stop(signal.SIGTERM, None)
        status = hub.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        left = sweep(state, names)
    for line in left:
        print(f"stopped what the hub left: {line}", file=sys.stderr)
    return status

