"""Starting and stopping a server process, without the SDK.

What every way of talking to a server shares: the explicit environment a server gets, the
command line of a course server, ``spawn`` (the fork server for course servers when allowed,
else a fresh interpreter), ``launch`` (how every lab starts its server: ``spawn`` with the lab
directory's environment and stderr log), ``ServerProcess`` (pipes, pid, exit status, and the one stop
every client shares: the server, its process group, then a sweep of what escaped the group),
``run_as_process`` (how a server leaves, however it was started) and ``pid_alive``.
Nothing here imports the MCP SDK, so a process that only replays recorded lines (the envelope
controls) starts in a fraction of the time.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator, Callable, Sequence

import anyio
import anyio.abc
import psutil

from course_lib._runtime import fastlaunch, interrupts, proctree
from course_lib._runtime.portable import pid_alive  # noqa: F401  (labs imports it from here)
from course_lib.errors import LaunchError
from course_lib.paths import ROOT

# Time the server gets to exit by itself after its stdin closes, then after SIGTERM.
EXIT_GRACE = 2.0
TERM_GRACE = 1.0
_POLL = 0.005

# The file in a lab directory that receives the server's stderr.
STDERR_LOG = "stderr.log"

# Environment variables a server inherits from the kernel; everything else is explicit.
_INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "COURSE_LAB_RUN")


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is still in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False  # nothing in the group, not even a zombie (or nothing this user may signal)
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid and pid_alive(pid):
                return True
        except OSError:
            continue
    return False


class ServerProcess:
    """A started server process: pipes, pid, exit status, and the stop every client shares.

    ``proc`` is an anyio process (``launch_path`` "cold": a fresh interpreter) or a
    ``fastlaunch.Forked`` ("fast": forked by the fork server)."""

    workdir: Path | None = None  # the lab directory, set by ``launch``: what ``stop`` sweeps
    started: float | None = None  # ``time.time()`` just before ``launch`` started it
    swept: tuple[int, ...] = ()  # leftover processes of the lab that ``stop``'s sweep had to kill
    forced: str | None = None  # the signal ``stop`` had to send because the server did not exit by itself
    _stopped = False

    def __init__(self, proc: anyio.abc.Process | fastlaunch.Forked):
        self._proc = proc
        self.launch_path = getattr(proc, "launch_path", "cold")
        self.pid = proc.pid
        self.stdin = proc.stdin
        self.stdout = proc.stdout

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait_exit(self, timeout: float) -> bool:
        # Poll the return code: process.wait() would also wait for pipe EOF, which a
        # grandchild holding the pipe can postpone forever.
        with anyio.move_on_after(timeout):
            while self.returncode is None:
                await anyio.sleep(_POLL)
        return self.returncode is not None

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def stop(self) -> tuple[int, ...]:
        """Close stdin, wait, then SIGTERM and SIGKILL the process group; always reap. Then kill
        the rest of the group and sweep the lab directory's processes that left it (``swept``).

        Every client that starts a server through ``launch`` ends it here; a second call does nothing.
        """
        with anyio.CancelScope(shield=True):
            if self._stopped:
                return self.swept
            self._stopped = True
            try:
                await self.stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            if not await self.wait_exit(EXIT_GRACE):
                self.forced = "SIGTERM"
                self.signal_group(signal.SIGTERM)
                if not await self.wait_exit(TERM_GRACE):
                    self.forced = "SIGKILL"
                    self.signal_group(signal.SIGKILL)
                    await self.wait_exit(TERM_GRACE)
            # Whatever the server left in its group (children it forgot) goes with it, before
            # the sweep looks: the sweep reports only what the group kill could not reach.
            self.signal_group(signal.SIGKILL)
            with anyio.move_on_after(TERM_GRACE):
                while _group_alive(self.pid):
                    await anyio.sleep(_POLL)
            try:
                await self.stdout.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            self._release()
            if self.workdir is not None:
                self.swept = tuple(await proctree.sweep(self.pid, self.workdir, spare=frozenset({self.pid}),
                                                        since=self.started))
            return self.swept

    def _release(self) -> None:
        if isinstance(self._proc, fastlaunch.Forked):
            self._proc.release()
            return
        transport = getattr(getattr(self._proc, "_process", None), "_transport", None)
        if transport is not None:
            transport.close()


async def read_rest(stream, seconds: float) -> bytes:
    """What a server that exited left in its stdout ``stream``, read for at most ``seconds``."""
    tail = b""
    with anyio.move_on_after(seconds):
        try:
            while True:
                tail += await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, OSError):
            pass
    return tail


def _shared_env() -> dict[str, str]:
    """What every lab's environment shares: the fork server's own."""
    base = server_env(Path(tempfile.gettempdir()))
    del base["COURSE_LAB_DIR"]
    return base


def fork_address() -> str | None:
    """Where a process below this one (chapter 07's wire tap) asks this process's fork server for
    a course server (``fastlaunch.request``); None when servers start cold."""
    return fastlaunch.address(_shared_env())


async def spawn(argv: Sequence[str], env: dict[str, str], cwd: Path, stderr, *, fast: bool = False) -> ServerProcess:
    """Start ``argv``; ``fast`` (course servers, and always a grading harness) tries the fork server first."""
    if fast or is_harness(argv):
        forked = await fastlaunch.spawn(argv, env, cwd, stderr, _shared_env())
        if forked is not None:
            return ServerProcess(forked)
    try:
        proc = await anyio.open_process(list(argv), stdin=-1, stdout=-1, stderr=stderr,
                                        env=env, cwd=str(cwd), start_new_session=True)
    except OSError as exc:
        raise LaunchError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    return ServerProcess(proc)


async def launch(argv: Sequence[str], workdir: Path, *, fast: bool = False, env: dict[str, str] | None = None,
                 cwd: str | os.PathLike | None = None) -> ServerProcess:
    """Start a lab's server: the explicit environment of ``workdir`` (plus ``env``), its stderr into
    ``workdir/stderr.log``, in ``cwd`` (the course root by default), in a process group of its own.
    ``fast`` (a course server's argv only) lets the fork server start it. Its ``stop`` also sweeps
    ``workdir``'s processes."""
    started = time.time()
    with open(workdir / STDERR_LOG, "wb") as errlog:
        process = await spawn(argv, server_env(workdir, env), Path(cwd or ROOT), errlog, fast=fast)
    process.workdir, process.started = workdir, started
    interrupts.note_process(process.pid)  # an interrupt's line checks that it is gone
    return process


@asynccontextmanager
async def started_server(argv: Sequence[str], *, prefix: str = "course-lab-", fast: bool = False,
                         env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
                         workdir: Path | None = None, name: str | None = None,
                         on_stopped: Callable[[ServerProcess], None] | None = None) -> AsyncIterator[ServerProcess]:
    """The one lifecycle of a server process: a lab directory, ``launch``, yield, ``stop``, cleanup.

    The lab directory is made here (``prefix``) unless ``workdir`` is given, and removed at the end
    unless it was given. ``on_stopped(process)`` runs after the stop and before the directory goes,
    so a caller can keep the stderr log. However the block ends (an error, a cancel, an interrupt),
    the process, its group and whatever escaped it are gone when this returns. An interrupt names
    the lab by ``name`` (by default the command line, see ``lab_name``)."""
    own_dir = workdir is None
    with interrupts.running("lab", name or lab_name(argv)):
        folder = Path(tempfile.mkdtemp(prefix=prefix)) if own_dir else Path(workdir)
        process: ServerProcess | None = None
        try:
            process = await launch(argv, folder, fast=fast, env=env, cwd=cwd)
            yield process
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    if process is not None:
                        await process.stop()
                        if on_stopped is not None:
                            on_stopped(process)
                finally:
                    if own_dir:
                        shutil.rmtree(folder, ignore_errors=True)


def lab_name(argv: Sequence[str]) -> str:
    """How a student recognises a lab: a course server by its name and options, any other
    process by its command line (the interpreter's path shortened to its name)."""
    argv = [str(a) for a in argv]
    words = argv[3:] if argv[1:3] == ["-m", "course_lib.servers"] else [Path(argv[0]).name, *argv[1:]]
    text = " ".join(words)
    return text if len(text) <= 60 else text[:59] + "…"


async def wait_ready(process: ServerProcess, timeout: float, *, on_exit: Callable[[ServerProcess], BaseException],
                     on_timeout: Callable[[float], BaseException]) -> None:
    """Wait until a course server says it is about to serve (its lab directory's ``ready`` file).

    Keeps start-up cost out of the first request's budget. A server that exits first raises
    ``on_exit(process)``; one not ready within ``timeout`` raises ``on_timeout(timeout)``."""
    ready = Path(process.workdir) / "ready"
    with anyio.move_on_after(timeout):
        while not ready.exists():
            if process.returncode is not None:
                raise on_exit(process)
            await anyio.sleep(_POLL)
        return
    raise on_timeout(timeout)


def is_harness(argv: Sequence[str]) -> bool:
    """``python [-O] -m course_lib.grading.…`` on this interpreter: a grading harness or checker
    running a student's code, which a fork server starts like a course server (a student's own
    command, or any other interpreter option, starts cold)."""
    argv = [str(a) for a in argv]
    if fastlaunch.optimized(argv):
        argv = argv[:1] + argv[2:]
    if len(argv) < 3 or argv[1] != "-m" or not argv[2].startswith("course_lib.grading."):
        return False
    return this_interpreter(argv[0])


def this_interpreter(command: str) -> bool:
    """Whether ``command`` (a path, or a name on ``PATH``) is the interpreter running this process:
    the same program in the same environment (virtual environments share their base's program,
    so the ``pyvenv.cfg`` that marks one tells them apart)."""
    found = shutil.which(command) or command
    return os.path.realpath(found) == os.path.realpath(sys.executable) and _environment(found) == _environment(sys.executable)


def _environment(program: str) -> Path | None:
    """The virtual environment ``program`` (as written, links not followed) runs in, if any."""
    folder = Path(os.path.abspath(program)).parent
    return next((f.resolve() for f in (folder, folder.parent) if (f / "pyvenv.cfg").is_file()), None)


def course_server_argv(name: str, mode: str | None = None, fixture: str | os.PathLike | None = None,
                       args: Sequence[str] = ()) -> list[str]:
    """The command line of a course server (``python -m course_lib.servers NAME ...``)."""
    argv = [sys.executable, "-m", "course_lib.servers", name]
    if mode is not None:
        argv += ["--mode", mode]
    if fixture is not None:
        argv += ["--fixture", str(fixture)]
    return argv + list(args)


def server_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An explicit, minimal environment: nothing leaks in from the kernel by accident."""
    env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COURSE_LAB_DIR"] = str(workdir)
    env["COURSE_LAB_SERVER"] = "1"  # lets the test suite's leak check find any survivor
    env.update(extra or {})
    return env

