"""The real MCP servers of the chapter on the software people run: pinned, started safely, audited.

Each server is one row of ``SERVERS``: where it comes from (PyPI, in ``.venv-servers``; npm, in
``fixtures/peers``), its pinned version and its command line. ``prepared(name)`` makes what a
server needs (a throwaway git repository, a folder, a memory file) in a temporary folder and
yields the command line, environment and working directory; the folder goes when the block ends.

Nothing reaches the network: FastMCP's update check is off, every server gets a proxy that points
at a closed port on this machine (so a request that slipped through would fail here, at once),
the fetch server's own ``--proxy-url`` is that port too, and its fetch tool is never called. The
audit calls no tool with valid input, so no tool with side effects runs.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from course_lib.chapters import peers_env
from course_lib.chapters.servers_env import SERVERS_ENV
from course_lib.paths import PACKAGE

FASTMCP_SERVER = PACKAGE / "chapters" / "real_peers" / "fastmcp_server.py"
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
NO_NETWORK = {"HTTP_PROXY": DEAD_PROXY, "HTTPS_PROXY": DEAD_PROXY, "ALL_PROXY": DEAD_PROXY,
              "http_proxy": DEAD_PROXY, "https_proxy": DEAD_PROXY, "all_proxy": DEAD_PROXY,
              "NO_PROXY": "", "no_proxy": "", "npm_config_offline": "true"}
FASTMCP_QUIET = {"FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false"}
PAGE_SIZE = 2  # the paginating FastMCP server's list_page_size


@dataclass(frozen=True)
class RealServer:
    """One pinned real server: its short name, its package and registry, how it starts."""
    name: str
    package: str
    registry: str   # "pypi" (in .venv-servers) or "npm" (in fixtures/peers)
    note: str       # what the chapter gives it to work on

    @property
    def version(self) -> str:
        if self.registry == "pypi":
            return SERVERS_ENV.pins()[self.package]
        return peers_env.pins()[self.package]

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


SERVERS = (
    RealServer("time", "mcp-server-time", "pypi", "--local-timezone UTC"),
    RealServer("git", "mcp-server-git", "pypi", "a throwaway repository"),
    RealServer("fetch", "mcp-server-fetch", "pypi", "listed only: never called"),
    RealServer("fastmcp", "fastmcp", "pypi", "no list_page_size"),
    RealServer("fastmcp-paged", "fastmcp", "pypi", f"list_page_size={PAGE_SIZE}"),
    RealServer("filesystem", "@modelcontextprotocol/server-filesystem", "npm", "a temporary folder"),
    RealServer("memory", "@modelcontextprotocol/server-memory", "npm", "a temporary memory file"),
    RealServer("everything", peers_env.EVERYTHING, "npm", "stdio"),
)
BY_NAME = {s.name: s for s in SERVERS}


@dataclass(frozen=True)
class Launch:
    """What an audit (or a client) is given: the command line, the extra environment, the folder."""
    argv: list[str]
    env: dict[str, str]
    cwd: str


def _npm_script(package: str) -> str:
    return str(peers_env.MODULES / package / "dist" / "index.js")


def _git_repository(folder: Path) -> Path:
    """A small repository made for the lab: one file, one commit, no remote, no user config read."""
    repo = folder / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("A repository made for the lab.\n")
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_AUTHOR_NAME="course",
               GIT_AUTHOR_EMAIL="course@example.invalid", GIT_COMMITTER_NAME="course",
               GIT_COMMITTER_EMAIL="course@example.invalid")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=30)
    return repo


def _argv(server: RealServer, folder: Path) -> tuple[list[str], dict[str, str]]:
    python = str(SERVERS_ENV.python())
    if server.name == "time":
        return [python, "-m", "mcp_server_time", "--local-timezone", "UTC"], {}
    if server.name == "git":
        return [python, "-m", "mcp_server_git", "--repository", str(_git_repository(folder))], {}
    if server.name == "fetch":
        return [python, "-m", "mcp_server_fetch", "--proxy-url", DEAD_PROXY], {}
    if server.name == "fastmcp":
        return [python, str(FASTMCP_SERVER)], FASTMCP_QUIET
    if server.name == "fastmcp-paged":
        return [python, str(FASTMCP_SERVER), "--page-size", str(PAGE_SIZE)], FASTMCP_QUIET
    if server.name == "filesystem":
        root = folder / "files"
        root.mkdir()
        (root / "hello.txt").write_text("hello\n")
        return [peers_env.node(), _npm_script(server.package), str(root)], {}
    if server.name == "memory":
        return [peers_env.node(), _npm_script(server.package)], {"MEMORY_FILE_PATH": str(folder / "memory.jsonl")}
    return peers_env.everything_argv(), {}


@contextmanager
def prepared(name: str) -> Iterator[Launch]:
    """The server ``name`` ready to start: its command line, environment and working directory,
    in a temporary folder that is removed when the block ends."""
    if name not in BY_NAME:
        raise ValueError(f"no real server named {name!r}; known: {', '.join(BY_NAME)}")
    with tempfile.TemporaryDirectory(prefix=f"course-real-{name}-") as tmp:
        folder = Path(tmp)
        argv, extra = _argv(BY_NAME[name], folder)
        home = folder / "home"  # no user configuration or cache of the machine is read or written
        home.mkdir()
        env = {**NO_NETWORK, "HOME": str(home), **extra}
        if BY_NAME[name].registry == "npm":
            env["PATH"] = f"{peers_env.node_home() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        yield Launch(argv, env, str(folder))


def versions() -> list[tuple[str, str, str, str]]:
    """(server, package, version, what it is given) for every real server, checked against its pin."""
    from course_lib.chapters import servers_env

    found = servers_env.check()
    found.update({name: version for name, version in peers_env.check().items()})
    rows = []
    for server in SERVERS:
        if found.get(server.package) != server.version:
            raise servers_env.ServersMissing(f"{server.package} is {found.get(server.package)}, "
                                             f"the course pins {server.version}")
        rows.append((server.name, server.package, server.version, server.note))
    return rows
