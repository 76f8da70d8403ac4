"""In-process: the checks of tests/world/test_classroom.py's subject that start no process."""
import json
import os
import sys
from pathlib import Path
import pytest

from course_lib.paths import FIXTURES
from course_lib.tooling import classroom, classroom_hub, classroom_install

HERE = FIXTURES / "classroom"


def test_a_roster_is_one_name_a_line_and_a_bad_one_is_refused_by_line():
    assert classroom.read_roster(HERE / "roster.txt") == ["ana", "ben", "cleo", "dev"]
    for text, says in [("ana\nAna\n", "line 2: 'Ana'"), ("ana\n\nana\n", "line 3: 'ana' is listed twice"),
                       ("# nobody\n", "names no student"), ("root\n", "line 1: 'root'"),
                       ("a b\n", "line 1: 'a b'"), ("../x\n", "line 1: '../x'")]:
        with pytest.raises(classroom.ClassroomError, match=says) as caught:
            classroom.parse_roster(text)
        assert caught.value.reason == "bad_roster"
    with pytest.raises(classroom.ClassroomError, match="no roster at"):
        classroom.read_roster(HERE / "missing.txt")


def test_the_class_progress_table_has_a_row_per_student_and_a_column_per_exercise():
    students = classroom.read_roster(HERE / "roster.txt")
    table = classroom.class_progress(students, copy_of=lambda name: HERE / "progress" / name)
    expected = (HERE / "expected_progress.txt").read_text()
    text = table.text()
    assert text.startswith(expected.rstrip("\n") + "\n")
    # a damaged progress file is named under the table, and its student still has a row
    assert "cleo:" in text.split(expected.rstrip("\n"), 1)[1] and "is not a progress file" in text
    assert "<td" in table._repr_html_() and "ana" in table._repr_html_()


def test_the_hub_listens_on_loopback_only_and_students_servers_stop_when_idle(tmp_path, monkeypatch):
    monkeypatch.setattr(classroom_hub, "singleuser", lambda: Path("/x/jupyterhub-singleuser"))
    monkeypatch.setattr(classroom_hub, "proxy_command", lambda: ["node", "chp"])
    config = type("Config", (), {})()

    class Section:
        pass

    for name in ("JupyterHub", "ConfigurableHTTPProxy", "SharedPasswordAuthenticator", "Authenticator", "Spawner"):
        setattr(config, name, Section())
    (tmp_path / "roster.txt").write_text("ana\nben\n")
    settings = classroom_hub.settings(tmp_path / "roster.txt", tmp_path, 8123, "teach", idle_minutes=0.5)
    monkeypatch.setattr(classroom_hub, "progress_handler", lambda students: ("handler", tuple(students)))
    classroom_hub.configure(config, settings)
    assert config.JupyterHub.ip == config.JupyterHub.hub_ip == config.Spawner.ip == "127.0.0.1"
    assert config.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:8124"
    assert config.Authenticator.allowed_users == {"ana", "ben"} and config.Authenticator.admin_users == {"teach"}
    assert "--ServerApp.shutdown_no_activity_timeout=30" in config.Spawner.args
    assert "--MappingKernelManager.cull_idle_timeout=30" in config.Spawner.args
    assert config.JupyterHub.cleanup_servers is True and config.Spawner.notebook_dir == "~/course"
    # a restart finds the class as it was: accounts and sign-ins in STATE, the copies in the homes
    assert config.JupyterHub.db_url == f"sqlite:///{tmp_path / 'jupyterhub.sqlite'}"
    assert config.JupyterHub.cookie_secret_file == str(tmp_path / "cookie_secret")
    assert config.Spawner.environment == {"COURSE_SDK129_VENV": str(classroom_install.VENV / "sdk129"),
                                          "COURSE_SERVERS_VENV": str(classroom_install.VENV / "servers")}
    assert config.JupyterHub.extra_handlers == [(r"/progress", ("handler", ("ana", "ben")))]
    kept = json.loads((tmp_path / "passwords.json").read_text())
    assert len(kept["admin_password"]) >= 32 and len(kept["user_password"]) >= 8
    assert (tmp_path / "passwords.json").stat().st_mode & 0o077 == 0, "only the hub's user may read them"


