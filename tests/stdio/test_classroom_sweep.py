"""The checks of tests/world/test_classroom.py's subject that start only course processes."""
import subprocess
import sys
import time
from course_lib.tooling import classroom_hub


def test_the_sweep_after_the_hub_stops_the_proxy_it_left_and_nothing_else(tmp_path):
    """A hub stopped while starting leaves its proxy (started in a session of its own): the
    command's sweep stops the process of the proxy's pid file, and a process that is not a proxy
    is left alone even when the pid file names it."""
    proxy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "configurable-http-proxy"],
                             start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        (tmp_path / "proxy.pid").write_text(str(other.pid))
        assert classroom_hub.sweep(tmp_path, []) == [] and other.poll() is None
        (tmp_path / "proxy.pid").write_text(str(proxy.pid))
        stopped = classroom_hub.sweep(tmp_path, ["no-such-user-here"])
        assert proxy.wait(timeout=15) is not None and stopped and str(proxy.pid) in stopped[0]
        assert not (tmp_path / "proxy.pid").exists()
    finally:
        for process in (proxy, other):
            process.kill()
            process.wait()
