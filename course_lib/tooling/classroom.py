"""A class on one machine: ``make classroom CLASS=roster.txt`` (JupyterHub, each student their own copy).

``python -m course_lib.tooling.classroom serve ROSTER [--port 8000] [--idle-minutes 60] [--state DIR]
[--instructor NAME]`` starts the pinned JupyterHub (``jupyterhub``, the ``classroom`` extra) behind its
pinned proxy (``configurable-http-proxy``, locked in ``fixtures/classroom``, run by the Node.js of the
pinned wheel), on 127.0.0.1 only:

- the roster is one user name a line (``#`` starts a comment); each student signs in with their
  name and the workshop password (JupyterHub's shared-password authenticator), the instructor
  with the admin password; both are made once and kept in ``STATE/passwords.json`` (mode 600) and
  printed at the start (``CLASS_PASSWORD`` chooses the students' one);
- each student is a system user of their own (``useradd``, home mode 700): their copy of the
  course is ``~/course`` (the student copy, written at their first sign-in and never overwritten),
  their lab server and kernels run as them, so one cannot read another's copy or reach another's
  server (the hub admits a user only to their own server); the hub's database and cookie secret
  live in STATE (mode 700), so a restart of the hub keeps every account and every copy;
- an idle lab server stops itself after ``--idle-minutes`` without activity (its idle kernels
  first); stopping the hub (Ctrl-C or SIGTERM) stops every student's server and the proxy, and
  the command then stops whatever a hub stopped while starting left behind (:func:`sweep`);
- the instructor is the hub's admin; ``/hub/progress`` shows the class's progress table to an
  admin, and ``python -m course_lib.tooling.classroom progress ROSTER`` (``make classroom-progress``)
  prints it: each student's best score in every exercise, read from the progress file each
  student's checks write (:mod:`course_lib.progress`).

The student servers run from ``.venv-classroom`` (``python -m course_lib.tooling.classroom
install``), built from an interpreter every user may run: the course's own ``.venv`` may come from
a folder only its owner can read.

The classroom needs a Linux machine and root (it makes system users); elsewhere it stops with
:class:`ClassroomUnsupported` before doing anything. A laptop runs ``make lab``.
"""
from __future__ import annotations

import fcntl
import html
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.paths import ROOT

STATE = ROOT / ".classroom"
VENV = ROOT / ".venv-classroom"
COPY = "course"  # each student's copy: ~/course
FIRST = "00_orientation.ipynb"
NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
GECOS = "MCP course classroom"  # marks the system users the classroom made
RESERVED = {"root", "daemon", "bin", "sys", "nobody", "admin"}


class ClassroomError(CourseError):
    """A roster, a set-up or a state the classroom cannot use."""

    reason = "classroom"


class ClassroomUnsupported(ClassroomError):
    """The classroom needs Linux and root (it makes a system user per student)."""

    reason = "classroom_unsupported"


def require_platform() -> None:
    if not sys.platform.startswith("linux"):
        raise ClassroomUnsupported(f"make classroom serves a class from a Linux machine (system users, useradd); "
                                   f"this is {sys.platform}: each student can run make lab on their laptop")
    if os.geteuid() != 0:
        raise ClassroomUnsupported("make classroom runs as root: it makes a system user for each student "
                                   "(sudo make classroom CLASS=roster.txt)")


# -- the roster ---------------------------------------------------------------------------------

def parse_roster(text: str, where: str = "the roster") -> list[str]:
    """The user names of a roster: one a line, ``#`` comments, blank lines skipped."""
    names: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not NAME.fullmatch(name) or name in RESERVED:
            raise ClassroomError(f"{where}, line {number}: {name!r} is not a user name the classroom can make "
                                 "(lowercase letters, digits, - and _, at most 32, starting with a letter)",
                                 reason="bad_roster")
        if name in names:
            raise ClassroomError(f"{where}, line {number}: {name!r} is listed twice", reason="bad_roster")
        names.append(name)
    if not names:
        raise ClassroomError(f"{where} names no student", reason="bad_roster")
    return names


def read_roster(path: Path | str) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise ClassroomError(f"no roster at {path}: write one user name a line (make classroom CLASS=FILE)",
                             reason="bad_roster")
    return parse_roster(path.read_text(encoding="utf-8"), str(path))


# -- the class's progress -------------------------------------------------------------------------

