"""A test's layer is the directory its file sits in (course_lib/tooling/layers.py), the in-process
layer holds to its name (a test in it that starts a process fails, naming what it started), and a
test file outside the layer directories fails, saying where to move it.

Each check runs pytest itself in a child process, with the course's plugin.
"""
import os
import subprocess
import sys

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.layers import LAYERS

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


def test_each_test_gets_exactly_one_layer_its_directorys(tmp_path):
    (tmp_path / "layer_report.py").write_text(REPORT)
    run = pytest_run("--collect-only", "-q", "-n", "0", "-p", "layer_report", "tests/inprocess/test_docs.py",
                     "tests/stdio/test_walker.py", "tests/inprocess/test_walker_unit.py",
                     "tests/world/test_lab_start.py", str(NOTEBOOKS / "00_orientation.ipynb"), path=[tmp_path])
    assert run.returncode == 0, run.stdout[-2000:]
    found = {}
    for line in run.stdout.splitlines():
        if line.startswith("LAYER "):
            _, names, nodeid = line.split(" ", 2)
            assert names in LAYERS, line  # one layer, not none and not two
            found.setdefault(nodeid.partition("::")[0], set()).add(names)
    assert found == {"tests/inprocess/test_docs.py": {"inprocess"}, "tests/inprocess/test_walker_unit.py": {"inprocess"},
                     "tests/stdio/test_walker.py": {"stdio"}, "tests/world/test_lab_start.py": {"world"},
                     "notebooks/00_orientation.ipynb": {"notebook"}}


SAMPLE = ("import subprocess, sys\n\n"
          "def test_pure():\n    assert sum([1, 2]) == 3\n\n"
          "def test_starts_a_child():\n    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n")


def sample_run(tmp_path, relative, *args):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / relative).write_text(SAMPLE)
    return pytest_run("-p", "course_lib.tooling.pytest_plugin", "-c", str(tmp_path / "pytest.ini"),
                      "--rootdir", str(tmp_path), "-q", "-rfE", *args, relative, cwd=tmp_path)


def test_an_inprocess_test_that_starts_a_process_fails(tmp_path):
    run = sample_run(tmp_path, "tests/inprocess/test_sample.py")
    assert run.returncode == 1, run.stdout[-2000:]
    assert "1 failed, 1 passed" in run.stdout
    assert "FAILED tests/inprocess/test_sample.py::test_starts_a_child" in run.stdout
    assert "an inprocess test started a process (subprocess.Popen)" in run.stdout


def test_a_test_file_outside_the_layer_directories_fails_saying_where_to_move_it(tmp_path):
    run = sample_run(tmp_path, "tests/test_x.py", "-m", "inprocess")  # make check's selection shows it
    assert run.returncode == 1, run.stdout[-2000:]
    assert "2 errors" in run.stdout and "passed" not in run.stdout
    assert ("tests/test_x.py sits outside a layer directory: move it to tests/inprocess|stdio|world"
            in run.stdout)
