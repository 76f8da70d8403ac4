"""The one way a lab starts a server: ``async with connect(...) as lab``.

``connect`` launches a real stdio subprocess, puts a tap on its pipes (every JSON-RPC line
in both directions is recorded, in order), captures its stderr to a per-lab file, speaks the
chosen protocol era through the SDK's ``Client``, enforces a per-request and a whole-lab time
budget, and guarantees that the process (and its process group) is gone when the block ends.
"""
from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Sequence

import anyio
from mcp import Client

from course_lib.errors import LabTimeout, LaunchError, ServerCrashed
from course_lib.lab_failures import EraRefused, describe_exit, translate  # noqa: F401
from course_lib.lab_state import MAX_FRAME_BYTES, Lab
from course_lib.lab_tap import EXIT_DRAIN, tap  # noqa: F401
from course_lib.protocol import ERAS
from course_lib._runtime.process import (EXIT_GRACE, STDERR_LOG, TERM_GRACE, ServerProcess,  # noqa: F401
                                         course_server_argv, pid_alive, started_server, wait_ready)
from course_lib.wire import Frame, Wire  # noqa: F401

NOISE_POLICIES = ("keep", "fail")


@asynccontextmanager
async def connect(server: str | Sequence[str], *, mode: str | None = None, era: str = "legacy",
                  fixture: str | os.PathLike | None = None, args: Sequence[str] = (),
                  env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
                  request_timeout: float = 10.0, lab_timeout: float = 60.0, startup_timeout: float = 30.0,
                  noise: str = "keep", max_frame_bytes: int = MAX_FRAME_BYTES,
                  **client_options: Any) -> AsyncIterator[Lab]:
    """Start ``server`` on a real stdio subprocess and connect in ``era``.

    ``server`` is a course server name (``"catalog"``) or a full argv list for any other
    server (a student's script, a Node server). ``mode``/``fixture``/``args`` select a
    course server's behaviour. ``era`` is ``"legacy"`` (2025-11-25 initialize handshake),
    ``"2026-07-28"`` (stateless, per-request envelope) or ``"auto"``. Extra keyword
    arguments go to ``mcp.Client`` (``cache=``, ``elicitation_callback=`` ...).

    Budgets: the server's first answer may take up to ``startup_timeout`` (a cold start imports
    the SDK); every later request gets ``request_timeout``; the whole block ``lab_timeout``.

    Hostile servers: ``noise`` is what a non-JSON line on the server's stdout does (``"keep"``
    records it in ``lab.noise`` and skips it, ``"fail"`` ends the lab with ``ProtocolViolation``);
    a line that starts like a frame but is not valid JSON-RPC, or one longer than
    ``max_frame_bytes``, always ends the lab with ``ProtocolViolation``. The server's exit ends
    the lab even if a child still holds its stdout open, and whatever the server leaves behind
    (children in its group or in new sessions) is killed when the block ends (``lab.swept``).
    """
    if era not in ERAS:
        raise ValueError(f"era must be one of {ERAS}, got {era!r}")
    if noise not in NOISE_POLICIES:
        raise ValueError(f"noise must be one of {NOISE_POLICIES}, got {noise!r}")
    if isinstance(server, str):
        from course_lib import servers

        if server not in servers.names():
            raise LaunchError(f"no course server named {server!r}; known: {', '.join(servers.names())}")
        argv = course_server_argv(server, mode, fixture, args)
    else:
        argv = [str(a) for a in server] + list(args)
        if not argv:
            raise ValueError("server argv is empty")
    lab = Lab(argv, era, None)
    lab.noise_policy, lab.max_frame_bytes = noise, max_frame_bytes

    def stopped(process: ServerProcess) -> None:  # before the lab directory goes
        lab.swept = list(process.swept)
        lab.returncode, lab.forced_stop = process.returncode, process.forced
        lab._keep_files()

    def crashed(process: ServerProcess) -> ServerCrashed:
        lab.returncode = process.returncode
        return ServerCrashed(f"before it was ready: {describe_exit(lab)}", returncode=process.returncode)

    def not_ready(timeout: float) -> LabTimeout:
        return LabTimeout(f"the server was not ready within the {timeout:g} s start-up budget", budget="startup")

    try:
        with anyio.fail_after(lab_timeout):
            async with started_server(argv, fast=isinstance(server, str), env=env, cwd=cwd,
                                      on_stopped=stopped) as process:
                lab.workdir = process.workdir
                lab.pid = process.pid
                lab.launch_path = process.launch_path
                try:
                    if isinstance(server, str):
                        await wait_ready(process, startup_timeout, on_exit=crashed, on_timeout=not_ready)
                    client = Client(tap(lab, process), mode=era, read_timeout_seconds=startup_timeout,
                                    **client_options)
                    async with client:
                        lab.client = client
                        lab.protocol_version = client.protocol_version
                        lab._arm_request_budget(request_timeout)
                        yield lab
                except BaseException:
                    await process.stop()  # what the server did is known before it is explained
                    lab.returncode, lab.forced_stop = process.returncode, process.forced
                    raise
    except BaseException as exc:
        translated = translate(exc, lab, request_timeout, lab_timeout)
        if translated is exc:
            raise
        raise translated from None