def home_of(name: str) -> Path:
    import pwd

    try:
        return Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        raise ClassroomError(f"{name!r} has no system user (the classroom makes one at its start)",
                             reason="no_user") from None


def class_progress(students: list[str], copy_of=lambda name: home_of(name) / COPY) -> Table:
    """One row per student: how many exercises they checked, how many at full marks, and their
    best score in every exercise anyone in the class checked (``-``: not checked yet)."""
    from course_lib import progress

    found: dict[str, dict[str, dict]] = {}
    notes = []
    for name in students:
        try:
            found[name] = progress.read(copy_of(name))
        except (progress.ProgressError, ClassroomError) as exc:
            found[name] = {}
            notes.append(f"{name}: {exc}")
    exercises = sorted({key for entries in found.values() for key in entries})
    rows = []
    for name in students:
        entries = found[name]
        full = sum(e["score"] == e["total"] for e in entries.values())
        rows.append([name, len(entries), full,
                     *(f"{entries[k]['score']}/{entries[k]['total']}" if k in entries else "-" for k in exercises)])
    return Table(["student", "checked", "full marks", *exercises], rows, notes=notes)


# -- the student servers' interpreter --------------------------------------------------------------

def readable_by_all(path: Path, run: bool = True) -> bool:
    """Whether any user can read (``run``: run) ``path``: every folder on its real path searchable
    by others, the file itself readable (and executable) by them."""
    real = Path(os.path.realpath(path))
    if not real.exists():
        return False
    need = stat.S_IROTH | (stat.S_IXOTH if run else 0)
    return real.stat().st_mode & need == need and all(parent.stat().st_mode & stat.S_IXOTH
                                                      for parent in real.parents)


def base_interpreter() -> str:
    """A Python 3.11+ every user may run: ``CLASSROOM_PYTHON``, this one's base, or the system's."""
    candidates = [os.environ.get("CLASSROOM_PYTHON"), getattr(sys, "_base_executable", None),
                  "/usr/bin/python3", shutil.which("python3")]
    for candidate in filter(None, candidates):
        if not readable_by_all(Path(candidate)):
            continue
        version = subprocess.run([candidate, "-c", "import sys, venv, ensurepip; print(sys.version_info >= (3, 11))"],
                                 capture_output=True, text=True)
        if version.stdout.strip() == "True":
            return candidate
    raise ClassroomError("no Python 3.11+ that every user may run (with venv): install one "
                         "(apt-get install python3 python3-venv) or name it with CLASSROOM_PYTHON",
                         reason="no_interpreter")


