"""A real SDK 1.29.0 peer, from the second pinned environment ``.venv-sdk129``.

The source articles were written for ``mcp==1.29.0``; where a chapter compares that version with
2.3.0 it runs a real 1.29.0 server or client rather than quoting one. The set-up (``make``) builds
``.venv-sdk129`` from ``.ci/constraints-sdk129.txt``; the 1.29.0 programs are the two scripts in
``course_lib/sdk129_peers/`` and run only in that interpreter.

* ``server_argv("atlas")`` -- the command line of the atlas documents served by 1.29.0; start it
  with ``connect(server_argv("atlas"))`` (a 2.3.0 client against a 1.29.0 server).
* ``await client(server, ops)`` -- a 1.29.0 ``ClientSession`` against ``server`` (a course server
  name, or an argv), performing ``ops`` in one session; returns one result dict per op, then a
  ``{"op": "session", "noise": [...]}`` entry (see ``sdk129_peers/client.py``).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Sequence

import anyio

from course_lib.errors import CourseError, LabTimeout
from course_lib.paths import PACKAGE, ROOT

# A class on JupyterHub (make classroom) names the copy its students may run.
VENV = Path(os.environ.get("COURSE_SDK129_VENV") or ROOT / ".venv-sdk129")
PEERS = PACKAGE / "sdk129_peers"
SERVERS = {"atlas": PEERS / "atlas.py", "noisy": PEERS / "noisy.py"}
VERSION = "1.29.0"


class PeerMissing(CourseError):
    """The 1.29.0 environment is not installed (``make`` builds it; see the README)."""

    reason = "peer_missing"


def _interpreter() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def python() -> Path:
    """The 1.29.0 interpreter; ``PeerMissing`` when the set-up has not built it."""
    if not available():
        raise PeerMissing(f"no SDK {VERSION} environment at {VENV.name}/: run `make lab` or "
                          "`make test` once (they build it from .ci/constraints-sdk129.txt)")
    return _interpreter()


def available() -> bool:
    return _interpreter().exists()


def server_argv(name: str) -> list[str]:
    """The command line of a 1.29.0 server (``atlas``)."""
    if name not in SERVERS:
        raise ValueError(f"no SDK {VERSION} server named {name!r}; known: {', '.join(SERVERS)}")
    return [str(python()), str(SERVERS[name])]


async def client(server: str | Sequence[str], ops: list[dict], *, mode: str | None = None,
                 fixture: str | os.PathLike | None = None, args: Sequence[str] = (),
                 timeout: float = 60.0) -> list[dict]:
    """Run ``ops`` in one real 1.29.0 client session against ``server`` over stdio.

    The 1.29.0 client is started like any lab's process (``_runtime.process.started_server``: its
    own process group, stderr into the lab directory) and stopped the same way, so the server it
    started goes with it (the sweep finds it by the lab directory in its environment).
    """
    from course_lib._runtime.process import STDERR_LOG, course_server_argv, server_env, started_server

    exe = python()
    if isinstance(server, str):
        command = course_server_argv(server, mode, fixture, args)
    else:
        command = [str(a) for a in server] + list(args)
    out = bytearray()
    async with started_server([str(exe), str(PEERS / "client.py")], prefix="sdk129-",
                              name=f"SDK {VERSION} client") as process:
        workdir = process.workdir
        job = {"command": command, "env": server_env(workdir), "cwd": str(workdir),
               "errlog": str(workdir / "server-stderr.log"), "ops": ops}
        try:
            with anyio.fail_after(timeout):
                await process.stdin.send(json.dumps(job).encode())
                await process.stdin.aclose()
                async for chunk in process.stdout:
                    out.extend(chunk)
                await process.wait_exit(timeout)
        except TimeoutError:
            raise LabTimeout(f"the SDK {VERSION} client did not finish within {timeout:g} s") from None
        finally:
            await process.stop()
        if process.returncode != 0:
            err = (workdir / STDERR_LOG).read_text(errors="replace")
            lines = [line.strip(" |+-") for line in err.splitlines()]
            causes = [l for l in lines if "Error" in l or "Exception" in l] or lines[-1:] or ["(no stderr)"]
            raise CourseError(f"the SDK {VERSION} client exited with {process.returncode}: {causes[-1][:300]}")
        return json.loads(out)


def install() -> None:
    """Build ``.venv-sdk129`` with exactly the pins of ``.ci/constraints-sdk129.txt`` (idempotent)."""
    import subprocess

    from course_lib.tooling.pinned_install import uv_install

    constraints = ROOT / ".ci" / "constraints-sdk129.txt"
    # Without PYTHONPATH: a path to the course would show the installer the course's own metadata
    # (which requires mcp 2.3.0) as installed here, and its resolver would report a false conflict.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not available():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, env=env)
    uv_install(python(), "-r", str(constraints), env=env)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python -m course_lib.sdk129 install")
    install()
