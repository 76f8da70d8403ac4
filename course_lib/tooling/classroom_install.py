"""The students' interpreter: ``.venv-classroom``, built by ``python -m course_lib.tooling.classroom install``
(``make classroom-install``).

The student servers of :mod:`course_lib.tooling.classroom` run as the students, so their interpreter
comes from a Python every user may run (:func:`base_interpreter`): the course's own ``.venv`` may come
from a folder only its owner can read. It holds the course's pins and JupyterHub's single-user server,
and copies of the course's other interpreters (``PEER_VENVS``): the set-up's own packages copied when
that Python is the set-up's version (:func:`copy_venv`), else installed by uv from the same pins.
One install at a time (:func:`take_lock`); nothing is done again while the pins are unchanged.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling.classroom_accounts import ClassroomError, require_platform
from course_lib.tooling.pinned_install import uv_install

VENV = ROOT / ".venv-classroom"


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
    (as the copy installed in ``site``, by default this interpreter's, declares) is left to the resolver,
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


def _install_pins(python: Path, constraints: Path, version: str, site: Path | None, *args: str) -> None:
    text, relaxed = constraints_for(constraints, version, site)
    for line in relaxed:
        print(f"classroom: {line}", flush=True)
    local = python.parent.parent / f"constraints-{constraints.stem}.txt"
    local.write_text(text)
    uv_install(python, *args, str(local))


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
        if data.startswith(b"#!"):  # the interpreter line, and the long-path form of it (an sh trampoline)
            data = data.replace(str(ours).encode() + b"/bin/python", str(theirs).encode() + b"/bin/python")
        target.unlink(missing_ok=True)
        target.write_bytes(data)
        os.chmod(target, command.stat().st_mode & 0o777)


def install(wait: float | None = None) -> None:
    """Build ``.venv-classroom`` from an interpreter every student may run: the course's pins and
    JupyterHub's single-user server, and copies of the SDK 1.29.0 and chapter 07 interpreters in
    it (``PEER_VENVS``): the set-up's own packages copied when that interpreter has the set-up's
    Python version (:func:`copy_venv`), else installed by uv from the same pins; idempotent, and
    nothing is done again while the pins are unchanged. One install at a time: a second caller (the
    classroom's test while ``make classroom-install`` runs) waits for the first (at most ``wait``
    seconds, when given), then finds it done."""
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


def current(stamp: Path, pins: list[Path]) -> bool:
    """Whether the install that wrote ``stamp`` serves this course folder (the stamp names it: a folder
    moved or copied leaves the students' kernels importing the old one) and is newer than ``pins``."""
    return (stamp.exists() and stamp.read_text(encoding="utf-8") == str(ROOT)
            and all(p.stat().st_mtime <= stamp.stat().st_mtime for p in pins))


def _install() -> None:
    python, stamp = VENV / "bin" / "python", VENV / ".installed"
    pins = [ROOT / "pyproject.toml", *(ROOT / lock for lock in
                                       (".ci/constraints.txt", *(entry[2] for entry in PEER_VENVS)))]
    if python.exists() and current(stamp, pins):
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
            for done in [pool.submit(_install_pins, *install) for install in installs]:
                done.result()  # the first that failed raises here, after all have ended
    for folder in [VENV, *(VENV / entry[1] for entry in PEER_VENVS)]:
        os.chmod(folder, 0o755)
    stamp.write_text(str(ROOT), encoding="utf-8")


def student_environment() -> dict[str, str]:
    """What the students' servers are given: the interpreters they may run."""
    return {variable: str(VENV / folder) for variable, folder, _, _ in PEER_VENVS}