def constraints_for(constraints: Path, version: str, site: Path | None = None) -> tuple[str, list[str]]:
    """The lock ``constraints`` for a Python ``version``: a pin whose release needs a newer Python
    (as the copy installed in ``site``, by default this interpreter's, declares) is left to pip,
    and said so; every other pin is kept."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    found = {d.metadata["Name"].lower().replace("_", "-"): d.metadata.get("Requires-Python")
             for d in (metadata.distributions(path=[str(site)]) if site else metadata.distributions())}
    kept, relaxed = [], []
    for line in constraints.read_text().splitlines():
        name, _, pin = line.partition("==")
        needs = found.get(name.strip().lower().replace("_", "-")) if pin else None
        if needs and version not in SpecifierSet(needs):
            relaxed.append(f"{name} {pin} needs Python {needs}: the students' Python {version} gets "
                           "the newest release that fits")
            continue
        kept.append(line)
    return "\n".join(kept) + "\n", relaxed


# The course's other interpreters, copied for the students: (variable the course reads, folder in
# .venv-classroom, lock, the set-up's own copy).
PEER_VENVS = (("COURSE_SDK129_VENV", "sdk129", ".ci/constraints-sdk129.txt", ".venv-sdk129"),
              ("COURSE_SERVERS_VENV", "servers", ".ci/constraints-servers.txt", ".venv-servers"))


def _site(venv: Path) -> Path | None:
    return next(iter(sorted(venv.glob("lib/python3*/site-packages"))), None)


def _pip(python: Path, constraints: Path, version: str, site: Path | None, *args: str) -> None:
    text, relaxed = constraints_for(constraints, version, site)
    for line in relaxed:
        print(f"classroom: {line}", flush=True)
    local = python.parent.parent / f"constraints-{constraints.stem}.txt"
    local.write_text(text)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
                    *args, str(local)], check=True)


def _same_python(venv: Path, version: str) -> bool:
    """Whether the set-up's ``venv`` runs the students' Python ``version`` (major.minor: one ABI)."""
    cfg = venv / "pyvenv.cfg"
    found = re.search(r"^version(?:_info)?\s*=\s*(\d+\.\d+)", cfg.read_text(), re.M) if cfg.exists() else None
    return bool(found) and version.startswith(found.group(1) + ".")


def copy_venv(ours: Path, theirs: Path) -> None:
    """Copy the packages of the set-up's venv ``ours`` into ``theirs`` (a venv of the students'
    interpreter, the same Python minor version): its libraries and data files (hard links where
    the file system allows), and its commands with their interpreter line pointing at ``theirs``."""
    def link_or_copy(source, target):
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)

    for part in ("lib", "share", "etc", "include"):
        shutil.rmtree(theirs / part, ignore_errors=True)  # an earlier copy: its files may be ours' own
        if (ours / part).is_dir():
            shutil.copytree(ours / part, theirs / part, symlinks=True, dirs_exist_ok=True,
                            copy_function=link_or_copy)
    for command in (ours / "bin").iterdir():
        target = theirs / "bin" / command.name
        if command.is_symlink() or command.name.startswith(("python", "activate", "Activate")):
            continue
        data = command.read_bytes()
        if data.startswith(b"#!"):  # the interpreter line, and the long-path form of it (pip's sh trampoline)
            data = data.replace(str(ours).encode() + b"/bin/python", str(theirs).encode() + b"/bin/python")
        target.unlink(missing_ok=True)
        target.write_bytes(data)
        os.chmod(target, command.stat().st_mode & 0o777)


def install(wait: float | None = None) -> None:
    """Build ``.venv-classroom`` from an interpreter every student may run: the course's pins and
    JupyterHub's single-user server, and copies of the SDK 1.29.0 and chapter 07 interpreters in
    it (``PEER_VENVS``): the set-up's own packages copied when that interpreter has the set-up's
    Python version (:func:`copy_venv`), else installed by pip from the same pins; idempotent, and
    nothing is done again while the pins are unchanged. One
    install at a time: a second caller (the classroom's test while CI installs beside the suite)
    waits for the first (at most ``wait`` seconds, when given), then finds it done."""
    require_platform()
    with open(ROOT / ".venv-classroom.lock", "w") as lock:
        take_lock(lock, wait)  # released when the file closes
        _install()


def take_lock(lock, wait: float | None) -> None:
    """An exclusive lock on the open file ``lock``; waits at most ``wait`` seconds (None: as long
    as it takes), then ``ClassroomError`` with reason ``install_busy``."""
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ClassroomError(f"another classroom install still runs after {wait:g} s: wait for it, or "
                                     f"stop it and run make classroom-install again", reason="install_busy") from None
            time.sleep(min(1.0, wait))


def _install() -> None:
    python, stamp = VENV / "bin" / "python", VENV / ".installed"
    pins = [ROOT / "pyproject.toml", *(ROOT / lock for lock in
                                       (".ci/constraints.txt", *(entry[2] for entry in PEER_VENVS)))]
    if stamp.exists() and python.exists() and all(p.stat().st_mtime <= stamp.stat().st_mtime for p in pins):
        return
    stamp.unlink(missing_ok=True)
    base = base_interpreter()
    if not python.exists():
        subprocess.run([base, "-m", "venv", str(VENV)], check=True)
    version = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    installs = [(python, ROOT / ".ci" / "constraints.txt", version, None, "-e", f"{ROOT}[classroom]", "-c")]
    copies = [(ROOT / ".venv", VENV)]
    for _, folder, lock, ours in PEER_VENVS:
        peer = VENV / folder / "bin" / "python"
        if not peer.exists():
            subprocess.run([base, "-m", "venv", str(VENV / folder)], check=True)
        installs.append((peer, ROOT / lock, version, _site(ROOT / ours), "-r"))
        copies.append((ROOT / ours, VENV / folder))
    if all(_same_python(ours, version) for ours, _ in copies):
        for ours, theirs in copies:  # the set-up's own packages, pinned alike: nothing fetched again
            copy_venv(ours, theirs)
    else:
        with ThreadPoolExecutor(len(installs)) as pool:  # three independent interpreters: side by side
            for done in [pool.submit(_pip, *install) for install in installs]:
                done.result()  # the first that failed raises here, after all have ended
    for folder in [VENV, *(VENV / entry[1] for entry in PEER_VENVS)]:
        os.chmod(folder, 0o755)
    stamp.touch()


def student_environment() -> dict[str, str]:
    """What the students' servers are given: the interpreters they may run."""
    return {variable: str(VENV / folder) for variable, folder, _, _ in PEER_VENVS}


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
    from course_lib.chapters import peers_lab

    script = peers_lab.CLASSROOM_DIR / "node_modules" / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
    if not script.exists():
        raise ClassroomError("JupyterHub's proxy is not installed: python -m course_lib.chapters.peers_lab install "
                             "(the set-up of make lab runs it)", reason="not_installed")
    return [peers_lab.node(), str(script)]


# -- the students' accounts and copies --------------------------------------------------------------

def ensure_user(name: str) -> Path:
    """The student's system user (made if missing, marked by its comment), home mode 700."""
    import pwd

    try:
        home = Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment", GECOS, name],
                       check=True, capture_output=True)
        home = Path(pwd.getpwnam(name).pw_dir)
    os.chmod(home, 0o700)
    return home


