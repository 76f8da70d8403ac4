"""The layer markers are given centrally (course_lib/tooling/layers.py), and the in-process
layer holds to its name: a test in it that starts a process fails, naming what it started.

Each check runs pytest itself in a child process, with the course's plugin.
"""
import os
import subprocess
import sys

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.layers import INPROCESS, LAYERS

OUTER_ONLY = ("PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS", "COURSE_LAB_RUN",
              "COURSE_FORKSERVER")


def pytest_run(*args, cwd=ROOT, path=()):
    env = {k: v for k, v in os.environ.items() if k not in OUTER_ONLY}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *map(str, path)])
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


REPORT = """
def pytest_collection_finish(session):
    for item in session.items:
        print("LAYER", ",".join(sorted(m.name for m in item.iter_markers() if m.name in LAYERS)), item.nodeid)
from course_lib.tooling.layers import LAYERS
"""


def test_each_test_gets_exactly_one_layer(tmp_path):
    (tmp_path / "layer_report.py").write_text(REPORT)
    run = pytest_run("--collect-only", "-q", "-n", "0", "-p", "layer_report", "tests/test_docs.py",
                     "tests/test_walker.py", "tests/test_walker_rules_unit.py",
                     str(NOTEBOOKS / "00_orientation.ipynb"), path=[tmp_path])
    assert run.returncode == 0, run.stdout[-2000:]
    found = {}
    for line in run.stdout.splitlines():
        if line.startswith("LAYER "):
            _, names, nodeid = line.split(" ", 2)
            assert names in LAYERS, line  # one layer, not none and not two
            path, _, test = nodeid.partition("::")
            if path == "tests/test_walker.py":  # by name: its in-process tests are listed
                path += " (listed)" if test.split("[")[0] in INPROCESS[path] else " (others)"
            found.setdefault(path, set()).add(names)
    assert found == {"tests/test_docs.py": {"inprocess"}, "tests/test_walker_rules_unit.py": {"inprocess"},
                     "tests/test_walker.py (listed)": {"inprocess"}, "tests/test_walker.py (others)": {"stdio"},
                     "notebooks/00_orientation.ipynb": {"notebook"}}


def test_an_inprocess_test_that_starts_a_process_fails(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample_unit.py").write_text(
        "import subprocess, sys\n\n"
        "def test_pure():\n    assert sum([1, 2]) == 3\n\n"
        "def test_starts_a_child():\n    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n")
    run = pytest_run("-p", "course_lib.tooling.pytest_plugin", "-c", str(tmp_path / "pytest.ini"),
                     "--rootdir", str(tmp_path), "-q", "-rf", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-2000:]
    assert "1 failed, 1 passed" in run.stdout
    assert "FAILED test_sample_unit.py::test_starts_a_child" in run.stdout
    assert "an inprocess test started a process (subprocess.Popen)" in run.stdout