def test_a_machine_that_cannot_serve_a_class_is_told_so_before_anything_happens(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(classroom.ClassroomUnsupported, match="make lab on their laptop") as caught:
        classroom.require_platform()
    assert caught.value.reason == "classroom_unsupported"
    assert classroom.main(["serve", str(HERE / "roster.txt")]) == 2


def test_a_second_install_waits_for_the_first_at_most_its_budget(tmp_path):
    path = tmp_path / "install.lock"
    with open(path, "w") as first, open(path, "w") as second:
        classroom_install.take_lock(first, None)
        with pytest.raises(classroom.ClassroomError, match="still runs after 0.3 s") as raised:
            classroom_install.take_lock(second, 0.3)
        assert raised.value.reason == "install_busy"
    with open(path, "w") as third:  # the first's lock went with its file
        classroom_install.take_lock(third, 0.3)


def test_the_students_venv_is_the_set_ups_packages_with_its_commands_pointing_at_their_python(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    (ours / "lib" / "python3.11" / "site-packages" / "pkg").mkdir(parents=True)
    (ours / "lib" / "python3.11" / "site-packages" / "pkg" / "__init__.py").write_text("X = 1\n")
    (ours / "share" / "jupyter").mkdir(parents=True)
    (ours / "share" / "jupyter" / "ext.json").write_text("{}")
    (ours / "bin").mkdir()
    (ours / "bin" / "tool").write_text(f"#!{ours}/bin/python\nimport pkg\n")
    (ours / "bin" / "tool").chmod(0o755)
    (ours / "bin" / "long").write_text(f"#!/bin/sh\n'''exec' {ours}/bin/python \"$0\" \"$@\"\n' '''\n")
    (ours / "bin" / "python").symlink_to("/usr/bin/python3")
    (ours / "pyvenv.cfg").write_text("home = /x\nversion = 3.11.7\n")
    (theirs / "bin").mkdir(parents=True)
    (theirs / "bin" / "python").symlink_to("/usr/bin/python3")
    (theirs / "lib" / "python3.11" / "site-packages" / "stale").mkdir(parents=True)

    assert classroom_install._same_python(ours, "3.11.2") and not classroom_install._same_python(ours, "3.12.1")
    assert not classroom_install._same_python(ours, "3.1.11")
    classroom_install.copy_venv(ours, theirs)
    site = theirs / "lib" / "python3.11" / "site-packages"
    assert (site / "pkg" / "__init__.py").read_text() == "X = 1\n" and not (site / "stale").exists()
    assert (theirs / "share" / "jupyter" / "ext.json").exists()
    assert (theirs / "bin" / "tool").read_text() == f"#!{theirs}/bin/python\nimport pkg\n"
    assert (theirs / "bin" / "tool").stat().st_mode & 0o777 == 0o755
    assert f"'''exec' {theirs}/bin/python" in (theirs / "bin" / "long").read_text()
    assert os.readlink(theirs / "bin" / "python") == "/usr/bin/python3"
    classroom_install.copy_venv(ours, theirs)  # again, over its own copy
    assert (site / "pkg" / "__init__.py").read_text() == "X = 1\n"


def test_an_install_serves_the_course_folder_its_stamp_names(tmp_path):
    """A classroom install made for another folder (the course moved or copied) is not current: its
    students would import that folder's course_lib; nor is one older than a pin."""
    import os

    pin, stamp = tmp_path / "constraints.txt", tmp_path / ".installed"
    pin.write_text("mcp==2.3.0\n")
    assert not classroom_install.current(stamp, [pin])  # none yet
    stamp.write_text(str(classroom_install.ROOT))
    os.utime(pin, (1, 1))
    assert classroom_install.current(stamp, [pin])
    stamp.write_text("/somewhere/else/mcp-robustness-course")
    assert not classroom_install.current(stamp, [pin])
    stamp.write_text(str(classroom_install.ROOT))
    os.utime(pin, (stamp.stat().st_mtime + 10,) * 2)
    assert not classroom_install.current(stamp, [pin])  # a pin changed since