def prepare_copy(name: str) -> Path:
    """Write the student copy into ``~/course`` (files the student has are kept), owned by them."""
    import pwd

    from course_lib.tooling.student_copy import generate

    home = ensure_user(name)
    entry = pwd.getpwnam(name)
    copy = home / COPY
    generate(copy)
    for path in [copy, *copy.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    return copy


def remove_user(name: str) -> None:
    """Remove a user the classroom made (its comment says so) with its home; others are refused."""
    import pwd

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return
    if entry.pw_gecos != GECOS:
        raise ClassroomError(f"{name!r} was not made by the classroom: not removed", reason="not_ours")
    import psutil

    # a hub that was killed leaves its students' servers running: they go first
    mine = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == entry.pw_uid]
    for process in mine:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(mine, timeout=10)
    subprocess.run(["userdel", "--remove", name], check=True, capture_output=True)


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
from course_lib.tooling import classroom

classroom.configure(c, json.load(open({settings!r})))
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


def _options(argv: list[str], known: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    values, rest, args = dict(known), [], iter(argv)
    for arg in args:
        key = arg[2:].replace("-", "_") if arg.startswith("--") else None
        if key in known:
            values[key] = next(args, "")
        elif arg.startswith("--"):
            raise ClassroomError(f"unknown option {arg}", reason="usage")
        else:
            rest.append(arg)
    return rest, values


USAGE = ("usage: python -m course_lib.tooling.classroom serve ROSTER [--port 8000] [--idle-minutes 60] "
         "[--instructor instructor] [--state DIR] | progress ROSTER | install | remove-users ROSTER [NAME ...]")


def main(argv: list[str]) -> int:
    try:
        command, rest = (argv[0], argv[1:]) if argv else ("", [])
        if command == "install":
            install()
            return 0
        if command == "progress" and len(rest) == 1:
            print(class_progress(read_roster(rest[0])).text())
            return 0
        if command == "remove-users" and rest:
            require_platform()
            for name in [*read_roster(rest[0]), *rest[1:]]:
                remove_user(name)
            return 0
        if command == "serve":
            rest, opts = _options(rest, {"port": "8000", "idle_minutes": "60", "instructor": "instructor",
                                         "state": str(STATE), "hub_port": "0", "api_port": "0"})
            if len(rest) != 1:
                raise ClassroomError(USAGE, reason="usage")
            argv, state = prepare(Path(rest[0]), Path(opts["state"]), int(opts["port"]), opts["instructor"],
                                  float(opts["idle_minutes"]), int(opts["hub_port"]), int(opts["api_port"]))
            secret = passwords(state)
            print(f"The class signs in at http://127.0.0.1:{opts['port']}/hub/login (loopback only: put a TLS "
                  f"proxy in front of it to reach other machines)\n"
                  f"  students: their roster name and the workshop password {secret['user_password']}\n"
                  f"  {opts['instructor']} (admin): the admin password in {state / 'passwords.json'}\n"
                  f"  the class's progress: http://127.0.0.1:{opts['port']}/hub/progress "
                  f"(or make classroom-progress)\nCtrl-C stops the hub and every student's server.", flush=True)
            return supervise(argv, state, [*read_roster(rest[0]), opts["instructor"]])
        raise ClassroomError(USAGE, reason="usage")
    except ClassroomError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
