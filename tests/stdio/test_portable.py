"""The course runs as on a Mac: no Linux-only mechanism in the package.

A scan of ``course_lib``'s source refuses every Linux-only mechanism; two chapters that launch,
walk and sweep servers pass strict nbval unchanged with the temporary directory behind a symlink,
as macOS's is. The lab sweep is built on psutil everywhere: each of its recognition rules finds a helper that left the
server's process group and session with ``setsid``, and a helper with no link to the lab is
(as its docstring admits) not found.
"""
import contextlib
import os
import signal
import subprocess
import sys

import anyio
import nbformat
import pytest

from course_lib._runtime import proctree
from course_lib.labs import pid_alive
from course_lib.paths import NOTEBOOKS, ROOT

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
# Started in a new session, prints the pid of a sleeper it starts with a clean environment.
PARENT = [sys.executable, "-c", "import subprocess, sys; p = subprocess.Popen(%r, env={}, "
          "stdout=subprocess.DEVNULL); print(p.pid, flush=True); sys.stdin.read()" % (SLEEPER,)]
CHAPTERS = ("00_orientation.ipynb", "11_hostile_servers.ipynb")
# What an outer pytest run passes down that the nested run must choose for itself.
OUTER_ONLY = ("PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS", "COURSE_LAB_RUN",
              "COURSE_FORKSERVER")


def test_pid_alive_answers_for_a_live_and_a_reaped_process():
    with subprocess.Popen(SLEEPER) as child:
        assert pid_alive(child.pid) and pid_alive(os.getpid())
        child.kill()
    assert not pid_alive(child.pid) and not pid_alive(None)


@pytest.mark.skipif(not hasattr(os, "waitid"), reason="waiting without reaping needs os.waitid (macOS: Python 3.13)")
def test_pid_alive_counts_a_zombie_as_gone():
    with subprocess.Popen(SLEEPER) as child:
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: a zombie
        assert not pid_alive(child.pid)


def test_the_sweep_finds_helpers_that_left_the_session(tmp_path):
    """Each rule alone finds a helper in a session of its own; a helper with no link is not found.

    The lab's directory is reached through a symlink, as macOS's temporary directory is.
    """
    (tmp_path / "real").mkdir()
    lab = tmp_path / "lab"
    lab.symlink_to(tmp_path / "real")
    with contextlib.ExitStack() as stack:
        def start(argv, **options):  # stopped (killed, then reaped) when the test ends
            proc = stack.enter_context(subprocess.Popen(argv, start_new_session=True, **options))
            stack.callback(proc.kill)
            return proc

        log = stack.enter_context(open(lab / "server.log", "w"))
        # The lab's directory in its environment; its child has neither that nor a lab file.
        marked = start(PARENT, env={"COURSE_LAB_DIR": str(lab)}, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
        holder = start(SLEEPER, env={}, stderr=log)
        unlinked = start(SLEEPER, env={})
        descendant = int(marked.stdout.readline())
        stack.callback(lambda: pid_alive(descendant) and os.kill(descendant, signal.SIGKILL))
        assert os.getsid(marked.pid) == marked.pid != os.getsid(0)
        found = proctree.lab_processes(None, lab)
        assert found == {marked.pid, holder.pid, descendant}
        killed = anyio.run(proctree.sweep, None, lab)
        assert sorted(killed) == sorted(found)
        assert not any(pid_alive(pid) for pid in killed)
        assert pid_alive(unlinked.pid)  # what the sweep's docstring says it cannot find


def test_the_sweep_finds_the_servers_group_and_session(tmp_path):
    with subprocess.Popen(PARENT, env={}, start_new_session=True, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as server:
        child = int(server.stdout.readline())
        try:
            assert os.getsid(child) == os.getpgid(child) == server.pid
            assert proctree.lab_processes(None, tmp_path) == set()  # no other rule links them to the lab
            assert proctree.lab_processes(server.pid, tmp_path) == {server.pid, child}
        finally:
            killed = anyio.run(proctree.sweep, server.pid, tmp_path)
    assert sorted(killed) == sorted([server.pid, child])
    assert not pid_alive(child) and not pid_alive(server.pid)


def test_chapters_pass_with_the_temporary_directory_behind_a_symlink(tmp_path):
    """macOS's temporary directory is a symlink (/var -> /private/var): lab directories, their
    stderr logs and the sweep's open-file rule must all agree through it.

    This is the run's strict nbval of these chapters: when this test is in a run, tests/conftest.py
    leaves their cells out of it (the same cells, against the same stored outputs, run here)."""
    (tmp_path / "private-tmp").mkdir()
    (tmp_path / "tmp").symlink_to(tmp_path / "private-tmp")
    env = {k: v for k, v in os.environ.items() if k not in OUTER_ONLY}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path / "tmp"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                          "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                          *(str(NOTEBOOKS / name) for name in CHAPTERS)],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:]
    cells = sum(c.cell_type == "code" for name in CHAPTERS for c in nbformat.read(NOTEBOOKS / name, as_version=4).cells)
    summary = run.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"{cells} passed in "), summary  # every code cell ran and matched
