"""The interpreter of the real Python MCP servers: ``.venv-servers``, every package pinned.

The PyPI servers people run (``mcp-server-time``, ``mcp-server-git``, ``mcp-server-fetch``) and
FastMCP bring some eighty packages of their own, so they live in an interpreter of their own, built
by the set-up from ``.ci/constraints-servers.txt`` (a full ``pip freeze``), the way ``.venv-sdk129``
is built for the 1.29.0 peer. Nothing in ``.venv`` changes.

    python -m course_lib.chapters.servers_env install   # build it (set-up only; idempotent)
    python -m course_lib.chapters.servers_env check     # the pinned versions, or how to install them
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from course_lib.errors import CourseError
from course_lib.paths import ROOT
from course_lib.tooling.pinned_install import uv_install


class ServersMissing(CourseError):
    """The servers' interpreter is not built, or not at its pins: the message says how to fix it."""

    reason = "servers_missing"


@dataclass(frozen=True)
class PinnedEnv:
    """A virtual environment in the course folder, built from one fully pinned constraints file."""
    folder: str
    constraints: str
    command: str  # the set-up command that builds it

    @property
    def venv(self) -> Path:
        # A class on JupyterHub (make classroom) names the copy its students may run.
        return Path(os.environ.get("COURSE_SERVERS_VENV") or ROOT / self.folder)

    def interpreter(self) -> Path:
        return self.venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def available(self) -> bool:
        return self.interpreter().exists()

    def python(self) -> Path:
        if not self.available():
            raise ServersMissing(f"no {self.folder}/ interpreter: run `make lab` or `make test` once, "
                                 f"or by hand: .venv/bin/python -m {self.command} install")
        return self.interpreter()

    def pins(self) -> dict[str, str]:
        lines = (ROOT / self.constraints).read_text().splitlines()
        pairs = (line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))
        return {name.strip().lower(): version.strip() for name, version in pairs}

    def install(self) -> None:
        """Create the venv if needed and install exactly the pinned set (idempotent)."""
        if not self.available():
            subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        uv_install(self.interpreter(), "-r", str(ROOT / self.constraints))


SERVERS_ENV = PinnedEnv(".venv-servers", ".ci/constraints-servers.txt", "course_lib.chapters.servers_env")
# The packages the chapter names, in the order it shows them.
PACKAGES = ("mcp-server-time", "mcp-server-git", "mcp-server-fetch", "fastmcp", "mcp")


def check() -> dict[str, str]:
    """The running version of every package the chapter names, checked against its pin."""
    out = subprocess.run([str(SERVERS_ENV.python()), "-c", "import sys, importlib.metadata as m; "
                          "print(' '.join(m.version(p) for p in sys.argv[1:]))", *PACKAGES],
                         capture_output=True, text=True, timeout=60)
    found = dict(zip(PACKAGES, out.stdout.split()))
    for package in PACKAGES:
        pin = SERVERS_ENV.pins()[package]
        if found.get(package) != pin:
            state = f"is {found[package]}" if package in found else "is not installed"
            raise ServersMissing(f"{package} {state} in {SERVERS_ENV.folder}/, the course pins {pin}: "
                                 f".venv/bin/python -m {SERVERS_ENV.command} install")
    return found


def set_up_main(argv: list[str], install, check, missing: type[Exception], command: str) -> int:
    """``python -m COMMAND install|check`` of a chapter's pinned set-up: ``install`` first when
    asked, then every package's running version; exit 1 with the reason when one is missing."""
    action = argv[0] if argv else "check"
    if action not in ("install", "check"):
        print(f"usage: python -m {command} install|check", file=sys.stderr)
        return 2
    try:
        if action == "install":
            install()
        for name, version in check().items():
            print(f"{name} {version}")
    except missing as err:
        print(err, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    return set_up_main(argv, SERVERS_ENV.install, check, ServersMissing, SERVERS_ENV.command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
