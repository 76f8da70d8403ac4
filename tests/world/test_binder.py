"""The one-click routes: Binder (binder/) and a devcontainer for Codespaces (.devcontainer/).

What runs here: the files agree with each other and with the set-up (``make lab``'s three install
steps are Binder's, the README and environment.yml's header say so), and, with ``make
binder-check``, ``binder/postBuild`` itself on a clean clone of the repository against the
course's pinned packages (it reaches the package registries, as a set-up does, so ``make test``
leaves it out). What cannot run here: Binder's and Codespaces' own builds (their images and
servers are theirs); the files follow their documented layouts.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time

import pytest

from course_lib.paths import NOTEBOOKS, ROOT


# -- binder/postBuild on a clean clone (make binder-check) --------------------------------------

BUDGET = 900  # seconds for the whole script on a warm package cache


@pytest.mark.skipif(os.environ.get("COURSE_SETUP_CHECK") != "1",
                    reason="reaches the package registries as a set-up does: make binder-check runs it")
def test_postbuild_sets_up_a_clean_clone(tmp_path):
    """Binder's environment is the pinned packages without course_lib: a fresh virtual
    environment that sees this .venv's packages through a path file (a directory named in a .pth
    file is only added to the path, so this .venv's own course_lib is not seen)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    shutil.move(tmp_path / "env.pth", os.path.join(purelib, "course_pins.pth"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "COURSE_"))}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    started = time.monotonic()
    run = subprocess.run(["bash", "binder/postBuild"], cwd=clone, env=env, capture_output=True, text=True,
                         timeout=BUDGET)
    seconds = time.monotonic() - started
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    print(f"binder/postBuild on a clean clone of {head.stdout.strip()[:12]}: {seconds:.0f} s")

    def in_clone(code: str) -> str:
        out = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert in_clone("import course_lib; print(course_lib.__file__)").startswith(str(clone))
    # each install step left what the chapters check for
    in_clone("from course_lib.chapters import peers_lab, servers_env; peers_lab.check(); servers_env.check()")
    assert in_clone("from course_lib import sdk129; import subprocess; print(subprocess.run("
                    "[str(sdk129.python()), '-c', 'import importlib.metadata as m; print(m.version(\"mcp\"))'],"
                    " capture_output=True, text=True).stdout)") == "1.29.0"
    chapters = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.name for p in (clone / "student").glob("[0-9][0-9]_*.ipynb")) == chapters
    assert (clone / "student" / ".progress.json").is_file()
    assert "fetchNews" in (env_dir / "share" / "jupyter" / "lab" / "settings" / "overrides.json").read_text()
    # what the set-up wrote is ignored by git: the clone stays clean
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True)
    assert status.stdout == ""
    # and this checkout's own environment still has its course_lib
    assert subprocess.run([sys.executable, "-c", "import course_lib, sys; sys.exit(course_lib.__file__ != %r)"
                           % str(ROOT / "course_lib" / "__init__.py")], cwd=tmp_path).returncode == 0
