"""In-process: the checks of tests/world/test_instructor_view.py's subject that start no process."""
import hashlib

from course_lib.paths import NOTEBOOKS
from course_lib.tooling import lab

CHAPTER = "01_pagination.ipynb"


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_instructor_view_serves_a_scratch_copy_with_its_own_workspace_and_no_autosave(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_INSTRUCTOR_HOME", str(tmp_path / "scratch"))
    argv = lab.lab_argv(NOTEBOOKS, ["--no-browser"])
    copy = tmp_path / "scratch" / "notebooks"
    assert f"--ServerApp.root_dir={copy}" in argv and not any(a == f"--ServerApp.root_dir={NOTEBOOKS}" for a in argv)
    assert f"--LabApp.workspaces_dir={tmp_path / 'scratch' / 'workspaces'}" in argv
    assert digest(copy / CHAPTER) == digest(NOTEBOOKS / CHAPTER)
    settings = [a.split("=", 1)[1] for a in argv if a.startswith("--LabApp.app_settings_dir=")]
    assert settings == [str(tmp_path / "scratch" / "app-settings")]
    assert '"autosave": false' in (tmp_path / "scratch" / "app-settings" / "overrides.json").read_text()
    (copy / CHAPTER).write_text("scribbled")  # the next start copies the chapters afresh
    lab.lab_argv(NOTEBOOKS, [])
    assert digest(copy / CHAPTER) == digest(NOTEBOOKS / CHAPTER)
    # the student lab keeps serving its own folder in place, with the course's settings
    student = tmp_path / "student"
    student.mkdir()
    argv = lab.lab_argv(student, [])
    assert f"--ServerApp.root_dir={student}" in argv and f"--LabApp.app_settings_dir={lab.SETTINGS}" in argv
