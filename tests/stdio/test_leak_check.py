"""The leak check itself: a pytest run that leaves a course server process alive must fail,
grandchildren in a new session included (whether a test started them or a server that the
strict line client started), and a run that cleans up must pass.

Each case runs a tiny pytest in a subprocess with only the course plugin loaded and a fresh
run tag; the processes it leaks are recorded by pid and stopped here by pid.
"""
import os
import subprocess
import sys
import textwrap

import psutil

from course_lib.labs import pid_alive
from course_lib.paths import ROOT

INNER = textwrap.dedent('''
    import os, subprocess, sys

    SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


    def record(pid):
        with open(os.environ["LEAK_PIDS"], "a") as f:
            f.write(f"{pid}\\n")


    def tagged():
        # What connect() puts in every server's environment (the run tag is inherited).
        return dict(os.environ, COURSE_LAB_SERVER="1")


    def test_child():
        child = subprocess.Popen(SLEEPER, env=tagged(), start_new_session=True)
        record(child.pid)
        if os.environ["LEAK"] == "no":
            child.kill()
            child.wait()


    def test_grandchild_in_a_new_session():
        # The intermediate starts a grandchild with setsid and exits: only the grandchild is left.
        code = ("import subprocess, sys; p = subprocess.Popen(%r, start_new_session=True, "
                "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)" % (SLEEPER,))
        out = subprocess.run([sys.executable, "-c", code], env=tagged(), capture_output=True, text=True,
                             check=True)
        grandchild = int(out.stdout)
        record(grandchild)
        if os.environ["LEAK"] == "no":
            os.kill(grandchild, 9)


    def test_helper_of_a_line_client_server():
        # A course server started by the strict line client leaves a helper in a new session;
        # only the stop's sweep ends it, so without the sweep it outlives the test.
        import anyio
        import psutil
        from course_lib._runtime import proctree
        from course_lib.line_client import LineClient

        async def no_sweep(*args, **kwargs):
            return []

        if os.environ["LEAK"] == "yes":
            proctree.sweep = no_sweep

        async def lab():
            async with LineClient.for_server("hostile", "grandchild") as wire:
                (helper,) = psutil.Process(wire.pid).children()
                record(helper.pid)

        anyio.run(lab)
''')


def run_inner(tmp_path, leak: str) -> tuple[subprocess.CompletedProcess, list[int]]:
    inner = tmp_path / "tests" / "stdio" / "test_inner.py"  # a layer's directory: the layer check passes it
    inner.parent.mkdir(parents=True)
    inner.write_text(INNER, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    pids_file = tmp_path / f"pids-{leak}.txt"
    env = {k: v for k, v in os.environ.items()
           if k not in ("COURSE_LAB_RUN", "PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    env.update(PYTHONPATH=str(ROOT), LEAK=leak, LEAK_PIDS=str(pids_file))
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-p", "course_lib.tooling.pytest_plugin", "-p", "no:hypothesispytest", "-c", str(tmp_path / "pytest.ini"),
                               str(inner)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    finally:
        pids = [int(x) for x in pids_file.read_text().split()] if pids_file.exists() else []
    return done, pids


def stop(pids: list[int]) -> None:
    """SIGKILL each pid and wait until it has exited (the timeout only bounds a failure)."""
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
            procs[-1].kill()
        except psutil.NoSuchProcess:
            pass  # already gone
    psutil.wait_procs(procs, timeout=60)  # reaps our own children, waits for the others


def test_a_leaking_run_fails_and_names_every_survivor(tmp_path):
    pids: list[int] = []
    try:
        done, pids = run_inner(tmp_path, "yes")
        assert len(pids) == 3
        assert all(pid_alive(pid) for pid in pids)  # the inner run really did leak them
        assert done.returncode == 1, done.stdout + done.stderr
        assert "3 passed" in done.stdout  # the tests themselves passed: the leak check failed the run
        assert "LEAK CHECK FAILED" in done.stdout
        for pid in pids:
            assert f"pid {pid}:" in done.stdout
    finally:
        stop(pids)
    assert not any(pid_alive(pid) for pid in pids)


def test_a_clean_run_passes(tmp_path):
    pids: list[int] = []
    try:
        done, pids = run_inner(tmp_path, "no")
        assert len(pids) == 3
        assert done.returncode == 0, done.stdout + done.stderr
        assert "LEAK CHECK FAILED" not in done.stdout
    finally:
        stop(pids)
