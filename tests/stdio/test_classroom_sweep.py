"""The checks of tests/world/test_classroom.py's subject that start only course processes.

make classroom: a class on JupyterHub, each student their own system user, copy and processes.

In-process: the roster, the class's progress table (hand-written progress files and the table
expected of them in fixtures/classroom/), the hub's settings, and the refusal on a machine that
cannot serve a class. Then one real hub (loopback only) and a real headless Chromium: two students
sign in at once, each runs chapter 01 with its check in their own JupyterLab; neither can reach
the other's server or read the other's copy; the instructor's page and the command show both rows;
stopping the hub leaves no process behind; the test users are removed afterwards.
"""
import subprocess
import sys
import time
from course_lib.tooling import classroom


def test_the_sweep_after_the_hub_stops_the_proxy_it_left_and_nothing_else(tmp_path):
    """A hub stopped while starting leaves its proxy (started in a session of its own): the
    command's sweep stops the process of the proxy's pid file, and a process that is not a proxy
    is left alone even when the pid file names it."""
    proxy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "configurable-http-proxy"],
                             start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        (tmp_path / "proxy.pid").write_text(str(other.pid))
        assert classroom.sweep(tmp_path, []) == [] and other.poll() is None
        (tmp_path / "proxy.pid").write_text(str(proxy.pid))
        stopped = classroom.sweep(tmp_path, ["no-such-user-here"])
        assert proxy.wait(timeout=15) is not None and stopped and str(proxy.pid) in stopped[0]
        assert not (tmp_path / "proxy.pid").exists()
    finally:
        for process in (proxy, other):
            process.kill()
            process.wait()
