"""In-process: the checks of tests/stdio/test_setup.py's subject that start no process. The set-up
installs through its pinned uv, into the interpreter it names, and compiles every module it
installs (the Makefile exports PYTHONDONTWRITEBYTECODE: a module left uncompiled would be compiled
again by every process that imports it)."""
import re
import tomllib
from pathlib import Path

import pytest

from course_lib.paths import PACKAGE, ROOT
from course_lib.tooling import pinned_install


def _makefile() -> tuple[str, str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return makefile, makefile.split("\n$(STAMP): ", 1)[1].split("\n\n", 1)[0]


def test_pip_brings_in_only_the_pinned_uv_and_uv_installs_the_course():
    makefile, recipe = _makefile()
    pip = [line.strip() for line in recipe.splitlines() if "-m pip install" in line]
    assert pip == ["$(BIN)/python -m pip install $(PIP_QUIET) -c .ci/constraints.txt uv"]
    assert "$(BIN)/python $(UV_INSTALL) -c .ci/constraints.txt -e '.[test,classroom]'" in recipe
    (flags,) = re.findall(r"^UV_INSTALL := -m uv pip install (.*)$", makefile, re.M)
    assert flags.split() == [*pinned_install.UV_FLAGS, "--python", "$(BIN)/python"]
    assert "--compile-bytecode" in pinned_install.UV_FLAGS
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if d.startswith("uv")]
    assert re.fullmatch(r"uv==\d+\.\d+\.\d+", pin)
    assert pin in (ROOT / ".ci" / "constraints.txt").read_text().splitlines()


def test_the_installer_names_the_interpreter_it_installs_into():
    argv = pinned_install.uv_argv(Path("/x/.venv-sdk129/bin/python"), "-r", "lock.txt")
    assert argv[1:5] == ["-m", "uv", "pip", "install"]
    assert argv[argv.index("--python") + 1] == "/x/.venv-sdk129/bin/python"
    assert argv[-2:] == ["-r", "lock.txt"]


def test_no_module_installs_with_pip():
    spawns = [f"{path.relative_to(ROOT)}" for path in PACKAGE.rglob("*.py")
              if re.search(r'"-m",\s*"pip"', path.read_text(encoding="utf-8"))]
    assert spawns == []


@pytest.mark.parametrize("folder", [".venv", ".venv-sdk129", ".venv-servers"])
def test_every_module_the_set_up_installed_is_compiled(folder):
    sites = sorted((ROOT / folder).glob("lib/python3*/site-packages"))
    if not sites:
        pytest.skip(f"no {folder}/: the set-up has not built it")
    missing = [path for site in sites for path in site.rglob("*.py")
               if not any(path.parent.glob(f"__pycache__/{path.stem}.*.pyc"))]
    assert missing == [], f"{len(missing)} modules not compiled in {folder}/, e.g. {missing[:3]}"
